"""One worker process watched to its end: how it ended, by name, with its whole group gone.

The worker runs in its own session, so its process group holds it and anything
it started. Ending it is TERM to the group, a grace period for the worker, then
KILL to whatever is left: a timeout that TERM settles is 124 (``timed_out``),
one that needs KILL is 137 (``killed``), a stop of the runner is 130
(``interrupted``). A worker that died by a signal on its own is 128 + N, named
``signal_<NAME>``. Processes left in the group after a normal exit are ended
too and noted: nothing of a cell outlives its row.

`watch` is the one poll loop, for a single cell (`wait_worker`) and for a batch of
workloads in one process (`campaign.running.batch`), which differ only in whose clock
runs: a cell's runs from its spawn; a batch's moves to each workload in turn, read
from its progress file by the ``clock`` callback. Each poll asks, in this order: did
the process exit; was the runner stopped; has the running clock passed its timeout.
The stop comes before the clock is read, so it is honoured within one poll at any
moment -- inside a workload, between two, or after the last -- and what ended before
the group was ended is read after it, never counted as ended by the stop.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from campaign.contract import status

POLL_S = 0.2            # how late a stop, a timeout or an exit is seen, at most
LEFT_GRACE_S = 2.0      # for what a worker that exited left in its group: it has nothing left to write
GONE_STATES = frozenset("ZX")   # /proc/<pid>/stat states of a process that runs no more: zombie, dead
KILLED_S = 5.0          # at most, for a SIGKILLed group to be gone: the kernel acts on it as each member runs

EXITED, STOPPED, TIMED_OUT = "exited", "stopped", "timed_out"


@dataclass
class Ended:
    rc: Optional[int]                    # None: no process ran
    name: str
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Clock:
    """The seconds that run now: since ``since`` (monotonic), at most ``timeout_s``; ``owner`` is
    whose they are (a batch's task; None for a single cell)."""

    since: float
    timeout_s: float
    owner: object = None


@dataclass(frozen=True)
class Watched:
    state: str                           # EXITED | STOPPED | TIMED_OUT
    rc: Optional[int] = None             # EXITED: Popen's returncode (negative: killed by that signal)
    how: Optional[str] = None            # the signal that ended the group (for EXITED: what was left in it)
    clock: Optional[Clock] = None        # TIMED_OUT: the clock that ran out


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
    _until_dead(pgid, KILLED_S)
    return how


def _until_dead(pgid: int, limit_s: float) -> None:
    """Wait until no member of the group runs. A SIGKILL is sent, not done: a straggler acts on it once
    it is scheduled, which on a loaded host came after the caller had moved on (a cell's worker still
    alive beside the next one). A member that is only a zombie (reaped by whoever adopted it) counts as
    gone."""
    deadline = time.monotonic() + limit_s
    while _running_in(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _running_in(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return False                      # no process table to tell a zombie from a runner: not waited on
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue                      # gone while we looked
        if int(fields[2]) == pgid and fields[0] not in GONE_STATES:
            return True
    return False


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


def watch(proc: subprocess.Popen, clock: Callable[[], Clock], grace_s: float, stop: threading.Event,
          poll_s: float = POLL_S) -> Watched:
    """Wait for ``proc`` (our child, leading its own group); end its group when ``stop`` is set or
    when the clock ``clock()`` gives now has run out. The group is gone when this returns."""
    while True:
        try:
            rc = proc.wait(timeout=poll_s)
            break
        except subprocess.TimeoutExpired:
            pass
        if stop.is_set():
            return Watched(STOPPED, how=end_group(proc.pid, grace_s, leader=proc))
        now = clock()
        if time.monotonic() - now.since >= now.timeout_s:
            return Watched(TIMED_OUT, how=end_group(proc.pid, grace_s, leader=proc), clock=now)
    return Watched(EXITED, rc=rc, how=end_group(proc.pid, min(grace_s, LEFT_GRACE_S)))


def stopped_note(reason: str, how: Optional[str]) -> str:
    return f"runner stopped ({reason}); worker group ended with {how}"


def timeout_note(timeout_s: float, how: Optional[str], grace_s: float, whose: str = "") -> str:
    return (f"timeout {timeout_s:g}s{whose}; worker group ended with {how}"
            + ("" if how == "SIGTERM" else f" after {grace_s:g}s grace"))


def timed_out(how: Optional[str]) -> int:
    return status.RC_KILLED if how == "SIGKILL" else status.RC_TIMED_OUT


def wait_worker(proc: subprocess.Popen, timeout_s: float, start: float, grace_s: float,
                stop: threading.Event, stop_reason: Callable[[], str]) -> Ended:
    """Wait for a one-cell worker; end it on timeout (measured from ``start``, monotonic) or when ``stop`` is set."""
    seen = watch(proc, lambda: Clock(start, timeout_s), grace_s, stop)
    if seen.state == STOPPED:
        return Ended(status.RC_INTERRUPTED, status.INTERRUPTED, [stopped_note(stop_reason(), seen.how)])
    if seen.state == TIMED_OUT:
        rc = timed_out(seen.how)
        return Ended(rc, status.rc_name(rc, timed_out=True), [timeout_note(timeout_s, seen.how, grace_s)])
    notes = []
    if seen.how:
        notes.append(f"processes left in the worker group after it exited were ended with {seen.how}")
    return Ended(status.shell_rc(seen.rc), status.rc_name(seen.rc), notes)
