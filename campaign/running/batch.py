"""One batch (`campaign.running.batching.groups`): several workloads, one worker process at a time.

Protocol per process: the runner writes every cell's task.json exactly as for a single
cell, then ``batches/<nnnn>/batch.json`` (`BatchRecord`), and starts
the worker on ``--batch batch.json`` (`campaign.running.workerlaunch`) in its own session, its streams to the
batch folder. The worker appends a ``start`` and an ``end`` line per workload to
progress.tsv; each workload writes its own cell folder (its logs, result.json) as a
single-cell worker does. The runner reads progress.tsv while it waits:

- an ``end``: that workload's row goes to status.tsv at once (its result.json, the rc
  on the line), its telemetry window from the line's timestamps;
- a workload running past its own timeout (counted from the end of the one before it, or
  from the spawn for the first, so process start and imports count against the first) ends
  the process group: that workload's row is ``timed_out``/``killed``; a process that dies
  on its own gives the running workload its row (``signal_<NAME>``, or its exit status);
  after the last workload's end, the process's exit still counts against that one's timeout
  (a process that outlives it is ended and noted; the rows stand);
- a stopped runner, at any moment (`campaign.running.cellproc.watch`): the group is ended
  within one poll, then the progress file is read once more; the workload whose seconds
  ran gets an ``interrupted`` row -- noted as not started when the stop came between two
  workloads -- and every workload that wrote its end keeps its row.

Then a fresh process (fresh Triton and tuner caches, a new batch folder that ``continues``
the last) runs what is not settled: nothing finished is run again, a first death by a
signal is (`campaign.contract.status.settled`). A folder this batch prepared for a task that
never started is reused as it is; any other unfinished folder is set aside as by the runner.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional, Protocol

from campaign.contract import canonical, faults, status
from campaign.contract.artifacts import BATCH_FILE, BATCHES_DIR, PROGRESS_FILE, STDERR_LOG, STDOUT_LOG, TASK_FILE, first_free, set_aside
from campaign.contract.plans import BatchRecord, CellPlan, Task
from campaign.contract.status import StatusRow
from campaign.running import batching, workerlaunch
from campaign.running.cellproc import STOPPED, TIMED_OUT, Clock, Ended, stopped_note, timed_out, timeout_note, watch
from campaign.running.cellresult import status_row
from campaign.running.rounds import Rounds
from campaign.running.runsetup import Events, RunSetup, Telemetry


class CellRunner(Protocol):
    """What a batch uses of the runner that owns it (`campaign.running.runner.Runner`), named
    here so that this module does not import the runner, which imports it."""

    setup: RunSetup
    events: Events
    telemetry: Telemetry
    stop: threading.Event
    stop_reason: str
    rounds: Rounds

    def plan(self, task: Task, cell_dir: Path) -> CellPlan: ...
    def drop_caches(self, plan: CellPlan) -> None: ...
    def worker_running(self, task_id: Optional[str], pgid: Optional[int]) -> None: ...
    def record(self, task: Task, row: StatusRow, rows: list[StatusRow]) -> dict[str, StatusRow]: ...


class BatchRun:
    def __init__(self, runner: CellRunner, group: tuple[Task, ...]):
        self.runner = runner
        self.setup = runner.setup
        self.group = group
        self.prepared: dict[str, CellPlan] = {}     # task id -> plan of a folder no workload used yet
        self.previous: Optional[str] = None

    # -- the placement (`campaign.running.scheduler`) ---------------------------------------

    def available(self, todo: tuple[Task, ...]) -> tuple[Task, ...]:
        return todo

    def claim(self, task: Task) -> None:
        """Nothing yet: a folder this batch prepared is reused, any other set aside when the process is planned."""

    def launch(self, tasks: tuple[Task, ...], rows: list[StatusRow]) -> bool:
        return self._process(tasks, rows)

    # -- one process -------------------------------------------------------------------

    def _caches(self) -> tuple[Path, Path]:
        """The batch's caches, the same paths for each of its processes (so a prepared task.json
        stays true), emptied before each: every process starts cold."""
        scratch, first = self.setup.scratch, self.group[0].order
        shared = self.setup.matrix.tuner_cache == "shared"
        triton, tuner = scratch / f"triton-batch-{first}", scratch / ("tuner-shared" if shared else f"tuner-batch-{first}")
        shutil.rmtree(triton, ignore_errors=True)
        triton.mkdir(parents=True)
        if not shared:
            shutil.rmtree(tuner, ignore_errors=True)
        tuner.mkdir(parents=True, exist_ok=True)
        return triton, tuner

    def _plans(self, tasks: tuple[Task, ...]) -> dict[str, CellPlan]:
        runner, root = self.runner, self.setup.root
        triton, tuner = self._caches()
        plans = {}
        for task in tasks:
            if task.id in self.prepared:
                plans[task.id] = self.prepared[task.id]
                continue
            folder = root.cell(task.id)
            if folder.exists():
                moved = set_aside(folder)
                runner.events.note(f"{task.id}: unfinished cell folder kept as {moved.name}; running it again")
            folder.mkdir(parents=True)
            own = runner.plan(task, folder)
            runner.drop_caches(own)        # the task's own cache folders: the batch's are used
            plan = own.model_copy(update={"triton_cache_dir": str(triton), "tuner_cache_dir": str(tuner)})
            with faults.naming(folder / TASK_FILE):
                canonical.write_json_new(folder / TASK_FILE, plan.model_dump(mode="json"))
            plans[task.id] = plan
        return plans

    def _record(self, tasks: tuple[Task, ...]) -> Path:
        batches = self.setup.root / BATCHES_DIR
        batches.mkdir(exist_ok=True)
        folder = first_free(lambda n: batches / f"{n:04d}", lambda path: path.mkdir())
        limit, chosen_by = batching.bound(self.setup.matrix.workloads_per_process)
        record = BatchRecord(id=folder.name, root=str(self.setup.root), round=tasks[0].round, cell=tasks[0].cell,
                             planned=tuple(t.id for t in self.group), tasks=tuple(t.id for t in tasks),
                             continues=self.previous, bound=limit, bound_by=chosen_by)
        with faults.naming(folder / BATCH_FILE):
            canonical.write_json_new(folder / BATCH_FILE, record.model_dump(mode="json"))
        self.previous = folder.name
        return folder

    def _process(self, tasks: tuple[Task, ...], rows: list) -> bool:
        setup, runner = self.setup, self.runner
        plans = self._plans(tasks)
        folder = self._record(tasks)
        args = ["--batch", str(folder / BATCH_FILE)]
        runner.events.cell_started(tasks[0])
        runner.telemetry.mark()
        spawn = (time.time(), time.monotonic())
        watch = Watch(self, tasks, folder, spawn, rows)
        try:
            with open(folder / STDOUT_LOG, "xb") as out, open(folder / STDERR_LOG, "xb") as err:
                try:
                    proc = workerlaunch.start(setup, plans[tasks[0].id], args, out, err)
                except (OSError, ValueError) as exc:   # the first task's row says why; the rest run next
                    watch.close(tasks[0], Ended(None, "not_started", [f"worker not started: {args}: {exc}"]))
                    return False
                runner.worker_running(tasks[0].id, proc.pid)
                return watch.follow(proc)
        finally:
            runner.worker_running(None, None)
            runner.drop_caches(plans[tasks[0].id])
            self.prepared = {tid: plan for tid, plan in plans.items() if tid not in watch.progress.started
                             and tid not in watch.closed}


class Watch:
    """The runner's side of one batch process: progress read, rows written as workloads end."""

    def __init__(self, batch: BatchRun, tasks: tuple[Task, ...], folder: Path, spawn: tuple[float, float], rows: list):
        self.batch, self.runner, self.tasks, self.folder = batch, batch.runner, tasks, folder
        self.spawn, self.rows = spawn, rows
        self.progress = batching.Progress({}, {})
        self.closed: set[str] = set()
        self.announced = {tasks[0].id} if tasks else set()
        self.pid: Optional[int] = None

    def _read(self) -> None:
        self.progress = batching.Progress.of(batching.read(self.folder / PROGRESS_FILE))
        for task in self.tasks:
            if task.id in self.progress.started and task.id not in self.announced:
                self.announced.add(task.id)
                self.runner.events.cell_started(task)
                self.runner.telemetry.mark()
                if self.pid is not None:
                    self.runner.worker_running(task.id, self.pid)
            end = self.progress.ended.get(task.id)
            if end is not None and task.id not in self.closed:
                self.runner.telemetry.mark()
                self.close(task, Ended(status.shell_rc(end.rc), status.rc_name(end.rc)), end)

    def close(self, task: Task, ended: Ended, end: Optional[batching.Event] = None) -> None:
        """``task``'s row: from its end line, or ended now (a timeout, a death, a stop)."""
        since = self.progress.since(self.tasks, task, self.spawn)
        start = self.progress.started.get(task.id)
        until = (end.unix, end.monotonic) if end is not None else (time.time(), time.monotonic())
        folder = self.batch.setup.root.cell(task.id)
        window = self.runner.telemetry.window(start.unix if start else since[0], until[0], folder)
        row = status_row(task, folder, ended, until[1] - since[1], window)
        row = replace(row, note="; ".join(part for part in (row.note, self.where(task)) if part))
        self.closed.add(task.id)
        self.runner.record(task, row, self.rows)

    def where(self, task: Task) -> str:
        """The row's note of where it ran: its place in its process."""
        position = [t.id for t in self.tasks].index(task.id) + 1
        return f"batch {self.folder.name}: workload {position} of {len(self.tasks)} in its process"

    def clock(self) -> Clock:
        """Whose seconds run now, read from the progress file (rows go out for what ended): the first
        workload without its end, from the end of the one before it; once every workload ended, the
        last one's still, so that the process's exit counts against its timeout as a cell's does."""
        self._read()
        current = self.progress.current(self.tasks) or self.tasks[-1]
        return Clock(self.progress.since(self.tasks, current, self.spawn)[1], current.timeout_s, current)

    def follow(self, proc: subprocess.Popen) -> bool:
        """Wait for the process, closing each workload as it ends; True when the runner was stopped."""
        self.pid = proc.pid
        runner, grace = self.runner, self.batch.setup.grace_s
        seen = watch(proc, self.clock, grace, runner.stop)
        self._read()                    # after the group is gone: an end written meanwhile is an end
        runner.telemetry.mark()
        current = self.progress.current(self.tasks)
        name = self.folder.name
        if seen.state == STOPPED:
            if current is None:
                runner.events.note(f"batch {name}: the runner was stopped after its last workload ended; "
                                   f"the process was ended with {seen.how}")
            else:                       # the workload whose seconds ran: inside it, or before it started
                notes = [stopped_note(runner.stop_reason, seen.how)]
                if current.id not in self.progress.started:
                    notes.append("it had not started: stopped between workloads of its process")
                self.close(current, Ended(status.RC_INTERRUPTED, status.INTERRUPTED, notes))
            return True
        if seen.state == TIMED_OUT:
            late = seen.clock.owner
            if late.id not in self.closed:
                code = timed_out(seen.how)
                self.close(late, Ended(code, status.rc_name(code, timed_out=True), [timeout_note(
                    late.timeout_s, seen.how, grace, " (this workload's own, in a batch process)")]))
            else:                       # it ended in time and the process did not exit after it
                runner.events.note(f"batch {name}: the process outlived {late.id}'s timeout "
                                   f"({late.timeout_s:g}s) after it ended; its group was ended with {seen.how}")
            return False
        if current is not None and current.id not in self.closed:
            rc = seen.rc
            why = (f"the batch process exited with {status.rc_name(rc)} before {current.id} ended"
                   + ("" if rc >= 0 else "; the workloads after it run in a fresh process"))
            self.close(current, Ended(status.shell_rc(rc), status.rc_name(rc), [why]))
        elif seen.how:
            runner.events.note(f"batch {name}: processes left in the worker group after it exited "
                               f"were ended with {seen.how}")
        return False
