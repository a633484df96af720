"""The worker ends when the runner that started it dies.

The worker runs in its own session, so that the runner can end its whole group
on a timeout; a runner killed outright (SIGKILL, the OOM killer) ends nothing,
and its worker would run on, with no timeout, until a later `campaign run`
took over the stale lock. On Linux the worker asks the kernel for SIGKILL when
its parent dies (``PR_SET_PDEATHSIG``). SIGKILL rather than a gentler signal:
a Python handler runs only between bytecodes of the main thread, which a hung
compile or kernel launch never reaches. The kernel fires on the death of the
parent *thread* that started the worker; the runner starts workers from its
main thread, which lives as long as the runner does.

The request covers the time after it. A runner that died before -- between
starting the worker and the request -- is found through its lock: run.lock
names the pid of the runner holding the root, and a worker whose parent is
another pid was orphaned already (`orphaned`).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Optional

from campaign.contract import canonical
from campaign.contract.artifacts import LOCK_FILE
from campaign.contract.runroot import RunRoot

PR_SET_PDEATHSIG = 1   # <linux/prctl.h>


def bind_to_parent() -> Optional[str]:
    """Ask for SIGKILL on the parent's death; None when granted, else why not (a note for the cell's log)."""
    if not sys.platform.startswith("linux"):
        return (f"no parent-death signal on {sys.platform}: if the runner is killed, this worker runs on "
                "until `campaign run` takes over the stale lock")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}"
    return None


def orphaned(root: RunRoot) -> Optional[str]:
    """Why the runner that started this worker is gone already; None when it is not, or no lock says."""
    try:
        holder = int(canonical.read_json(root.file(LOCK_FILE))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None   # no runner's lock: the worker started by hand or by a test
    parent = os.getppid()
    if parent == holder:
        return None
    return (f"{LOCK_FILE} names runner pid {holder}, this worker's parent is pid {parent}: "
            "the runner that started it is gone")
