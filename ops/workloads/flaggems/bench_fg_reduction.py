"""Benchmarks of FlagGems reductions over the last dim of an [M, N] input: sum, amax,
argmax, cumsum. Deny-list keys: ``bench_sum``, ``bench_amax``, ``bench_argmax``, ``bench_cumsum``.
"""
import torch

from fg_common import gems, randn


def test_bench_sum(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("sum_dim"):
            bench.measure(case, lambda: torch.sum(x, dim=-1))


def test_bench_amax(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("amax"):
            bench.measure(case, lambda: torch.amax(x, dim=-1))


def test_bench_argmax(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("argmax"):
            bench.measure(case, lambda: torch.argmax(x, dim=-1))


def test_bench_cumsum(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("cumsum"):
            bench.measure(case, lambda: torch.cumsum(x, dim=-1))
