"""Benchmarks of FlagGems BLAS: mm ([M, N, K]), bmm ([B, M, N, K]), addmm ([M, N, K],
bias of N). ``tl.dot`` here is what DISABLE_MMA_V3 acts on at sm_90.
Deny-list keys: ``bench_mm``, ``bench_bmm``, ``bench_addmm``.
"""
import torch

from fg_common import gems, randn


def test_bench_mm(bench):
    for case in bench.cases():
        m, n, k = case.shape
        a, b = randn((m, k), case.dtype, bench.device), randn((k, n), case.dtype, bench.device)
        with gems("mm"):
            bench.measure(case, lambda: torch.mm(a, b))


def test_bench_bmm(bench):
    for case in bench.cases():
        batch, m, n, k = case.shape
        a, b = randn((batch, m, k), case.dtype, bench.device), randn((batch, k, n), case.dtype, bench.device)
        with gems("bmm"):
            bench.measure(case, lambda: torch.bmm(a, b))


def test_bench_addmm(bench):
    for case in bench.cases():
        m, n, k = case.shape
        dev = bench.device
        bias, a, b = randn((n,), case.dtype, dev), randn((m, k), case.dtype, dev), randn((k, n), case.dtype, dev)
        with gems("addmm"):
            bench.measure(case, lambda: torch.addmm(bias, a, b))
