"""`campaign run ROOT --ray auto|ADDRESS` (and `campaign screen ... --ray`, through the same session):
the same per-workload groups, as Ray tasks on a cluster.

Each workload with unsettled tasks is one Ray task asking ``num_gpus=1``: a workload's cells,
every round, stay on the card Ray assigned (an A/B pair never crosses cards), and Ray places
tasks on free cards of any node. On a compile-only backend (``capabilities.executes`` false:
the cpu backend, FlagGems' offline plugin; nothing is launched) a task asks ``num_cpus=1``
instead -- its cells compile one after another on one core, its worker's threads held to it
(`raynode.CPU_TASK_CORES`) -- so a cluster of CPU machines runs
a screen's IR pass; its rows name no card, as a one-card run's on one host. The task (`campaign.running.raynode.run_on_node`) runs the
group with `campaign.running.cards.run_group` on its node -- the same worker protocol as one
host -- and returns its new cell folders as a tar and its status rows through the object
store. The head unpacks the folders into the root (nothing outside ``cells/`` of that
workload's tasks is accepted), then appends the rows, so a row never vouches for a folder
that is not there; the session seals once, on the head, when every group completed.

Canary workloads go first and alone; a failed canary stops the campaign as on one host.
Heavier workloads are submitted first (the manifest's ``weight_s``, else matrix order), so a
long one does not start last.

The head keeps no more tasks out than the cluster has GPUs (CPUs on a compile-only backend;
a cluster declaring none is refused before anything runs), so a submitted task is a running one, and waits for each no longer than its cells' own bounds (`campaign.running.raywatch`).
A task that dies (its worker killed, its node lost), does not answer in time, or whose node
refuses the group (other code, no such device) leaves one ``card_failed`` row per unfinished
task, noted ``lost: <what happened>: <Ray's error>``; a cluster whose GCS stops answering
leaves such rows (``lost: cluster unreachable: ...``) for every task out and starts nothing
more. Rows are history, never a finish, so `campaign run ROOT` (a screen root:
`campaign screen --resume ROOT`) -- locally or with ``--ray`` -- runs exactly those tasks again. Ray is told not to retry a task itself (``max_retries=0``):
a silent re-run would hide that a node was lost mid-measurement. The run then stops with
``RUN_FAILED check=lost`` (exit 1), the root unsealed. Cells a lost task finished on its
node never reached the head and run again.

Each task samples its own card's telemetry on its node (a compile-only one records that it has
none, as one host does) and brings the samples back with its cells (device ``<id>@<node>``); the head appends them to the root's telemetry.tsv, and the
node's telemetry.err lines to the root's, so evidence reads them as on one host.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from campaign.contract import journal, status
from campaign.contract.artifacts import (
    CELLS_DIR,
    LOCK_FILE,
    RECEIPT_FILE,
    STATUS_FILE,
    TELEMETRY_FILE,
    set_aside,
)
from campaign.contract.errors import RUN_FAILED, RUN_REFUSED, CampaignError, Refused
from campaign.contract.platforms import platform
from campaign.contract.runroot import RunRoot
from campaign.contract.status import StatusRow
from campaign.planning.pinning import PINNED_DIR
from campaign.running import batching, raynode, raywatch, scheduler
from campaign.running.raywave import OnTheNode, RayWave
from campaign.running.runner import CANARY_FAILED, COMPLETED, INTERRUPTED, Events, Outcome, RunSetup
from campaign.running.runsetup import Pace
from campaign.running.telemetry import ERR_FILE

PREFIX = RUN_REFUSED
POLL_S = 0.5
# Root files a node never needs: the head's own bookkeeping (rows are sent per workload).
_HEAD_ONLY = (STATUS_FILE, TELEMETRY_FILE, ERR_FILE, LOCK_FILE, RECEIPT_FILE)


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise Refused(PREFIX, "ray", f"--ray needs Ray, which is not importable here ({exc}): "
                      "pip install 'campaign[ray]'") from exc
    return ray


class RayExecutor:
    """`Runner`'s interface (``run``, ``interrupt``) over a Ray cluster."""

    setup_s = raywatch.SETUP_S      # a node's own setup, on top of its cells' bounds

    def __init__(self, setup: RunSetup, events: Events, address: str, telemetry_interval: float):
        self.setup = setup
        self.events = events
        self.address = address
        self.telemetry_interval = telemetry_interval
        self.stop = threading.Event()
        self.stop_reason = ""
        self.lost: list[str] = []
        self.unreachable: Optional[str] = None
        self.submitted: set[str] = set()
        self.rounds = OnTheNode()       # the loop's rounds policy: each node decides its workloads' rounds

    def interrupt(self, reason: str) -> None:
        self.stop_reason = reason
        self.stop.set()

    @property
    def status_path(self) -> Path:
        return self.setup.root / STATUS_FILE

    def run(self) -> Outcome:
        ray = _ray()
        try:
            ray.init(address=self.address, log_to_driver=False, logging_level="ERROR")
        except Exception as exc:   # a wrong address, no cluster: refused by name, nothing ran
            raise Refused(PREFIX, "ray", f"no Ray cluster at {self.address!r}: {type(exc).__name__}: {exc}") from exc
        try:
            slots = self._slots(ray)
            probe = raywatch.GcsProbe(ray.get_runtime_context().gcs_address)
            return self._run(ray, slots, probe)
        finally:
            ray.shutdown()

    @property
    def executes(self) -> bool:
        return platform(self.setup.matrix.backend).executes

    def _slots(self, ray) -> int:
        """Tasks out at once: the cluster's GPUs, or on a compile-only backend its CPUs (a task there
        asks one CPU, which its cells compile on in turn: nothing is launched)."""
        resource, ask = ("GPU", "num_gpus=1 (start nodes with --num-gpus)") if self.executes else (
            "CPU", "num_cpus=1, its backend compiling only (start nodes with --num-cpus)")
        slots = int(ray.cluster_resources().get(resource, 0))
        if slots < 1:
            raise Refused(PREFIX, "ray", f"the Ray cluster at {self.address!r} declares no {resource}: every task asks {ask}")
        return slots

    def _run(self, ray, slots: int, probe: raywatch.GcsProbe) -> Outcome:
        rows, bad = self.setup.root.status()
        for line in bad:
            self.events.note(f"status.tsv: ignored a line that is not a row: {line}")
        tasks = tuple(sorted(self.setup.matrix.tasks, key=lambda t: t.order))
        latest = status.settled(rows)
        weight = {w.name: w.weight_s for w in self.setup.manifest.workloads}
        # a workload a task, up to `slots` tasks out at once, timed or not
        self.events.started(tasks, latest, pace=Pace(untimed_at_once=slots, timed_at_once=slots, weights=weight))
        order: dict[str, int] = {}
        for task in tasks:
            order.setdefault(task.workload, task.order)
        todo = sorted((w for w in order if any(t.id not in latest for t in tasks if t.workload == w)),
                      key=lambda w: batching.heavier_first(weight, w, order[w]))
        canaries = {t.workload for t in tasks if t.canary}
        asks = {"num_gpus": 1} if self.executes else {"num_cpus": raynode.CPU_TASK_CORES}
        remote = ray.remote(max_retries=0, **asks)(raynode.run_on_node)
        placement = RayWave(self, ray, remote, slots, probe)
        for wave in ([w for w in todo if w in canaries], [w for w in todo if w not in canaries]):
            group = tuple(task for name in wave for task in tasks if task.workload == name)
            if scheduler.settle(self, group, rows, placement):
                return Outcome(INTERRUPTED, self.stop_reason)
            if placement.canary is not None:
                return placement.canary
        if self.lost:
            left = [w for w in todo if w not in self.submitted]
            raise CampaignError(f"{RUN_FAILED} check=lost: {len(self.lost)} workload(s) lost on Ray: "
                                + "; ".join(self.lost) + "; their rows say so (card_failed, 'lost: ...')"
                                + (f"; not started: {', '.join(left)}" if left else "")
                                + f"; {self._again()} (with or without --ray) runs them again")
        return Outcome(COMPLETED)

    def wave(self, ray, remote, workloads: list[str], rows: list[StatusRow], slots: int,  # noqa: C901 (a wave's wait, timeout, death and result paths side by side)
             probe: raywatch.GcsProbe) -> Optional[Outcome]:
        """``workloads`` as Ray tasks, up to ``slots`` out at once, until each answered or was lost
        (the launch of `campaign.running.raywave.RayWave`)."""
        waiting = list(workloads)
        refs: dict[Any, tuple[str, float, float]] = {}     # ref -> (workload, deadline, budget)
        canary = None
        while refs or (waiting and self.unreachable is None):
            while waiting and len(refs) < slots and self.unreachable is None and not self.stop.is_set():
                name = waiting.pop(0)
                self.submitted.add(name)
                budget = raywatch.budget_s(self._unsettled(name, rows), self.setup.grace_s, self.setup_s)
                refs[remote.remote(self._job(name, rows))] = (name, time.monotonic() + budget, budget)
            if self.stop.is_set():
                for ref in refs:
                    ray.cancel(ref, force=True)
                for name, _, _ in refs.values():
                    self._unfinished(name, rows, status.INTERRUPTED,
                                     f"interrupted: {self.stop_reason}: its Ray task was cancelled")
                return Outcome(INTERRUPTED, self.stop_reason)
            self.unreachable = probe.down()
            if self.unreachable is not None:     # nothing out will answer, and nothing more is started
                for name, _, _ in refs.values():
                    self._lose(name, rows, f"lost: {self.unreachable}")
                return None
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=POLL_S)
            for ref in ready:
                name, _, _ = refs.pop(ref)
                try:
                    result = ray.get(ref, timeout=raywatch.GET_S)
                except ray.exceptions.RayError as exc:   # the task, its node or its result lost: named, resumable
                    self._lose(name, rows, raywatch.lost_note(exc))
                    continue
                self._merge(name, result, rows)
                if result["state"] == CANARY_FAILED:
                    canary = result["detail"]
                elif result["state"] != COMPLETED:
                    self._lose(name, rows, f"lost: ended {result['state']} on {result['node']}: {result['detail']}")
            for ref, (name, deadline, budget) in list(refs.items()):
                if time.monotonic() > deadline:
                    ray.cancel(ref, force=True)
                    del refs[ref]
                    self._lose(name, rows, f"lost: no answer: its Ray task gave nothing back within {budget:.0f} s "
                               "(its cells' timeout_s and grace, and the node's setup); cancelled")
        return Outcome(CANARY_FAILED, canary) if canary is not None else None

    def _again(self) -> str:
        """The command that resumes the root: a screen root is resumed by the screen."""
        mode, root = self.setup.root.mode, self.setup.root
        return f"`campaign run {root}`" if mode in (None, "campaign") else f"`campaign {mode} --resume {root}`"

    def _unsettled(self, workload: str, rows: list[StatusRow]) -> list:
        return list(scheduler.unsettled(tuple(t for t in self.setup.matrix.tasks if t.workload == workload), rows))

    def _lose(self, workload: str, rows: list[StatusRow], note: str) -> None:
        self.lost.append(f"{workload}: {note[len('lost: '):]}")
        self._unfinished(workload, rows, status.CARD_FAILED, note)

    def _job(self, workload: str, rows: list[StatusRow]) -> dict[str, Any]:
        """What the node needs: the root without the head's bookkeeping, the workload's settled cells
        and its rows. An unsettled folder is set aside here first, as the runner would."""
        root = self.setup.root.path
        latest = status.settled(rows)
        names = [p.name for p in root.iterdir() if p.is_file() and p.name not in _HEAD_ONLY]
        if (root / PINNED_DIR).is_dir():
            names.append(PINNED_DIR)
        for task in self.setup.matrix.tasks:
            if task.workload != workload:
                continue
            folder = self.setup.root.cell(task.id)
            if task.id in latest:
                if folder.is_dir():
                    names.append(f"{CELLS_DIR}/{task.id}")
            elif folder.exists():
                moved = set_aside(folder)
                self.events.note(f"{task.id}: unfinished cell folder kept as {moved.name}; running it again")
        return {"workload": workload,
                "task_ids": sorted(t.id for t in self.setup.matrix.tasks if t.workload == workload),
                "root": raynode.pack(root, names),
                "rows": [dataclasses.asdict(row) for row in rows if row.workload == workload],
                "grace_s": self.setup.grace_s, "telemetry_interval": self.telemetry_interval}

    def _unfinished(self, workload: str, rows: list[StatusRow], name: str, note: str) -> None:
        # device "": not known (the card a lost task had never came back), yet a device
        # column, which status.tsv takes from its first row: the node rows after it keep theirs.
        # A compile-only backend's rows name no card, as on one host: no device column.
        scheduler.mark(self, tuple(t for t in self.setup.matrix.tasks if t.workload == workload), rows,
                       lambda task: StatusRow(task_id=task.id, round=task.round, workload=task.workload, cell=task.cell,
                                              rc=None, rc_name=name, note=note, device="" if self.executes else None))

    def record(self, task, row: StatusRow, rows: list[StatusRow]) -> dict[str, StatusRow]:
        """Append ``task``'s row to status.tsv and ``rows``; the settled rows."""
        journal.record(self.setup.root, task.id, row, self.status_path)   # the node's folder as placed in the root
        rows.append(row)
        latest = status.settled(rows)
        self.events.cell_ended(task, row, task.id in latest)
        return latest

    def _merge(self, workload: str, result: dict[str, Any], rows: list[StatusRow]) -> None:
        """The node's cell folders into the root, then its rows: never a row without its folder."""
        node = result["node"] if result["card"] is None else f"{result['node']} ({result['card']})"
        ids = {t.id: t for t in self.setup.matrix.tasks if t.workload == workload}

        incoming = Path(tempfile.mkdtemp(prefix="ray-cells-", dir=self.setup.scratch))
        try:
            raynode.unpack(result["cells"], incoming, lambda parts: raynode.own_cells(parts, ids),
                           f"the Ray task of {workload} on {node}")
            for path in raynode.task_folders(RunRoot(incoming), ids):     # cells/ laid out as in a root
                raynode.place(incoming / path, (self.setup.root / path).parent)
        finally:
            shutil.rmtree(incoming, ignore_errors=True)
        for note in result["notes"]:
            self.events.note(f"{node}: {note}")
        returned = [StatusRow(**data) for data in result["rows"]]
        foreign = sorted({row.task_id for row in returned} - set(ids))
        # a finished row vouches for its folder: the seal would refuse the root over a missing one
        bare = sorted(row.task_id for row in returned if row.finished and row.rc_name != status.SKIPPED
                      and not self.setup.root.cell(row.task_id).is_dir())
        if foreign or bare:
            raise Refused(PREFIX, "ray_rows", f"the Ray task of {workload} on {node} returned rows "
                          + (f"for tasks not its own: {', '.join(foreign)}" if foreign else
                             f"without their cell folders: {', '.join(bare)}") + "; none was written")
        raynode.append_telemetry(self.setup.root / TELEMETRY_FILE, self.setup.root / ERR_FILE, workload, node, result)
        for row in returned:
            self.record(ids[row.task_id], row, rows)
