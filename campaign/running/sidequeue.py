"""One side of a screen's IR pass as a shared queue: its lanes' worker processes claim its
workloads one at a time, so one long workload holds up none behind it.

Cut statically, a side's workloads were split into as many batches as lanes up front, and a
slow workload (topk: 35 s a side) made every workload after it in its batch wait while the other
lanes ran dry. Here (`campaign.running.runner.Runner`, lanes of the IR pass, more than one
workload a process):

- before its lanes start, the runner prepares every unsettled workload of the side once: its
  cell folder and task.json (an unfinished folder set aside, as ever; one that holds only the
  task.json an earlier run prepared, never claimed, is prepared again), and an empty queue folder,
  ``batches/queue-<nnnn>/`` (`campaign.contract.artifacts.QUEUE_PREFIX`), fresh for each run of
  the runner, so a resumed run's queue holds only what is still to run;
- each lane settles the side through the one loop (`campaign.running.scheduler.settle`, this queue
  its placement) until nothing is left to claim: it starts a worker process on the side's unclaimed
  workloads (``batches/<nnnn>/batch.json`` with ``queue``, `campaign.contract.plans.BatchRecord`); the
  process claims each workload before it
  runs it (`campaign.contract.artifacts.claim`: a claim file naming its batch, made with one link,
  so two processes never claim one workload), at most the bound of workloads, with caches of its
  own, fresh for the process;
- the runner's side of each process is the batch protocol's (`campaign.running.batch.Watch`) over
  the workloads the process claimed, in the order it claimed them: each workload's evidence lies in
  its own cell folder, its row goes to status.tsv as it ends, its timeout counts from the end of the
  one before it in its process (a hung workload gets its own ``timed_out`` row and the lane goes on
  with a fresh process); the root lock names the workload each lane's process runs;
- a claimed workload that is not settled when its process ends (a first death by a signal) is
  given back to the queue -- its folder set aside and prepared again, its claim removed -- and runs
  again in whichever lane claims it next; after a stop nothing is given back (a resumed run prepares
  a new queue from status.tsv). A workload that ran out of device memory beside the other lanes
  (`campaign.contract.status.run_alone`) is neither given back nor queued on resume: its claim stays,
  and the runner runs it alone after the lanes. Nothing settled runs twice.
"""
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Optional

from campaign.contract import canonical, faults, status
from campaign.contract.artifacts import (
    BATCH_FILE,
    BATCHES_DIR,
    QUEUE_PREFIX,
    STDERR_LOG,
    STDOUT_LOG,
    TASK_FILE,
    claim,
    claim_file,
    claimed_by,
    claims,
    first_free,
    set_aside,
)
from campaign.contract.plans import BatchRecord, CellPlan, Task
from campaign.contract.status import StatusRow
from campaign.running import batching, scheduler, workerlaunch
from campaign.running.batch import CellRunner, Watch
from campaign.running.cellproc import Clock, Ended


class SideQueue:
    """The queue of one side (one round, one cell) of the IR pass; its lanes call `step`."""

    def __init__(self, runner: CellRunner, group: tuple[Task, ...], rows: list[StatusRow]):
        self.runner, self.setup, self.group, self.rows = runner, runner.setup, group, rows
        self.lock = threading.Lock()            # what is unclaimed, and giving back, one lane at a time
        batches = self.setup.root / BATCHES_DIR
        batches.mkdir(exist_ok=True)
        self.folder = first_free(lambda n: batches / f"{QUEUE_PREFIX}{n:04d}", lambda path: path.mkdir())
        self.plans: dict[str, CellPlan] = {}
        for task in self._queued(group):
            self._prepare(task)

    def _queued(self, tasks: tuple[Task, ...]) -> tuple[Task, ...]:
        """Those of ``tasks`` the lanes run: not settled, and none that ran out of device memory beside
        other lanes (`campaign.contract.status.run_alone`: the runner runs it alone after the lanes)."""
        alone = status.run_alone(self.rows)
        return tuple(task for task in scheduler.unsettled(tasks, self.rows) if task.id not in alone)

    def _prepare(self, task: Task) -> None:
        folder = self.setup.root.cell(task.id)
        if folder.exists() and [p.name for p in folder.iterdir()] == [TASK_FILE]:
            (folder / TASK_FILE).unlink()       # prepared, never claimed: no worker wrote here, nothing to keep
        elif folder.exists():
            moved = set_aside(folder)
            self.runner.events.note(f"{task.id}: unfinished cell folder kept as {moved.name}; running it again")
        folder.mkdir(parents=True, exist_ok=True)
        plan = self.runner.plan(task, folder)
        self.runner.drop_caches(plan)           # its own cache folders: the claiming process's are used
        with faults.naming(folder / TASK_FILE):
            canonical.write_json_new(folder / TASK_FILE, plan.model_dump(mode="json"))
        self.plans[task.id] = plan

    def owner(self, task_id: str) -> Optional[str]:
        return claimed_by(self.folder, task_id)

    # -- the placement of one lane (`campaign.running.scheduler.settle`) ---------------------

    def available(self, todo: tuple[Task, ...]) -> tuple[Task, ...]:
        """The unsettled workloads no process has claimed: none left, the lane moves on."""
        with self.lock:
            return tuple(t for t in todo if self.owner(t.id) is None)

    def claim(self, task: Task) -> None:
        """Nothing: every unsettled workload was prepared when the queue was made, or when given back."""

    def launch(self, tasks: tuple[Task, ...], rows: list[StatusRow]) -> bool:
        """One worker process over the side's unclaimed workloads; True when the runner was stopped."""
        return self._process(tasks)

    # -- one process -------------------------------------------------------------------

    def _process(self, candidates: tuple[Task, ...]) -> bool:
        setup, runner = self.setup, self.runner
        batches = setup.root / BATCHES_DIR
        folder = first_free(lambda n: batches / f"{n:04d}", lambda path: path.mkdir())
        shared = setup.matrix.tuner_cache == "shared"
        triton = setup.scratch / f"triton-queue-{folder.name}"
        tuner = setup.scratch / ("tuner-shared" if shared else f"tuner-queue-{folder.name}")
        triton.mkdir(parents=True)
        tuner.mkdir(parents=True, exist_ok=shared)
        limit, chosen_by = batching.bound(setup.matrix.workloads_per_process)
        record = BatchRecord(id=folder.name, root=str(setup.root), round=candidates[0].round, cell=candidates[0].cell,
                             planned=tuple(t.id for t in self.group), tasks=tuple(t.id for t in candidates),
                             bound=limit, bound_by=chosen_by, queue=str(self.folder),
                             triton_cache_dir=str(triton), tuner_cache_dir=str(tuner))
        with faults.naming(folder / BATCH_FILE):
            canonical.write_json_new(folder / BATCH_FILE, record.model_dump(mode="json"))
        plan = self.plans[candidates[0].id].model_copy(update={"triton_cache_dir": str(triton),
                                                               "tuner_cache_dir": str(tuner)})
        argv = ["--batch", str(folder / BATCH_FILE)]
        runner.telemetry.mark()
        watch = QueueWatch(self, candidates, folder, (time.time(), time.monotonic()))
        try:
            with open(folder / STDOUT_LOG, "xb") as out, open(folder / STDERR_LOG, "xb") as err:
                try:
                    # as every worker starts: digested code only, the run's bytecode prefix
                    proc = workerlaunch.start(setup, plan, argv, out, err)
                except (OSError, ValueError) as exc:   # the first it would have claimed says why
                    if claim(self.folder, candidates[0].id, folder.name):
                        watch.tasks = (candidates[0],)
                        watch.close(candidates[0], Ended(None, "not_started", [f"worker not started: {argv}: {exc}"]))
                    return False
                runner.worker_running(f"queue {self.folder.name}: {candidates[0].round}/{candidates[0].cell}", proc.pid)
                return watch.follow(proc)
        finally:
            runner.worker_running(None, None)
            shutil.rmtree(triton, ignore_errors=True)
            if not shared:
                shutil.rmtree(tuner, ignore_errors=True)
            self._give_back(watch)

    def _give_back(self, watch: "QueueWatch") -> None:
        """The workloads this process claimed and did not settle go back to the queue (not after a stop)."""
        if self.runner.stop.is_set():
            return
        with self.lock:
            for task in self._queued(watch.claimed()):
                self._prepare(task)
                claim_file(self.folder, task.id).unlink()


class ClaimIndex:
    """The claims of a side's queue as a process's watch reads them each poll (`QueueWatch.clock`, every
    0.2 s). Reading every candidate's claim file each poll (357 of them on the whole suite) held the
    parent at 12-15 % of a core of the 2-core machine whose lanes it watched. A claim is made or given
    back only by adding or removing a name, which moves the queue folder's mtime: while it stands still
    the last reading stands. A file system stamps times coarsely (a clock tick), so a reading is trusted
    only when it began `SETTLED_NS` after the stamp it saw: a claim made in the stamp's own tick, after
    the listing, is read at a later poll (git's "racily clean" rule)."""

    SETTLED_NS = 1_000_000_000

    def __init__(self, queue: Path):
        self.queue = queue
        self.reading: Optional[tuple[int, int, dict[str, str]]] = None    # (mtime seen, read began, owners)

    def owners(self) -> dict[str, str]:
        """Claim file name -> the batch that claimed it, as the queue stands now."""
        began, stamp = time.time_ns(), os.stat(self.queue).st_mtime_ns
        if self.reading is not None and self.reading[0] == stamp and self.reading[1] - stamp > self.SETTLED_NS:
            return self.reading[2]
        owners = claims(self.queue)
        self.reading = (stamp, began, owners)
        return owners


class QueueWatch(Watch):
    """`Watch` over the workloads one process claimed from its side's queue, as it claims them."""

    def __init__(self, queue: SideQueue, candidates: tuple[Task, ...], folder: Path, spawn: tuple[float, float]):
        super().__init__(queue, (), folder, spawn, queue.rows)      # the batch protocol reads runner, setup
        self.queue, self.candidates = queue, candidates
        self.announced = set()
        self.claims = ClaimIndex(queue.folder)
        self.claim_names = tuple((t, claim_file(queue.folder, t.id).name) for t in candidates)

    def claimed(self) -> tuple[Task, ...]:
        """The candidates this process claimed, in the order it claimed them (the order it was given)."""
        owners = self.claims.owners()
        return tuple(t for t, name in self.claim_names if owners.get(name) == self.folder.name)

    def _read(self) -> None:
        self.tasks = self.claimed()
        super()._read()

    def where(self, task: Task) -> str:
        position = [t.id for t in self.tasks].index(task.id) + 1
        return (f"batch {self.folder.name}: workload {position} in its process, claimed from its side's "
                f"queue {self.queue.folder.name}")

    def clock(self) -> Clock:
        """As a batch's, once the process has claimed a workload; before that, its start counts
        against the first workload it may claim, as a batch's start counts against its first."""
        self._read()
        if not self.tasks:
            first = self.candidates[0]
            return Clock(self.spawn[1], first.timeout_s, first)
        return super().clock()

    def close(self, task: Task, ended: Ended, end=None) -> None:
        if task.id not in {t.id for t in self.tasks}:    # never claimed here: no row of this process's
            self.runner.events.note(f"batch {self.folder.name}: the process ended ({ended.rc_name}) before it "
                                    "claimed a workload")
            return
        super().close(task, ended, end)
