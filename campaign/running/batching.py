"""Which workloads share a worker process, and what its progress file says: pure functions.

A batch is a run of tasks of one round and one cell (one side of the comparison: the
A and B sides never share a process), at most `bound` of them, executed by one worker in
sequence (`campaign.running.batch`). The bound is ``defaults.workloads_per_process`` where
the manifest sets it (frozen in the matrix), else the runner's choice, `RUNNER_BOUND`; batch.json records it. The order:

- bound 1: the matrix order, one task per process -- exactly the run without batching;
- otherwise canaries first, alone, in matrix order (a broken canary stops the campaign
  before anything is batched behind it); then, round by round and in each round's cell
  order, every workload's task of that cell, split into near-equal batches. Round 1's
  baseline (the recording cell) comes before the cells that replay it, and every round 1
  before a later round, whose skip (adaptive rounds) is decided before its batch starts.

Lanes: the untimed tasks of a screen's IR pass (round 0) time nothing, so the runner may run
several of their processes at once on one card (`lanes`: ``defaults.ir_pass_lanes``, frozen in the
matrix, else the runner's choice); each side of the IR pass is then one group, a queue its lanes' processes claim
workloads from one at a time (`campaign.running.sidequeue`), so one long workload holds up no
other and the lanes end together whatever the workloads cost; the queue hands out heavier workloads
first (`heavier_first`: the manifest's ``weight_s``, else the run order, as Ray's submissions), so a
long one does not start last and hold the pass after the other lanes ran dry. Untimed canaries share lanes only with each other: both
sides of a screen's canary run at once, and everything else waits for them, so a broken canary
still stops the campaign before anything is run behind it. A timed task never shares its card:
the runner waits for every IR-pass process before the first timed one starts
(`campaign.running.runner.Runner.run`).

progress.tsv (`PROGRESS_COLUMNS`) is appended by the worker, one whole line per event; a
line without its newline is one being written (or torn by a kill) and is not read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from campaign.contract.plans import Task
from campaign.contract.progresslines import Event, parse

# The runner's bound. Every later workload of a process starts as a fresh one would (its Triton
# tuners and FlagGems' tuner store emptied, `campaign.worker.batch`), so the bound weighs what a
# process saves against what one process risks: on the H200 a pointwise cell spends about 8 s of
# its 12-22 s in start and imports, so 8 workloads a process leave about 1 s of that per workload,
# and a larger batch saves under 1 s more each; what one process risks grows with it -- a fault
# that poisons the process (a sticky device error) fails every workload after it until a fresh
# process takes over, and Triton's in-memory kernels and torch's allocator pool only grow.
RUNNER_BOUND = 8


# The runner's lanes for the IR pass: one per CORES_PER_LANE cores of the card's share of the host,
# at most RUNNER_LANES. An IR-pass process is CPU work (start, imports, compiles, SASS): on this
# project's 2-core CI machine two lanes gave nothing (the CPU demo screen 43.75 s against 43.66 s
# with one), so one lane there; an H200 host's 16 cores a card give four, which hold four CUDA
# contexts and FlagGems' row inputs, a few GiB of its 141 (measured: README "What a run costs").
RUNNER_LANES = 4
CORES_PER_LANE = 4


def bound(declared: Optional[int]) -> tuple[int, str]:
    """The bound and who chose it: the manifest's ``workloads_per_process``, or the runner."""
    return (RUNNER_BOUND, "runner") if declared is None else (declared, "manifest")


def lanes(declared: Optional[int], cores: int, cards: int, tuner_cache: str) -> tuple[int, str]:
    """How many IR-pass processes run at once on one card, and why: the manifest's
    ``ir_pass_lanes``; else the runner's: one per `CORES_PER_LANE` cores of a card's share,
    at most `RUNNER_LANES`. One where the tuner cache is shared: processes at once would
    write one FlagGems tuner store."""
    if tuner_cache == "shared":
        return 1, "tuner_cache shared: one IR-pass process at a time"
    if declared is not None:
        return declared, "the manifest's ir_pass_lanes"
    share = cores // max(cards, 1)
    return (max(1, min(RUNNER_LANES, share // CORES_PER_LANE)),
            f"the runner's choice: {cores} cores, {cards} card(s), one lane per {CORES_PER_LANE} cores")


CANARIES, IR_PASS = "canaries", "IR pass"


def lane_kind(group: Sequence[Task]) -> Optional[str]:
    """Which groups may run at once on a card: untimed canaries with each other (`CANARIES`), the
    other untimed groups with each other (`IR_PASS`); None for a group with a timed task: it runs alone."""
    if any(task.timed for task in group):
        return None
    return CANARIES if any(task.canary for task in group) else IR_PASS


def heavier_first(weight: Mapping[str, Optional[float]], workload: str, order: int) -> tuple[float, int]:
    """The order a pool hands workloads out in (an IR-pass side's queue, Ray's submissions): heavier
    first by the manifest's ``weight_s`` (a workload without one weighs nothing), then the run order.
    Where the weights are a sealed screen's IR-pass seconds (`campaign inventory --weights-from`), the
    sealed 2-core whole suite replayed over 16 lanes spans 1,032 s instead of 1,530 s in the manifest's order
    (tests/bench/lane_schedule.py)."""
    return -(weight.get(workload) or 0.0), order


def groups(tasks: Sequence[Task], bound: int, lanes: int = 1,
           weight: Optional[Mapping[str, Optional[float]]] = None) -> tuple[tuple[Task, ...], ...]:
    ordered = sorted(tasks, key=lambda t: t.order)
    if bound <= 1:
        return tuple((task,) for task in ordered)
    out: list[tuple[Task, ...]] = [(task,) for task in ordered if task.canary]
    sides: dict[tuple[int, str], list[Task]] = {}       # first appearance is the run order
    for task in ordered:
        if not task.canary:
            sides.setdefault((task.round, task.cell), []).append(task)
    for members in sides.values():
        if lanes > 1 and lane_kind(members) == IR_PASS:  # the side's queue: its lanes' processes claim from it
            out.append(tuple(sorted(members, key=lambda t: heavier_first(weight or {}, t.workload, t.order))))
            continue
        count = math.ceil(len(members) / bound)
        size = math.ceil(len(members) / count)            # near-equal: 5 at bound 4 is 3 + 2, not 4 + 1
        out += [tuple(members[at:at + size]) for at in range(0, len(members), size)]
    return tuple(out)


def read(path: Path) -> list[Event]:
    try:
        return parse(Path(path).read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return []


@dataclass(frozen=True)
class Progress:
    """What one process's events say about its tasks (given in the order it runs them)."""

    started: dict[str, Event]
    ended: dict[str, Event]

    @classmethod
    def of(cls, events: Sequence[Event]) -> "Progress":
        return cls({e.task_id: e for e in events if e.kind == "start"},
                   {e.task_id: e for e in events if e.kind == "end"})

    def current(self, tasks: Sequence[Task]) -> Optional[Task]:
        """The first task without its end: the one running, or next to run."""
        return next((task for task in tasks if task.id not in self.ended), None)

    def since(self, tasks: Sequence[Task], task: Task, spawn: tuple[float, float]) -> tuple[float, float]:
        """(unix, monotonic) from which ``task``'s time counts: the end of the task before it in
        this process, or the spawn for the first: every second of a process is some task's."""
        at = [t.id for t in tasks].index(task.id)
        if at == 0:
            return spawn
        before = self.ended.get(tasks[at - 1].id)
        return spawn if before is None else (before.unix, before.monotonic)
