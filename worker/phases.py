"""Where a cell's seconds go: ``phases.json`` (`campaign.contract.cellfiles.Phases`), written by the worker
just before result.json.

The phases never overlap; each second of the worker, from its process start to the
write of phases.json, is in exactly one of them:

- ``start``: process start to the worker's ``main``: the interpreter and the worker's own
  imports (pytest, pydantic, campaign). Read by the worker from ``/proc/self/stat``
  (`campaign.worker.facts.process_age_s`, 10 ms ticks); the parent's fork and exec come
  before it. Not measured (None) where /proc is absent.
- ``imports``: torch and triton (and flag_gems for a FlagGems workload), imported before
  the preflight checks that need them.
- ``preflight``: reading the task, and the named checks.
- ``compile``: Triton's own compile time of every compile outside autotune benchmarking, in
  both sessions (the ``times`` ``knobs.compilation.listener`` is handed; cache hits included),
  and the wall time of compiling every config for the IR evidence under first-config
  (`campaign.plugins.warmup.compile_every`, parallel like the warm-up).
- ``tuning``: wall time inside ``Autotuner._bench`` (Triton's tuner and every subclass that
  does not replace it: FlagGems' LibTuner), in both sessions, the compiles of the configs it
  benchmarks included, and inside their parallel warm-up (`campaign.plugins.warmup.warm`,
  whose threads' compile times overlap, so only its wall time is counted).
- ``timing``: the rest of the benchmark session: collection, input construction, the
  timer's warmup and repetitions, the launches (on the compile-only backend, the calls that
  compile and count launches).
- ``correctness``: the rest of the correctness session; zero where it is not run.
- ``write-out``: the end of each session (rows.json, autotune.json, the IR index and any
  SASS disassembly, pytest's summary) and reading the plugins' files back into result.json.

Several workloads in one process (`campaign.worker.batch`): process start and the imports
are paid once, by the process's first workload, which records them as above. Each later
workload records ``start`` as 0 and ``imports`` as what it still had to import (flag_gems
for the first FlagGems workload after builtin ones), both labelled so: the costs are not
split, so a batch's per-workload sums add up to what its process spent.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

import pytest

from campaign.contract.artifacts import PHASES_FILE
from campaign.contract.canonical import write_json_new
from campaign.contract.cellfiles import PHASE_NAMES, Phase, Phases
from campaign.worker.facts import process_age_s

LABELS = {
    "start": "process start (/proc/self/stat) to the worker's main: interpreter and the worker's own imports",
    "imports": "importing torch, triton (and flag_gems for a FlagGems workload)",
    "preflight": "reading the task; the preflight checks",
    "compile": "Triton's own compile times outside autotune benchmarking, both sessions; first-config's every-config compile",
    "tuning": "inside Autotuner._bench (config benchmarking, its compiles included), both sessions",
    "timing": "rest of the benchmark session: collection, inputs, timer warmup and repetitions, launches",
    "correctness": "rest of the correctness session (zero where not run)",
    "write-out": "sessions' end (rows, autotune, IR index, SASS) and result.json's reading of them",
}
NO_PROC = "not measured: no /proc/self/stat"
LATER_IN_PROCESS = {
    "start": "0: the process started once for its batch; its first workload carries the start",
    "imports": "what this workload still imported: modules an earlier workload of its process imported are loaded",
}


@dataclass(eq=False)           # a pytest plugin: hashed by identity
class Session:
    """Compile, tuning and session-end seconds inside one pytest session; its own pytest plugin."""

    clock: Callable[[], float]
    compile_s: float = 0.0
    tuning_s: float = 0.0
    finish_s: float = 0.0
    depth: int = 0                  # > 0 inside Autotuner._bench: compiles there are tuning

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session):
        start = self.clock()
        try:
            return (yield)
        finally:
            self.finish_s += self.clock() - start


@contextmanager
def watching(session: Session) -> Iterator[Session]:
    """Install the compile listener and the ``_bench`` wrapper around one pytest session.

    Installed before the session, so the plugins that chain onto the listener (ir_capture)
    or wrap ``_bench`` (autotune) at configure wrap these, and restore them at unconfigure
    before they are removed here."""
    from triton import knobs
    from triton.runtime.autotuner import Autotuner

    from campaign.plugins import warmup

    previous = knobs.compilation.listener
    original_bench = Autotuner.__dict__["_bench"]
    original_warm = warmup.warm
    original_every = warmup.compile_every

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        if session.depth == 0:
            session.compile_s += times.total / 1e6
        if previous is not None:
            previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times, cache_hit=cache_hit)

    def counted_as(field: str, original):
        # depth > 0 inside: the listener leaves the compiles there to this wall time
        def timed(*args, **kwargs):
            session.depth += 1
            start = session.clock()
            try:
                return original(*args, **kwargs)
            finally:
                session.depth -= 1
                if session.depth == 0:
                    setattr(session, field, getattr(session, field) + session.clock() - start)
        return timed

    knobs.compilation.listener = listener
    Autotuner._bench = counted_as("tuning_s", original_bench)
    warmup.warm = counted_as("tuning_s", original_warm)
    warmup.compile_every = counted_as("compile_s", original_every)
    try:
        yield session
    finally:
        warmup.compile_every = original_every
        warmup.warm = original_warm
        Autotuner._bench = original_bench
        knobs.compilation.listener = previous


class Recorder:
    """The running phase and the seconds of every phase so far, on one monotonic clock."""

    def __init__(self, started: float, clock: Callable[[], float] = time.monotonic,
                 process_age: Callable[[], Optional[float]] = process_age_s, first_in_process: bool = True):
        """``started``: the clock at the worker's main (a later workload of a batch: at its own start);
        ``process_age``: seconds since process start."""
        self.clock = clock
        now = clock()
        self.seconds: dict[str, Optional[float]] = {name: 0.0 for name in PHASE_NAMES}
        self.labels = dict(LABELS) if first_in_process else {**LABELS, **LATER_IN_PROCESS}
        if first_in_process:
            age = process_age()
            self.seconds["start"] = None if age is None else max(0.0, age - (now - started))
        self.running, self.mark = "preflight", started

    def begin(self, name: str) -> None:
        """Close the running phase and start ``name``."""
        now = self.clock()
        self.seconds[self.running] += now - self.mark
        self.running, self.mark = name, now

    @contextmanager
    def session(self, name: str) -> Iterator[Session]:
        """One pytest session under ``name``: its compiles, tuning and end go to their own phases."""
        watch = Session(self.clock)
        self.begin(name)
        try:
            with watching(watch):
                yield watch
        finally:
            now = self.clock()
            apart = watch.compile_s + watch.tuning_s + watch.finish_s
            # Triton times compiles on its own clock: never let the rest go below zero
            self.seconds[name] += max(0.0, now - self.mark - apart)
            self.seconds["compile"] += watch.compile_s
            self.seconds["tuning"] += watch.tuning_s
            self.seconds["write-out"] += watch.finish_s
            self.running, self.mark = "write-out", now

    def record(self, task_id: str) -> Phases:
        self.begin(self.running)
        return Phases(task_id=task_id, phases=tuple(
            Phase(name=name, seconds=None if self.seconds[name] is None else round(self.seconds[name], 3),
                  label=NO_PROC if self.seconds[name] is None else self.labels[name]) for name in PHASE_NAMES))

    def write(self, cell_dir: Path, task_id: str) -> None:
        write_json_new(Path(cell_dir) / PHASES_FILE, self.record(task_id).model_dump(mode="json"))
