"""The plugin plan of a cell, derived from the backend -- never a hand-copied list.

A hand-copied list drifted twice in the earlier harness, once dropping the timing
plugin so every sealed number was silently direct-timed; a missing plugin cannot
announce itself. The order is part of the caliber:

1. vendor compat plugins: they rewrite collection-time markers, so nothing may read
   the item list before them;
2. compile_only, only where the backend does not execute (it installs the driver
   before anything compiles);
3. run_identity, seeds, ir_capture, autotune, timing, dobench, outcomes.

timing (the ``bench`` fixture) and dobench (a test's own ``triton.testing.do_bench``
calls) both write rows.json: the task's provider picks the one that does
(`timing_plugin`); the other is built as a `Standby` with no hooks, so the plan stays
one list derived from the backend alone.

The worker builds every planned plugin but outcomes for the benchmark session, and
outcomes and seeds for the correctness session (`campaign.worker`): a benchmark node
passing is not a correctness verdict.
"""
from __future__ import annotations

from campaign.backends.base import Backend

COMPILE_ONLY = "campaign.plugins.compile_only"
OUTCOMES = "campaign.plugins.outcomes"
TIMING = "campaign.plugins.timing"
DOBENCH = "campaign.plugins.dobench"
FLAGGEMS_BENCH = "campaign.plugins.flaggems_bench"     # dobench with FlagGems' Benchmark roles and keys
SEEDS = "campaign.plugins.seeds"           # every test from one random state; the correctness session's too
COMMON = (
    "campaign.plugins.run_identity",
    SEEDS,
    "campaign.plugins.ir_capture",
    "campaign.plugins.autotune",
    TIMING,
    DOBENCH,
    FLAGGEMS_BENCH,
    OUTCOMES,
)
# Providers whose benchmark test times itself with triton.testing.do_bench.
DOBENCH_PROVIDERS = frozenset({"pytest"})


def timing_plugin(provider: str) -> str:
    """The one plugin that writes a cell's rows.json for ``provider``."""
    if provider == "flaggems_upstream":
        return FLAGGEMS_BENCH
    return DOBENCH if provider in DOBENCH_PROVIDERS else TIMING


class Standby:
    """A planned plugin that stands aside in this cell: another one times its provider."""

    def __init__(self, name: str, provider: str):
        self.name = name
        self.provider = provider

    def __repr__(self) -> str:
        return f"Standby({self.name}: {self.provider} is timed by {timing_plugin(self.provider)})"


def plugin_plan(backend: Backend) -> tuple[str, ...]:
    compile_only = () if backend.capabilities.executes else (COMPILE_ONLY,)
    return tuple(backend.compat_plugins) + compile_only + COMMON
