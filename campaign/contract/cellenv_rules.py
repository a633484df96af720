"""Which variables a switch cell may set: one pure rule, called by the manifest's validator.

A cell's env is applied last (`campaign.running.cellenv.cell_env`), so without this
rule it wins over everything the harness controls: a cell could preload a
library into the worker, put code on the interpreter's path, write IR dumps
outside the run root, share a cache the runner isolates, pick another device,
or override a pinned caliber setting -- and validate, run and report would all
exit 0. The one exception: a pinned variable may be set when it is the switch
itself (``switch.name``), e.g. a campaign over TRITON_DEFAULT_FP_FUSION. What the
harness pins (``PINNED``, ``GEMS_VENDOR``) is defined here, beside the rule that
protects it; `campaign.running.cellenv` sets it on every cell.
"""
from __future__ import annotations

from typing import Mapping

from campaign.contract.platforms import PLATFORMS, visibility_variables

# FlagGems picks its vendor from GEMS_VENDOR first; without it, it probes by running
# vendor tools in subprocesses with no timeout, which can hang an import (seeds) --
# and which vendor it dispatches to is part of what a number means.
GEMS_VENDOR = {p.name: p.gems_vendor for p in PLATFORMS if p.gems_vendor is not None}

PINNED = {
    # Triton 3.9 warns when unset and 3.10 flips its default: never leave it implicit.
    "TRITON_DEFAULT_FP_FUSION": "1",
    # FlagGems reads it at import; FlagTune's exhaustive search is a different caliber.
    "USE_FLAGTUNE": "0",
    # Logs are parsed and hashed: no ANSI, no buffering that reorders stdout and stderr.
    "NO_COLOR": "1",
    "PYTHONUNBUFFERED": "1",
    # Set iteration order can decide kernel order, and with it cache and log order.
    "PYTHONHASHSEED": "0",
}

# Variables that make the dynamic loader, a shell or the interpreter run or load
# code the manifest does not show, or move per-user state under the worker.
_EXACT = {
    "PATH": "it selects which programs run",
    "BASH_ENV": "a shell sources the file it names, running code in every subprocess shell",
    "ENV": "a shell sources the file it names, running code in every subprocess shell",
    "HOME": "it moves every per-user config and cache under the worker",
    "TRITON_HOME": "it moves Triton's caches; the runner gives each cell fresh ones",
    "CUDA_DEVICE_ORDER": "it decides which device an index names; the device is the manifest's `device`",
}
_PREFIXES = {
    "LD_": "a dynamic-loader variable loads code into the worker",
    "PYTHON": "an interpreter variable changes what code the worker imports or how it runs",
    "XDG_": "a per-user config or cache location",
}


def _pinned() -> dict[str, str]:
    """Every variable the harness sets on every cell (caches aside), with why."""
    pinned = {name: f"the harness pins it to {value!r} on every cell" for name, value in PINNED.items()}
    pinned["GEMS_VENDOR"] = f"the harness pins it from device.backend ({', '.join(sorted(GEMS_VENDOR.values()))})"
    return pinned


def refusal(name: str, switch_name: str) -> str | None:
    """Why a cell may not set ``name``, or None when it may."""
    upper = name.upper()     # the loader ignores ld_preload, but nothing legitimate is spelled so
    if upper in _EXACT:
        return _EXACT[upper]
    if upper in visibility_variables():
        return "it selects the device; the device is the manifest's `device`"
    for prefix, why in _PREFIXES.items():
        if upper.startswith(prefix):
            return why
    if "DUMP" in upper:
        return "it makes the compiler dump files outside the run root, unrecorded"
    if upper.endswith("_CACHE_DIR"):
        return "a cache location; the runner gives each cell fresh caches"
    pinned = _pinned()
    if upper in pinned and name != switch_name:
        return f"{pinned[upper]}; only the switch itself (switch.name) may set it"
    return None


def problems(switch_name: str, cells: Mapping[str, Mapping[str, str]]) -> list[tuple[tuple, str]]:
    """(key path below the switch, message) for every variable a cell may not set."""
    found = []
    for cell, env in cells.items():
        for name in env:
            why = refusal(name, switch_name)
            if why is not None:
                found.append((("cells", cell, name), f"a cell may not set {name}: {why}"))
    return found
