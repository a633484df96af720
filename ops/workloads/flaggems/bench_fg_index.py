"""Benchmarks of FlagGems indexing on an [M, N] input: gather (dim 1, an [M, N//2] index),
index_select (dim 0, M//2 rows), masked_select (a random mask keeping about half).
Deny-list keys: ``bench_gather``, ``bench_index_select``, ``bench_masked_select``.
"""
import torch

from fg_common import gems, randn


def test_bench_gather(bench):
    for case in bench.cases():
        m, n = case.shape
        x = randn((m, n), case.dtype, bench.device)
        index = torch.randint(0, n, (m, max(1, n // 2)), device=bench.device)
        with gems("gather"):
            bench.measure(case, lambda: torch.gather(x, 1, index))


def test_bench_index_select(bench):
    for case in bench.cases():
        m, n = case.shape
        x = randn((m, n), case.dtype, bench.device)
        index = torch.randint(0, m, (max(1, m // 2),), device=bench.device)
        with gems("index_select"):
            bench.measure(case, lambda: torch.index_select(x, 0, index))


def test_bench_masked_select(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        mask = torch.rand(case.shape, device=bench.device) < 0.5
        with gems("masked_select"):
            bench.measure(case, lambda: torch.masked_select(x, mask))
