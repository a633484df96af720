"""Every test of a cell starts from one random state: Python's ``random``, numpy's global generator and
torch's generators (the host's and each card's; offline the card's philox state,
`campaign.plugins.offline_torch.PhiloxState`, which ``torch.manual_seed`` reaches through the shimmed
``torch.cuda.manual_seed_all``) are seeded with `SEED` before each test's setup, in the benchmark
session and in the correctness session.

Why: a benchmark that draws its inputs from an unseeded generator hands every cell other inputs, and
Python's ``random`` is seeded from the OS in each process (PYTHONHASHSEED does not reach it). FlagGems
5.0.2's benchmarks draw from it: pad's widths (``random.randint(0, 10)``), diag's diagonal,
count_nonzero's dim, grouped mm's M (``random.randint(1, 16384)``), index_select's index (numpy),
select_scatter's index, linspace's steps. Two cells of one switch then compile other specialisations of
one kernel -- the sealed 2-core whole-suite screen read pad, diag and count_nonzero IR_CHANGED under
DISABLE_MMA_V3, which reroutes only tl.dot -- and on a card time other work under one shape key.

Before each test, not once a session: a test's draws then do not depend on which tests ran before it
in its session or its process (a batch runs several workloads in one). A test that seeds itself still
does, after this. Not reached: a generator a test builds for itself (``random.Random()``,
``torch.Generator()``, ``numpy.random.default_rng()``) without a seed.
"""
from __future__ import annotations

import random
import sys

import pytest

SEED = 0


def seed_all(seed: int = SEED) -> tuple[str, ...]:
    """Seed every generator a benchmark draws its inputs from that is loaded here; which ones were."""
    random.seed(seed)
    done = ["random"]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)
        done.append("numpy.random")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)             # the host's generator and every card's (queued until CUDA starts)
        done.append("torch")
    return tuple(done)


class SeedsPlugin:
    def __init__(self, log=None):
        self.log = log
        self.tests = 0
        self.seeded: tuple[str, ...] = ()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.seeded = seed_all()
        self.tests += 1

    def pytest_unconfigure(self, config):
        if self.log is not None and self.tests:
            self.log.line(f"seeds: {', '.join(self.seeded)} seeded with {SEED} before each of {self.tests} test(s)")


def make(ctx) -> SeedsPlugin:
    return SeedsPlugin(ctx.log if ctx is not None else None)
