"""`campaign run ROOT --ray auto|ADDRESS`: the same per-workload groups, as Ray tasks on a cluster.

Each workload with unsettled tasks is one Ray task asking ``num_gpus=1``: a workload's cells,
every round, stay on the card Ray assigned (an A/B pair never crosses cards), and Ray places
tasks on free cards of any node. The task (`campaign.running.raynode.run_on_node`) runs the
group with `campaign.running.cards.run_group` on its node -- the same worker protocol as one
host -- and returns its new cell folders as a tar and its status rows through the object
store. The head unpacks the folders into the root (nothing outside ``cells/`` of that
workload's tasks is accepted), then appends the rows, so a row never vouches for a folder
that is not there; the session seals once, on the head, when every group completed.

Canary workloads go first and alone; a failed canary stops the campaign as on one host.
Heavier workloads are submitted first (the manifest's ``weight_s``, else matrix order), so a
long one does not start last.

A task that dies (its worker killed, its node lost: Ray raises WorkerCrashedError,
NodeDiedError, TaskCancelledError, ...) or a node that refuses the group (other code, no
such device) leaves one ``card_failed`` row per unfinished task, its note ``lost: <ray
error>``: history, never a finish, so `campaign run ROOT` -- locally or with ``--ray`` --
runs exactly those tasks again. Ray is told not to retry a task itself (``max_retries=0``):
a silent re-run would hide that a node was lost mid-measurement. The other groups go on;
the run then stops with ``RUN_FAILED check=lost`` (exit 1), the root unsealed. Cells a lost
task finished on its node never reached the head and run again.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from campaign.contract.artifacts import (CELLS_DIR, INTERRUPTED_SUFFIX, LOCK_FILE, RECEIPT_FILE, STATUS_FILE,
                                         TELEMETRY_FILE, cell_dir, first_free)
from campaign.contract.errors import CampaignError, Refused
from campaign.planning.pinning import PINNED_DIR
from campaign.running import raynode, status
from campaign.running.runner import CANARY_FAILED, COMPLETED, INTERRUPTED, Events, Outcome, RunSetup, set_aside
from campaign.running.status import StatusRow

PREFIX = "RUN_REFUSED"
POLL_S = 0.5
# Root files a node never needs: the head's own bookkeeping (rows are sent per workload).
_HEAD_ONLY = (STATUS_FILE, TELEMETRY_FILE, LOCK_FILE, RECEIPT_FILE)


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise Refused(PREFIX, "ray", f"--ray needs Ray, which is not importable here ({exc}): "
                      "pip install 'campaign[ray]'") from exc
    return ray


def ray_error(exc: BaseException) -> str:
    """The Ray error in one line: a task's own exception by its cause, the rest by their type."""
    cause = getattr(exc, "cause", None)
    if cause is not None and cause is not exc:
        return f"{type(exc).__name__}({type(cause).__name__}): {str(cause).strip().splitlines()[0][:300]}"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"


class RayExecutor:
    """`Runner`'s interface (``run``, ``interrupt``) over a Ray cluster."""

    def __init__(self, setup: RunSetup, events: Events, address: str, telemetry_interval: float):
        self.setup = setup
        self.events = events
        self.address = address
        self.telemetry_interval = telemetry_interval
        self.stop = threading.Event()
        self.stop_reason = ""
        self.lost: list[str] = []

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
            if ray.cluster_resources().get("GPU", 0) < 1:
                raise Refused(PREFIX, "ray", f"the Ray cluster at {self.address!r} declares no GPU: every task "
                              "asks num_gpus=1 (start nodes with --num-gpus)")
            return self._run(ray)
        finally:
            ray.shutdown()

    def _run(self, ray) -> Outcome:
        rows, bad = status.read(self.status_path)
        for line in bad:
            self.events.note(f"status.tsv: ignored a line that is not a row: {line}")
        tasks = tuple(sorted(self.setup.matrix.tasks, key=lambda t: t.order))
        latest = status.settled(rows)
        self.events.started(tasks, latest)
        order: dict[str, int] = {}
        for task in tasks:
            order.setdefault(task.workload, task.order)
        weight = {w.name: w.weight_s for w in self.setup.manifest.workloads}
        todo = sorted((w for w in order if any(t.id not in latest for t in tasks if t.workload == w)),
                      key=lambda w: (-(weight.get(w) or 0.0), order[w]))
        canaries = {t.workload for t in tasks if t.canary}
        remote = ray.remote(num_gpus=1, max_retries=0)(raynode.run_on_node)
        for wave in ([w for w in todo if w in canaries], [w for w in todo if w not in canaries]):
            outcome = self._wave(ray, remote, wave, rows)
            if outcome is not None:
                return outcome
        if self.lost:
            raise CampaignError(f"RUN_FAILED check=lost: {len(self.lost)} workload(s) lost on Ray: "
                                + "; ".join(self.lost) + f"; their rows say so (card_failed, 'lost: ...'); "
                                f"`campaign run {self.setup.root}` (with or without --ray) runs them again")
        return Outcome(COMPLETED)

    def _wave(self, ray, remote, workloads: list[str], rows: list[StatusRow]):
        refs = {remote.remote(self._job(w, rows)): w for w in workloads}
        canary = None
        while refs:
            if self.stop.is_set():
                for ref in refs:
                    ray.cancel(ref, force=True)
                for name in refs.values():
                    self._unfinished(name, rows, status.INTERRUPTED,
                                     f"interrupted: {self.stop_reason}: its Ray task was cancelled")
                return Outcome(INTERRUPTED, self.stop_reason)
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=POLL_S)
            for ref in ready:
                name = refs.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as exc:   # the task or its node died: named rows, resumable
                    why = ray_error(exc)
                    self.lost.append(f"{name}: {why}")
                    self._unfinished(name, rows, status.CARD_FAILED, f"lost: {why}")
                    continue
                self._merge(name, result, rows)
                if result["state"] == CANARY_FAILED:
                    canary = result["detail"]
                elif result["state"] != COMPLETED:
                    self.lost.append(f"{name}: ended {result['state']} on {result['node']}: {result['detail']}")
                    self._unfinished(name, rows, status.CARD_FAILED,
                                     f"lost: ended {result['state']} on {result['node']}: {result['detail']}")
        return Outcome(CANARY_FAILED, canary) if canary is not None else None

    def _job(self, workload: str, rows: list[StatusRow]) -> dict[str, Any]:
        """What the node needs: the root without the head's bookkeeping, the workload's settled cells
        and its rows. An unsettled folder is set aside here first, as the runner would."""
        root = self.setup.root
        latest = status.settled(rows)
        names = [p.name for p in root.iterdir() if p.is_file() and p.name not in _HEAD_ONLY]
        if (root / PINNED_DIR).is_dir():
            names.append(PINNED_DIR)
        for task in self.setup.matrix.tasks:
            if task.workload != workload:
                continue
            folder = cell_dir(root, task.id)
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
        latest = status.settled(rows)
        for task in sorted(self.setup.matrix.tasks, key=lambda t: t.order):
            if task.workload == workload and task.id not in latest:
                row = StatusRow(task_id=task.id, round=task.round, workload=task.workload, cell=task.cell,
                                rc=None, rc_name=name, note=note)
                self._append(task, row, rows)

    def _append(self, task, row: StatusRow, rows: list[StatusRow]) -> None:
        status.append(self.status_path, row)
        rows.append(row)
        self.events.cell_ended(task, row, task.id in status.settled(rows))

    def _merge(self, workload: str, result: dict[str, Any], rows: list[StatusRow]) -> None:
        """The node's cell folders into the root, then its rows: never a row without its folder."""
        node = f"{result['node']} ({result['card']})"
        ids = {t.id: t for t in self.setup.matrix.tasks if t.workload == workload}

        incoming = Path(tempfile.mkdtemp(prefix="ray-cells-", dir=self.setup.scratch))
        try:
            raynode.unpack(result["cells"], incoming, lambda parts: own_cells(parts, ids),
                           f"the Ray task of {workload} on {node}")
            for path in raynode.task_folders(incoming, ids):
                _place(incoming / path, (self.setup.root / path).parent)
        finally:
            shutil.rmtree(incoming, ignore_errors=True)
        for note in result["notes"]:
            self.events.note(f"{node}: {note}")
        returned = [StatusRow(**data) for data in result["rows"]]
        foreign = sorted({row.task_id for row in returned} - set(ids))
        # a finished row vouches for its folder: the seal would refuse the root over a missing one
        bare = sorted(row.task_id for row in returned if row.finished and row.rc_name != status.SKIPPED
                      and not cell_dir(self.setup.root, row.task_id).is_dir())
        if foreign or bare:
            raise Refused(PREFIX, "ray_rows", f"the Ray task of {workload} on {node} returned rows "
                          + (f"for tasks not its own: {', '.join(foreign)}" if foreign else
                             f"without their cell folders: {', '.join(bare)}") + "; none was written")
        for row in returned:
            self._append(ids[row.task_id], row, rows)


def own_cells(parts: tuple[str, ...], task_ids) -> bool:
    """Whether a tar member is a workload's own: ``cells/``, a folder above one of its task folders,
    a task folder (set aside or not) or something inside one."""
    if not parts or parts[0] != CELLS_DIR:
        return False
    rel = "/".join(parts[1:])
    return rel == "" or any(task_id.startswith(rel + "/") or rel == task_id or rel.startswith(task_id + "/")
                            or rel.startswith(task_id + INTERRUPTED_SUFFIX) for task_id in task_ids)


def _place(folder: Path, cells: Path) -> None:
    """Move a node's cell folder into its place under the root's cells/ (``cells``: the folder that
    holds it); a set-aside one takes the head's first free name."""
    cells.mkdir(parents=True, exist_ok=True)
    base = folder.name.split(INTERRUPTED_SUFFIX)[0]
    if INTERRUPTED_SUFFIX not in folder.name:
        if (cells / folder.name).exists():
            raise Refused(PREFIX, "ray_cells", f"{cells / folder.name} exists on the head: a node's cell "
                          "folder never replaces one")
        shutil.move(str(folder), str(cells / folder.name))
        return

    def take(target: Path) -> None:
        if target.exists():
            raise FileExistsError(target)
        shutil.move(str(folder), str(target))
    first_free(lambda n: cells / f"{base}{INTERRUPTED_SUFFIX}{n}", take)
