"""<root>/run.lock: one `run` per root.

The lock is created with O_EXCL and holds JSON: pid, host, start time, and --
while a cell runs -- the worker's process group and task id, so that a runner
that takes over a stale lock can end a worker orphaned by a killed runner
before re-running its cell. A lock whose pid is dead on this host is stale: it
is reported, then taken over. A lock from another host cannot be judged from
here and is refused. The lock is not an artifact: the receipt leaves it out.
The seal removes it only after the receipt is in place and every file and
folder is read-only, so a lock found beside receipt.json marks a seal a crash
stopped, which `campaign run` takes over and finishes (`campaign.sealing.receipt.complete`).

Several cards (`campaign.running.cards`) share the root's one lock: its ``workers`` maps each
card's slot to the worker group running there, so a takeover ends every orphan, one per
card; a single-card run writes the lock as before (``worker_pgid``/``task_id``). IR-pass
lanes (several untimed processes at once on one card, `campaign.running.runner.Runner`) are
entries of ``workers`` too, keyed ``<slot>/<lane>`` (``/<lane>`` on a single-card run).
"""
from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional

from campaign.contract import canonical, regular
from campaign.contract.artifacts import LOCK_FILE
from campaign.contract.errors import RUN_REFUSED, Refused
from campaign.contract.runroot import RunRoot
from campaign.running.cellproc import end_group


@dataclass(frozen=True)
class Holder:
    pid: int
    host: str
    started_utc: str
    worker_pgid: Optional[int] = None
    task_id: Optional[str] = None
    workers: tuple[tuple[str, str, int], ...] = ()    # (card slot[/lane], task id, worker pgid) per busy one

    def groups(self) -> list[tuple[str, int]]:
        """(task id, worker pgid) of every worker group the holder had running."""
        found = [(task, pgid) for _slot, task, pgid in self.workers]
        if self.worker_pgid:
            found.append((self.task_id or "?", self.worker_pgid))
        return found

    def describe(self) -> str:
        text = f"pid {self.pid} on {self.host} since {self.started_utc}"
        running = [task for task, _pgid in self.groups()]
        return text + (f" (running {', '.join(running)})" if running else "")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> Optional[Holder]:
    try:
        data = canonical.read_json(path)
        workers = tuple((str(slot), str(entry["task_id"]), int(entry["worker_pgid"]))
                        for slot, entry in sorted((data.get("workers") or {}).items()))
        return Holder(int(data["pid"]), str(data["host"]), str(data["started_utc"]),
                      data.get("worker_pgid"), data.get("task_id"), workers)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _kind(path: Path) -> str:
    """What an unreadable lock is, where it is no regular file (a FIFO is never opened: it would wait)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return ""
    return "" if stat.S_ISREG(mode) else f" ({regular.describe(path, mode)})"


def _is_worker_group(pgid: int, settle_s: float = 0.5) -> bool:
    """Guard against pid reuse: only a group led by a campaign worker is ended. An empty cmdline
    is read again for up to ``settle_s``: the kernel fills it a moment after exec begins (3 of 300
    fresh spawns read empty on a 2-core machine), and a zombie's stays empty."""
    deadline = time.monotonic() + settle_s
    while True:
        try:
            cmdline = Path(f"/proc/{pgid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            return False
        if cmdline or time.monotonic() >= deadline:
            return b"campaign.worker" in cmdline
        time.sleep(0.01)


class RunLock:
    def __init__(self, root: RunRoot, report: Callable[[str], None], grace_s: float = 10.0):
        self.path = root.file(LOCK_FILE)
        self.report = report
        self.grace_s = grace_s
        self.holder = Holder(os.getpid(), socket.gethostname(),
                             datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.held = False
        self._busy: dict[str, tuple[str, int]] = {}
        self._update = threading.Lock()     # one card's update never overwrites another's

    def _payload(self, holder: Holder) -> str:
        data = {"pid": holder.pid, "host": holder.host, "started_utc": holder.started_utc,
                "worker_pgid": holder.worker_pgid, "task_id": holder.task_id}
        if holder.workers:
            data["workers"] = {str(slot): {"task_id": task, "worker_pgid": pgid}
                               for slot, task, pgid in holder.workers}
        return json.dumps(data, sort_keys=True) + "\n"

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(self._payload(self.holder))
        self.held = True
        return True

    def acquire(self) -> None:
        if self._create():
            return
        other = _read(self.path)
        if other is None:
            raise Refused(RUN_REFUSED, "lock", f"{self.path} exists and cannot be read{_kind(self.path)}; "
                          "if no run is active, inspect and remove it by hand")
        if other.host != self.holder.host:
            raise Refused(RUN_REFUSED, "lock", f"{self.path}: held by {other.describe()}; "
                          "a lock from another host cannot be judged stale from here")
        if pid_alive(other.pid):
            raise Refused(RUN_REFUSED, "lock", f"another run holds this root: {other.describe()}")
        self._take_over(other)

    def _take_over(self, stale: Holder) -> None:
        self.report(f"RUN_LOCK stale lock taken over: {stale.describe()} is no longer running")
        for task_id, pgid in stale.groups():
            if not _is_worker_group(pgid):
                continue
            how = end_group(pgid, self.grace_s)
            if how:
                self.report(f"RUN_LOCK ended the orphaned worker group {pgid} of {task_id} with {how}")
        # Rename first: of two runners judging the same stale lock, only one wins the rename.
        aside = self.path.with_name(f"{LOCK_FILE}.stale-{os.getpid()}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            raise Refused(RUN_REFUSED, "lock", "another run took over the stale lock first") from None
        moved = _read(aside)
        if moved != stale:
            try:
                os.link(aside, self.path)   # put the live lock back
            except FileExistsError:
                pass
            finally:
                aside.unlink()
            raise Refused(RUN_REFUSED, "lock", "another run took over the stale lock first")
        aside.unlink()
        if not self._create():
            raise Refused(RUN_REFUSED, "lock", "another run took over the stale lock first")

    def running(self, task_id: Optional[str], pgid: Optional[int], card: Optional[int] = None,
                lane: Optional[int] = None) -> None:
        """Record (or clear) the worker group in the lock -- of ``card`` when several run, of
        ``lane`` when IR-pass processes run at once; replaced atomically, one update at a time."""
        with self._update:
            if not self.held:
                return
            base = (self.holder.pid, self.holder.host, self.holder.started_utc)
            if card is None and lane is None:
                self.holder = Holder(*base, pgid, task_id)
            else:
                key = ("" if card is None else str(card)) + ("" if lane is None else f"/{lane}")
                if task_id is None or pgid is None:
                    self._busy.pop(key, None)
                else:
                    self._busy[key] = (task_id, pgid)
                self.holder = Holder(*base, workers=tuple((slot, *self._busy[slot]) for slot in sorted(self._busy)))
            tmp = self.path.with_name(f"{LOCK_FILE}.tmp-{os.getpid()}")
            tmp.write_text(self._payload(self.holder), encoding="utf-8")
            os.replace(tmp, self.path)

    def release(self) -> None:
        with self._update:
            self._release()

    def _release(self) -> None:
        if self.held:
            self.held = False
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
