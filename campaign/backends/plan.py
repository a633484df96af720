"""The plugin plan of a cell, derived from the backend -- never a hand-copied list.

A hand-copied list drifted twice in the earlier harness, once dropping the timing
plugin so every sealed number was silently direct-timed; a missing plugin cannot
announce itself. The order is part of the caliber:

1. vendor compat plugins: they rewrite collection-time markers, so nothing may read
   the item list before them;
2. compile_only, only where the backend does not execute (it installs the driver
   before anything compiles);
3. run_identity, ir_capture, autotune, timing, outcomes.

The worker builds every planned plugin but outcomes for the benchmark session, and
outcomes alone for the correctness session (`campaign.worker`): a benchmark node
passing is not a correctness verdict.
"""
from __future__ import annotations

from campaign.backends.base import Backend

COMPILE_ONLY = "campaign.plugins.compile_only"
OUTCOMES = "campaign.plugins.outcomes"
COMMON = (
    "campaign.plugins.run_identity",
    "campaign.plugins.ir_capture",
    "campaign.plugins.autotune",
    "campaign.plugins.timing",
    OUTCOMES,
)


def plugin_plan(backend: Backend) -> tuple[str, ...]:
    compile_only = () if backend.capabilities.executes else (COMPILE_ONLY,)
    return tuple(backend.compat_plugins) + compile_only + COMMON
