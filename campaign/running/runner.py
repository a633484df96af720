"""The run loop of one card: a prepared matrix; timed cells one worker at a time, in order; a screen's
untimed IR-pass cells in parallel lanes (`_lanes`).

Protocol per task: write the cell's task.json (`CellPlan`), start the worker on
``task.json result.json`` (`campaign.running.workerlaunch`: digested code only) in its own session (so the
whole process group can be ended), wait under the task's timeout, read the one
result.json, append one status row. Everything else -- refusals, the lock,
telemetry start, progress display, sealing -- is the session flow's (`campaign.flows.session`); progress is
reported through `Events` callbacks so the loop never draws anything.

Resume: a task is finished when its rows settle it (`status.settled`: the last
is not ``interrupted``, nor the task's first death by a signal -- that one is
run once more, at once --, nor its first device out of memory beside other IR-pass
lanes -- run once more alone on the card after them, `_alone`, on resume too).
Unfinished tasks whose cell folder exists (a killed
runner, an interrupted or killed cell) have it moved aside to
``<cell>.interrupted-<n>`` -- kept, never deleted -- and are run again.
Adaptive rounds: `campaign.running.rounds`. A batch of one side's workloads shares a process
(`campaign.running.batch`), at most `batching.bound` of them; a bound of 1 is the above. A screen's
IR pass in lanes: each side a queue its lanes' processes claim workloads from (`campaign.running.sidequeue`).
"""
from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from campaign.contract import canonical, faults, journal, rownotes, status
from campaign.contract.artifacts import AUTOTUNE_FILE, RESULT_FILE, STATUS_FILE, STDERR_LOG, STDOUT_LOG, TASK_FILE
from campaign.contract.plans import CellPlan, Task
from campaign.contract.status import StatusRow
from campaign.planning import pinning
from campaign.running import batching, scheduler, workerlaunch
from campaign.running.batch import BatchRun
from campaign.running.cellproc import Ended, wait_worker
from campaign.running.cellresult import status_row
from campaign.running.oneprocess import OneProcess
from campaign.running.rounds import Rounds
from campaign.running.runsetup import Events, Pace, RunSetup, Telemetry
from campaign.running.sidequeue import SideQueue

COMPLETED, CANARY_FAILED, INTERRUPTED = "completed", "canary_failed", "interrupted"


@dataclass(frozen=True)
class Outcome:
    state: str                           # COMPLETED | CANARY_FAILED | INTERRUPTED
    detail: str = ""


class Runner:
    def __init__(self, setup: RunSetup, events: Events, telemetry: Telemetry):
        self.setup = setup
        self.events = events
        self.telemetry = telemetry
        self.stop = threading.Event()
        self.stop_reason = ""
        self.rounds = Rounds(setup.root, setup.matrix, setup.manifest, lambda text: self.events.note(text))
        self._recording = threading.Lock()
        self._lane = threading.local()       # the IR-pass lane this thread runs (`_lanes`); unset: none
        self._drift: Optional[str] = None    # the harness's change found under this run (`_unless_drifted`)

    def interrupt(self, reason: str) -> None:
        self.stop_reason = reason
        self.stop.set()

    @property
    def card_slot(self) -> Optional[int]:
        return None if self.setup.card is None else self.setup.card.slot

    @property
    def status_path(self) -> Path:
        return self.setup.root / STATUS_FILE

    def run(self) -> Outcome:
        rows, bad = self.setup.root.status()
        for line in bad:
            self.events.note(f"status.tsv: ignored a line that is not a row: {line}")
        latest = status.settled(rows)
        tasks = tuple(sorted((t for t in self.setup.matrix.tasks
                              if self.setup.workloads is None or t.workload in self.setup.workloads),
                             key=lambda t: t.order))
        lanes, bound = self.setup.lanes, batching.bound(self.setup.matrix.workloads_per_process)[0]
        weights = {w.name: w.weight_s for w in self.setup.manifest.workloads}
        self.events.started(tasks, latest, pace=Pace(untimed_at_once=lanes, weights=weights))
        groups = batching.groups(tasks, bound, lanes, weights)
        at = 0
        while at < len(groups):
            block, kind = 1, batching.lane_kind(groups[at])   # the next groups of one lane kind run together
            if lanes > 1 and kind is not None:
                while at + block < len(groups) and batching.lane_kind(groups[at + block]) == kind:
                    block += 1
            if lanes > 1 and bound > 1 and kind == batching.IR_PASS:     # each group a side's queue
                outcome = self._queues(groups[at:at + block], rows)
            else:
                outcome = self._lanes(groups[at:at + block], kind, rows) if block > 1 else self._group(groups[at], rows)
            if outcome is not None:
                return outcome
            at += block
        return Outcome(COMPLETED)

    def _group(self, group: tuple[Task, ...], rows: list[StatusRow], in_lanes: bool = False) -> Optional[Outcome]:
        """Run one group until its rows settle it (`scheduler.settle`); an Outcome when the run must end
        there. Several workloads share one process at a time (`campaign.running.batch`); a group of one
        is one process, and a first death by a signal runs again at once, so a recording cell's retry
        comes before every cell that replays its recording. ``in_lanes``: beside other lanes, where a
        device out of memory leaves its cell to `_alone`."""
        placement = BatchRun(self, group) if len(group) > 1 else OneProcess(self)
        if scheduler.settle(self, group, rows, placement, in_lanes):
            return Outcome(INTERRUPTED, self.stop_reason)
        task, latest = group[0], status.settled(rows)
        if len(group) == 1 and task.canary and task.id in latest and latest[task.id].failed:
            return Outcome(CANARY_FAILED, _canary_reason(latest[task.id]))
        return None

    def _alone(self, block: tuple[tuple[Task, ...], ...], rows: list[StatusRow]) -> Optional[Outcome]:
        """After the lanes of ``block``: its cells that ran out of device memory or died by a signal beside other lanes
        (`status.run_alone`), each run once more with no other process on this card -- a side's in one
        process at a time, at most the bound a process, a canary in its own (its failure still stops the run)
        -- in the order they were planned."""
        alone = status.run_alone(rows)
        sides: dict[tuple[int, str, str], list[Task]] = {}
        for task in (t for group in block for t in group if t.id in alone):
            sides.setdefault((task.round, task.cell, task.id if task.canary else ""), []).append(task)
        if sides:
            self.events.note(f"{batching.IR_PASS}: {sum(map(len, sides.values()))} cell(s) ran out of device memory or died by a signal beside "
                             f"{self.setup.lanes} lanes; each runs again alone on this card")
        bound = max(batching.bound(self.setup.matrix.workloads_per_process)[0], 1)
        for side in sides.values():
            for at in range(0, len(side), bound):
                outcome = self._group(tuple(side[at:at + bound]), rows)
                if outcome is not None:
                    return outcome
        return None

    def _lanes(self, block: tuple[tuple[Task, ...], ...], kind: str, rows: list[StatusRow]) -> Optional[Outcome]:
        """Untimed groups of one lane kind (a screen's canaries, or the rest of its IR pass), up to
        ``setup.lanes`` processes at once on this card; every one has ended before this returns, so
        nothing of another kind, and no timed cell, starts beside them."""
        width = min(self.setup.lanes, len(block))
        after = ("everything else runs after them" if kind == batching.CANARIES
                 else "timed cells run alone after")
        self.events.note(f"{kind}: {sum(len(g) for g in block)} untimed cells in {len(block)} processes, "
                         f"{width} at once on this card ({self.setup.lanes_why}); {after}")
        pending, take = iter(block), threading.Lock()

        def lane() -> Optional[Outcome]:
            """One lane: the next group not taken yet, until none is left."""
            outcomes = []
            while True:
                with take:
                    group = next(pending, None)
                if group is None:
                    return next((o for o in outcomes if o is not None), None)
                outcomes.append(self._group(group, rows, in_lanes=width > 1))
        return self._in_lanes(width, lane) or self._alone(block, rows)

    def _queues(self, block: tuple[tuple[Task, ...], ...], rows: list[StatusRow]) -> Optional[Outcome]:
        """The IR pass's sides, each a queue its lanes' processes claim workloads from one at a time
        (`campaign.running.sidequeue`); lane n starts on side n mod sides and moves to the next side when
        its own runs dry, so the sides advance together and a screen stopped part way holds both sides of
        the workloads it reached (side after side, a stop left only baselines); every process has ended
        before this returns."""
        queues = [SideQueue(self, group, rows) for group in block]
        self.events.note(f"{batching.IR_PASS}: {sum(len(g) for g in block)} untimed cells of {len(block)} side(s), "
                         f"each side a queue its {self.setup.lanes} lanes claim workloads from one at a time "
                         f"({self.setup.lanes_why}); timed cells run alone after")

        def lane() -> Optional[Outcome]:
            first = self.lane % len(queues)
            for queue in queues[first:] + queues[:first]:
                if scheduler.settle(self, queue.group, rows, queue, in_lanes=True):
                    return Outcome(INTERRUPTED, self.stop_reason)
            return None
        return self._in_lanes(self.setup.lanes, lane) or self._alone(block, rows)

    def _in_lanes(self, width: int, lane) -> Optional[Outcome]:
        """``lane()`` in ``width`` threads at once, each its lane (`lane`); the first outcome of any."""
        def run(number: int) -> Optional[Outcome]:
            self._lane.value = number
            try:
                return lane()
            except BaseException:
                self.interrupt("a lane of the IR pass failed")    # the other lanes end their processes
                raise

        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="ir-lane") as pool:
            outcomes = [future.result() for future in [pool.submit(run, number) for number in range(width)]]
        return next((o for o in outcomes if o is not None), None)

    @property
    def lane(self) -> Optional[int]:
        """The IR-pass lane the calling thread runs (0-based); None outside `_lanes`."""
        return getattr(self._lane, "value", None)

    def worker_running(self, task_id: Optional[str], pgid: Optional[int]) -> None:
        """Tell the root lock which worker group runs here (None, None: none): its card and lane."""
        if self.setup.lock is not None:
            self.setup.lock.running(task_id, pgid, self.card_slot, self.lane)

    def record(self, task: Task, row: StatusRow, rows: list[StatusRow]) -> dict[str, StatusRow]:
        """Append ``task``'s row (noted with its history) to status.tsv and ``rows``; the settled rows."""
        row = self._unless_drifted(row)
        with self._recording:      # IR-pass lanes end cells at once: one row at a time
            if self.lane is not None:
                row = replace(row, note="; ".join(part for part in (
                    row.note, status.lane_note(self.lane, self.setup.lanes)) if part))
            row = rownotes.noted(row, rows)       # after its lane: a device out of memory beside others is read from it
            if self.setup.card is not None:
                row = replace(row, device=self.setup.card.uuid)
            journal.record(self.setup.root, task.id, row, self.status_path)   # its line first: a row never lacks one
            rows.append(row)
            latest = status.settled(rows)
            self.events.cell_ended(task, row, task.id in latest)
            return latest

    def _unless_drifted(self, row: StatusRow) -> StatusRow:
        """A failed row as the cell ended it, unless the harness is no longer the prepared one
        (`RunSetup.harness_drift`, asked after each failed cell until it answers): then it settles nothing
        (`rownotes.harness_changed`) and the run stops."""
        if not (row.finished and row.failed):
            return row
        if self._drift is None:
            self._drift = self.setup.harness_drift()
            if self._drift is None:
                return row
            self.interrupt(f"the harness changed under the running root ({self._drift}): put it back as "
                           "prepared and run the root again, which runs each cell that ended meanwhile again")
        return rownotes.harness_changed(row, self._drift)

    # -- one cell --------------------------------------------------------------------

    def plan(self, task: Task, cell_dir: Path) -> CellPlan:
        setup = self.setup
        tuner_mode = setup.matrix.tuner_cache
        triton_cache = setup.scratch / f"triton-{task.order}"
        tuner_cache = setup.scratch / ("tuner-shared" if tuner_mode == "shared" else f"tuner-{task.order}")
        for folder in (triton_cache, tuner_cache):
            folder.mkdir(parents=True, exist_ok=folder == tuner_cache and tuner_mode == "shared")
        sass_store = setup.scratch / "sass-by-cubin"      # one per run: see CellPlan.sass_cache_dir
        sass_store.mkdir(exist_ok=True)
        replay = None
        if task.autotune.mode == "replay" and task.autotune.source:
            replay = str(pinning.recording_dir(setup.root, task.autotune.source) / AUTOTUNE_FILE)
        return CellPlan(task=task, project_root=str(setup.project_root), root=str(setup.root),
                        cell_dir=str(cell_dir), replay_file=replay, triton_cache_dir=str(triton_cache),
                        tuner_cache_dir=str(tuner_cache), tuner_cache=tuner_mode, sass_cache_dir=str(sass_store),
                        pinned_env=dict(setup.pinned_env), plugins=setup.plugins,
                        terms=setup.matrix.terms, harness_digest=setup.harness_digest,
                        installed=setup.root.prepare.installed)

    def run_cell(self, task: Task) -> StatusRow:
        setup = self.setup
        cell_dir = setup.root.cell(task.id)
        cell_dir.mkdir(parents=True)
        plan = self.plan(task, cell_dir)
        with faults.naming(cell_dir / TASK_FILE):   # a full disk fails the write, which names no path
            canonical.write_json_new(cell_dir / TASK_FILE, plan.model_dump(mode="json"))
        args = [str(cell_dir / TASK_FILE), str(cell_dir / RESULT_FILE)]
        self.events.cell_started(task)
        self.telemetry.mark()
        wall_start, start = time.time(), time.monotonic()
        try:
            with open(cell_dir / STDOUT_LOG, "xb") as out, open(cell_dir / STDERR_LOG, "xb") as err:
                try:
                    proc = workerlaunch.start(setup, plan, args, out, err)
                except (OSError, ValueError) as exc:  # a row says why, the campaign goes on
                    ended = Ended(None, "not_started", [f"worker not started: {args}: {exc}"])
                else:
                    self.worker_running(task.id, proc.pid)
                    ended = wait_worker(proc, task.timeout_s, start, setup.grace_s, self.stop,
                                        lambda: self.stop_reason)
        finally:
            self.worker_running(None, None)
            self.drop_caches(plan)
        elapsed = time.monotonic() - start
        self.telemetry.mark()
        window = self.telemetry.window(wall_start, time.time(), cell_dir)
        return status_row(task, cell_dir, ended, elapsed, window)

    def drop_caches(self, plan: CellPlan) -> None:
        shutil.rmtree(plan.triton_cache_dir, ignore_errors=True)
        if plan.tuner_cache == "isolated":
            shutil.rmtree(plan.tuner_cache_dir, ignore_errors=True)


def _canary_reason(row: StatusRow) -> str:
    why = [f"rc {row.rc} ({row.rc_name})"]
    if row.rows_failed:
        why.append(f"{row.rows_failed} rows failed")
    if row.preflight_failed:
        why.append(f"preflight failed: {row.preflight_failed}")
    if row.note:
        why.append(row.note)
    return f"canary {row.task_id} failed: " + "; ".join(why)
