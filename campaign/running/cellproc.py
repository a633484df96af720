"""One worker process under a timeout: how it ended, by name, with its whole group gone.

The worker runs in its own session, so its process group holds it and anything
it started. Ending it is TERM to the group, a grace period for the worker, then
KILL to whatever is left: a timeout that TERM settles is 124 (``timed_out``),
one that needs KILL is 137 (``killed``), a stop of the runner is 130
(``interrupted``). A worker that died by a signal on its own is 128 + N, named
``signal_<NAME>``. Processes left in the group after a normal exit are ended
too and noted: nothing of a cell outlives its row.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from campaign.running import status


@dataclass
class Ended:
    rc: Optional[int]                    # None: no process ran
    name: str
    notes: list[str] = field(default_factory=list)


def end_group(pgid: int, grace_s: float, leader: Optional[subprocess.Popen] = None) -> Optional[str]:
    """TERM a process group, wait ``grace_s``, KILL what is left; the signal that ended it, or None
    when nothing in it was alive.

    With ``leader`` (our own child, which leads the group), the wait is for the leader, whose
    exit is what TERM asked for: a child not yet reaped still counts in its group. Whatever
    else is left of the group is killed, and the leader is reaped. Without it (a group whose
    leader is not ours), the wait is for the whole group to be gone."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        if leader is not None:
            leader.wait()
        return None
    how = "SIGTERM" if _ended(pgid, grace_s, leader) else "SIGKILL"
    try:
        os.killpg(pgid, signal.SIGKILL)   # stragglers of the group, or the leader itself
    except ProcessLookupError:
        pass
    if leader is not None:
        leader.wait()
    return how


def _ended(pgid: int, grace_s: float, leader: Optional[subprocess.Popen]) -> bool:
    if leader is not None:
        try:
            leader.wait(timeout=grace_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def wait_worker(proc: subprocess.Popen, timeout_s: float, start: float, grace_s: float,
                stop: threading.Event, stop_reason: Callable[[], str]) -> Ended:
    """Wait for the worker; end it on timeout (measured from ``start``, monotonic) or when ``stop`` is set."""
    while True:
        try:
            rc = proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            pass
        if stop.is_set():
            how = end_group(proc.pid, grace_s, leader=proc)
            return Ended(status.RC_INTERRUPTED, status.INTERRUPTED,
                         [f"runner stopped ({stop_reason()}); worker group ended with {how}"])
        if time.monotonic() - start >= timeout_s:
            how = end_group(proc.pid, grace_s, leader=proc)
            rc = status.RC_KILLED if how == "SIGKILL" else status.RC_TIMED_OUT
            return Ended(rc, status.rc_name(rc, timed_out=True),
                         [f"timeout {timeout_s:g}s; worker group ended with {how}"
                          + ("" if how == "SIGTERM" else f" after {grace_s:g}s grace")])
    notes = []
    how = end_group(proc.pid, min(grace_s, 2.0))
    if how:
        notes.append(f"processes left in the worker group after it exited were ended with {how}")
    return Ended(status.shell_rc(rc), status.rc_name(rc), notes)
