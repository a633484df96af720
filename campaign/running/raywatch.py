"""How long the head waits for a Ray task, and how it names one that never answers.

A Ray task holds a workload's unsettled cells, each bounded on its node by its own
``timeout_s`` plus the runner's grace; the task is bounded by their sum plus `SETUP_S`
(unpacking the root, the node's code check, the worker's start), counted from its
submission -- the head submits no more tasks than the cluster has GPUs (CPUs on a
compile-only backend), so a submitted task is a running one. Past that deadline it is cancelled and named, never waited on.

A dead cluster raises nothing for a task not yet placed: its reference just never
resolves, and Ray ends a driver whose GCS has been unreachable for 60 s
(``gcs_rpc_server_reconnect_timeout_s``) without a word to the caller. So the head
probes the GCS port itself every `PROBE_S` and, once it has refused for
`UNREACHABLE_S`, names every outstanding task ``cluster unreachable`` while the process
can still write its rows.
"""
from __future__ import annotations

import socket
import time
from typing import Callable, Iterable, Optional

SETUP_S = 120.0
PROBE_S = 1.0
UNREACHABLE_S = 10.0      # well inside Ray's own 60 s, after which the driver is ended
GET_S = 60.0              # a ready result is already local: fetching it is bounded all the same

# Ray's errors by name, each with what it means for the task's rows. Subclasses first:
# OwnerDiedError and ObjectFetchTimedOutError are ObjectLostErrors.
KINDS = (("NodeDiedError", "node lost"), ("WorkerCrashedError", "worker crashed"),
         ("OwnerDiedError", "result lost"), ("ObjectFetchTimedOutError", "result lost"),
         ("ObjectLostError", "result lost"), ("GetTimeoutError", "no answer"),
         ("TaskCancelledError", "cancelled"), ("RayTaskError", "failed on its node"),
         ("RaySystemError", "Ray system error"))


def kind(exc: BaseException) -> str:
    """What a Ray error says happened to the task, by the error's class name (its bases too)."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    for name, meaning in KINDS:
        if name in names:
            return meaning
    return "lost"


def ray_error(exc: BaseException) -> str:
    """The Ray error in one line: a task's own exception by its cause, the rest by their type."""
    cause = getattr(exc, "cause", None)
    if cause is not None and cause is not exc:
        return f"{type(exc).__name__}({type(cause).__name__}): {str(cause).strip().splitlines()[0][:300]}"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"


def lost_note(exc: BaseException) -> str:
    return f"lost: {kind(exc)}: {ray_error(exc)}"


def budget_s(tasks: Iterable, grace_s: float, setup_s: float = SETUP_S) -> float:
    """Seconds a Ray task may take: each unsettled cell's own timeout and grace, plus the setup."""
    return setup_s + sum(task.timeout_s + grace_s for task in tasks)


class GcsProbe:
    """Whether the cluster's GCS still takes a connection; ``down()`` is the reason once it has
    refused for ``unreachable_s`` without a break, None while it answers (or not for that long)."""

    def __init__(self, address: str, unreachable_s: float = UNREACHABLE_S, every_s: float = PROBE_S,
                 clock: Callable[[], float] = time.monotonic):
        host, _, port = address.rpartition(":")
        self.host, self.port = host, int(port)
        self.unreachable_s, self.every_s, self.clock = unreachable_s, every_s, clock
        self.failing_since: Optional[float] = None
        self.last: Optional[float] = None
        self.error = ""

    def down(self) -> Optional[str]:
        now = self.clock()
        if self.last is None or now - self.last >= self.every_s:
            self.last = now
            try:
                with socket.create_connection((self.host, self.port), timeout=min(self.every_s, 2.0)):
                    self.failing_since = None
            except OSError as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                if self.failing_since is None:
                    self.failing_since = now
        if self.failing_since is not None and now - self.failing_since >= self.unreachable_s:
            return (f"cluster unreachable: the GCS at {self.host}:{self.port} refused every connection for "
                    f"{now - self.failing_since:.0f} s ({self.error})")
        return None
