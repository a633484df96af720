"""The cores a process may run on, and the share of them an IR-pass lane's worker keeps to.

One reading of the host for every side: the runner sizes its IR-pass lanes by it
(`campaign.flows.session`), gives each lane's worker cores / lanes through `LANE_CORES_VARIABLE`
(`campaign.running.workerlaunch.lane_cores`), and the worker spreads its own threads (every
config's compile, SASS disassembly) over `worker_threads` (`campaign.plugins.warmup`). Each lane
taking every core put 16 lanes x 16 compile threads on the GPU host's 16 cores (load 58 to 75:
`receipts/h100-2026-12-06-suite16-partial/`).
"""
from __future__ import annotations

import os
from typing import Mapping

# set by the runner in a lane's worker, read by the worker: its share of the host's cores
LANE_CORES_VARIABLE = "CAMPAIGN_LANE_CORES"


def usable() -> int:
    """The cores this process may run on: its affinity mask where the OS has one, else every core."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def worker_threads(environ: Mapping[str, str] = os.environ) -> int:
    """The threads a worker spreads its own work over: its lane's share where it has one (never more
    than `usable`), else every core it may run on."""
    cores = usable()
    share = environ.get(LANE_CORES_VARIABLE, "")
    return max(1, min(cores, int(share))) if share.isdigit() else cores
