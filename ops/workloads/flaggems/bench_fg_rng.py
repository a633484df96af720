"""Benchmarks of FlagGems random ops: dropout (p=0.5, training) and rand.

Both read the device generator's seed and offset on every call, which a graph capture
refuses: under timer graph every row of these falls back to direct timing and is marked
BENCHMARK_DIRECT_NO_CUDAGRAPH. Deny-list keys: ``bench_dropout``, ``bench_rand``.
"""
import torch

from fg_common import gems, randn

P = 0.5


def test_bench_dropout(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("dropout"):
            bench.measure(case, lambda: torch.nn.functional.dropout(x, P, training=True))


def test_bench_rand(bench):
    for case in bench.cases():
        with gems("rand"):
            bench.measure(case, lambda: torch.rand(case.shape, dtype=case.dtype, device=bench.device))
