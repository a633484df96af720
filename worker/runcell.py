"""One cell run in this process: its task file in, its result file (and phases.json) out.
`campaign.worker.__main__` runs one per process; `campaign.worker.batch` runs several of one side
in sequence, each exactly as below.

The runner writes task.json (`CellPlan`), starts this with an explicit argv and the
env of `campaign.running.cellenv.cell_env`, redirects stdout/stderr to the cell's logs
and reads exactly RESULT_JSON afterwards. Nothing is reported on stdout.

1. load the plan (the campaign's terms in it), pick the backend;
2. preflight (`campaign.worker.preflight`): on failure ``PREFLIGHT_FAILED check=…``, exit 78;
3. the benchmark target in one pytest session with the planned plugins, built in
   plan order (``module.make(ctx)``);
4. the correctness target in a second session with the outcomes and seeds plugins, the autotune
   plugin on the configs that were timed, and the workload's dtype narrowing
   (`campaign.worker.cell.correctness_plugins`), or,
   on a backend that executes nothing, correctness recorded as not run;
5. phases.json (`campaign.worker.phases`: where the seconds went), then result.json,
   written once, from the files the plugins left (`campaign.worker.cell`).

A write fault met anywhere on the way (`campaign.worker.writefaults`) writes no result: the worker
prints its `campaign.contract.faults.fault_line` and exits `EXIT_WRITE_FAULT`, and the runner stops
with it named, the cell left to run again.

The exit status is the result's rc (`campaign.contract.errors.WorkerExit`, its one table
`WORKER_EXITS`): the benchmark session's pytest code (0-5), or the worker's own, outside pytest's:
78 for a failed preflight, 64 for unusable arguments, 70 when the worker itself crashed (still
written as a failure result whenever the task could be read; never pytest's 1, "tests failed"),
75 when it would not run, 6 for a write fault (no result).
"""
from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Optional

import pytest

from campaign.backends import get_backend
from campaign.backends.plan import OUTCOMES, SEEDS
from campaign.contract import faults
from campaign.contract.artifacts import RUN_LOG
from campaign.contract.canonical import read_json, write_json_new
from campaign.contract.cellfiles import CellResult, Correctness, Preflight
from campaign.contract.errors import PREFLIGHT_FAILED, WorkerExit
from campaign.contract.plans import CellPlan
from campaign.contract.runroot import RunRoot
from campaign.worker import cell, facts, lifeline, phases, preflight
from campaign.worker.context import CellContext, CellLog
from campaign.worker.memoryfaults import DeviceMemory
from campaign.worker.writefaults import WriteFaults


class Cell:
    """One execution: what is known so far, so a crash at any step still yields a result."""

    def __init__(self, plan: CellPlan, started: float, first_in_process: bool = True):
        self.plan = plan
        self.started = started
        self.cell_dir = Path(plan.cell_dir)
        self.log = CellLog(self.cell_dir / RUN_LOG)
        self.preflight: Optional[Preflight] = None
        self.timed = False
        self.phases = phases.Recorder(started, first_in_process=first_in_process)
        self.faults = WriteFaults()
        self.memory = DeviceMemory()

    def say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)
        self.log.line(text)

    def result(self, rc: int, correctness: Correctness, notes: list[str]) -> CellResult:
        self.phases.begin("write-out")
        rows, rows_note = cell.read_rows(self.cell_dir)
        autotune, autotune_note = cell.read_autotune(self.cell_dir)
        variants, launches, index_note = cell.read_index(self.cell_dir)
        if self.preflight is not None and self.preflight.ok:
            # before pytest ran, absent plugin files are expected, not news
            notes = notes + [note for note in (rows_note, autotune_note, index_note) if note]
        # the runner reads it from the row: beside other IR-pass lanes, a cell run again alone (contract/status)
        out_of_memory = self.memory.first or (cell.rows_out_of_memory(self.cell_dir) if rows.failed else None)
        if out_of_memory:
            notes = notes + [out_of_memory]
        preflight_record = self.preflight or Preflight(ok=False, interpreter=sys.executable, checks=())
        return CellResult(task_id=self.plan.task.id, rc=int(rc), preflight=preflight_record, rows=rows,
                          markers=dict(self.log.counts), correctness=correctness, autotune=autotune,
                          ir_variants=variants, launches=launches, timed=self.timed,
                          note="; ".join(notes) or None, elapsed_s=round(time.monotonic() - self.started, 3))

    def refused(self, check: str, detail: str, checks=()) -> CellResult:
        self.say(f"{PREFLIGHT_FAILED} check={check}: {detail}")
        if self.preflight is None:
            # a refusal before the checks ran (the offline shim's) is its own check, detail and all
            self.preflight = Preflight(ok=False, interpreter=sys.executable,
                                       checks=tuple(checks) or ((check, False, detail),), failed_check=check)
        reason = f"preflight failed: check={check}"
        return self.result(WorkerExit.PREFLIGHT_FAILED, Correctness(state="not_run", reason=reason), [reason])

    def run(self) -> CellResult:
        plan = self.plan
        backend = get_backend(plan.terms.device.backend)
        self.timed = backend.capabilities.executes and plan.task.timed
        # imported here, apart from the checks, to time them; preflight names an import that fails
        self.phases.begin("imports")
        if not backend.capabilities.executes:
            # FlagGems imports offline only answered as the target's card: before anything imports it
            from campaign.plugins import flaggems_offline
            try:
                flaggems_offline.install(plan.terms.device.target, plan.task.provider)
            except (FileNotFoundError, ValueError) as exc:      # no record of the target's card: named, not a crash
                # another FlagGems than the screened one, or its vendor's configs absent: named by its check
                return self.refused(getattr(exc, "check", "offline_device"), str(exc))
        facts.import_errors(preflight.needed_modules(plan.task.provider))
        self.phases.begin("preflight")
        self.preflight = preflight.run(plan, backend, os.environ, self.say)
        if not self.preflight.ok:
            failed = self.preflight.checks[-1]
            return self.refused(failed[0], failed[2])

        ctx = CellContext(plan=plan, cell_dir=self.cell_dir, log=self.log, backend=backend)
        # outcomes belongs to the correctness session: a benchmark node passing is not a
        # correctness verdict, and outcomes.json is written once
        plugins = [importlib.import_module(name).make(ctx) for name in plan.plugins if name != OUTCOMES]
        args = cell.benchmark_args(plan)
        self.say(f"benchmark: pytest {' '.join(args)}")
        with self.phases.session("timing") as watch:
            rc = int(pytest.main(args, plugins=[*plugins, watch, self.faults, self.memory]))
        self.say(f"benchmark: pytest exit {rc}")

        notes = []
        skipped = cell.correctness_not_run(self.log.counts, backend.capabilities.executes, plan.task.timed)
        if skipped is not None:
            importlib.import_module(OUTCOMES).write_not_run(self.cell_dir, skipped)
            correctness = Correctness(state="not_run", reason=skipped)
        else:
            args = cell.correctness_args(plan)
            self.say(f"correctness: pytest {' '.join(args)}")
            seeds = [importlib.import_module(SEEDS).make(ctx)] if SEEDS in plan.plugins else []
            session_plugins = [importlib.import_module(OUTCOMES).make(ctx), *seeds,
                               *cell.correctness_plugins(plan, self.say, ctx)]
            with self.phases.session("correctness") as watch:
                correctness_rc = int(pytest.main(args, plugins=[*session_plugins, watch, self.faults]))
            self.say(f"correctness: pytest exit {correctness_rc}")
            correctness = cell.read_correctness(self.cell_dir, correctness_rc)
            if correctness_rc not in (WorkerExit.OK, WorkerExit.TESTS_FAILED):
                notes.append(f"correctness session exit {correctness_rc}"
                             + (" (no test ran: run.log says why)" if correctness_rc == WorkerExit.NO_TESTS else ""))
        return self.result(rc, correctness, notes)

    def crashed(self, exc: BaseException) -> CellResult:
        self.say(f"worker crashed: {type(exc).__name__}: {exc}")
        reason = f"worker crashed: {type(exc).__name__}"
        first_line = (str(exc).splitlines() or [""])[0]
        return self.result(WorkerExit.CRASH, Correctness(state="not_run", reason=reason), [f"{reason}: {first_line}"])


def run_cell(task_path: Path, result_path: Path, started: float, notes: list[str],
             first_in_process: bool = True, caches: Optional[tuple[str, str]] = None) -> int:
    """One cell: its task file in, its result file (and phases.json) out; the result's rc.
    ``caches``: the (Triton, tuner) cache folders of the process that claimed it from a side's
    queue, in place of the task file's (`campaign.contract.plans.BatchRecord`)."""
    if result_path.exists():
        print(f"{result_path}: exists; a finished cell is never re-run or overwritten", file=sys.stderr)
        return WorkerExit.REFUSED
    try:
        plan = CellPlan.model_validate(read_json(task_path))
        if caches is not None:
            plan = plan.model_copy(update={"triton_cache_dir": caches[0], "tuner_cache_dir": caches[1]})
    except Exception as exc:        # without a plan there is no task id to write a result under
        print(f"{task_path}: not a readable task file: {type(exc).__name__}: {exc}", file=sys.stderr)
        return WorkerExit.USAGE
    gone = lifeline.orphaned(RunRoot(Path(plan.root)))
    if gone:   # the runner died before the parent-death signal was asked for: nobody would read a result
        print(f"worker: {gone}; the cell is not run", file=sys.stderr)
        return WorkerExit.REFUSED
    os.chdir(plan.project_root)
    current = Cell(plan, started, first_in_process)
    try:
        for note in notes:
            current.say(f"note: {note}")
        return finish(current, result_path)
    except OSError as exc:
        fault = faults.write_fault(exc)
        if fault is None:
            raise
        return written_off(fault)


def finish(current: Cell, result_path: Path) -> int:
    """Run the cell, write its phases and result; the result's rc, or `written_off` on a write fault
    its sessions met (an OSError of one raised here is the caller's)."""
    try:
        result = current.run()
    except Exception as exc:        # recorded as a failure result, never swallowed
        traceback.print_exc()
        current.faults.note(exc)
        if current.faults.first is not None:
            return written_off(current.faults.first)
        result = current.crashed(exc)
    if current.faults.first is not None:
        return written_off(current.faults.first)
    try:                            # before result.json, so a result always has its phases beside it
        current.phases.write(current.cell_dir, current.plan.task.id)
    except OSError as exc:          # cost bookkeeping: never worth losing the result over
        if faults.write_fault(exc) is not None:
            raise
        current.say(f"phases.json not written: {type(exc).__name__}: {exc}")
    write_json_new(result_path, result.model_dump(mode="json"))
    return result.rc


def written_off(fault: OSError) -> int:
    """A write fault: no result, its one line for the runner (where stderr can still be written)."""
    try:
        print(faults.fault_line(fault), file=sys.stderr, flush=True)
    except OSError:
        pass                        # the runner names the cell folder instead
    return faults.EXIT_WRITE_FAULT
