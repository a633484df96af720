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
from campaign.running.lock import end_group


@dataclass
class Ended:
    rc: Optional[int]                    # None: no process ran
    name: str
    notes: list[str] = field(default_factory=list)


def end_worker(proc: subprocess.Popen, grace_s: float) -> str:
    """TERM the worker's group, wait ``grace_s`` for the worker, KILL what is left; the signal that did it."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace_s)
        how = "SIGTERM"
    except subprocess.TimeoutExpired:
        how = "SIGKILL"
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # stragglers of the group, or the worker itself
    except ProcessLookupError:
        pass
    proc.wait()
    return how


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
            how = end_worker(proc, grace_s)
            return Ended(status.RC_INTERRUPTED, status.INTERRUPTED,
                         [f"runner stopped ({stop_reason()}); worker group ended with {how}"])
        if time.monotonic() - start >= timeout_s:
            how = end_worker(proc, grace_s)
            rc = status.RC_TIMED_OUT if how == "SIGTERM" else status.RC_KILLED
            return Ended(rc, status.rc_name(rc, timed_out=True),
                         [f"timeout {timeout_s:g}s; worker group ended with {how}"
                          + ("" if how == "SIGTERM" else f" after {grace_s:g}s grace")])
    notes = []
    how = end_group(proc.pid, min(grace_s, 2.0))
    if how:
        notes.append(f"processes left in the worker group after it exited were ended with {how}")
    return Ended(status.shell_rc(rc), status.rc_name(rc), notes)
