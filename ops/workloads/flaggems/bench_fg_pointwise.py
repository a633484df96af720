"""Benchmarks of FlagGems pointwise ops: add, mul, gelu, silu.

Every test draws its cases from the ``bench`` fixture (`campaign.plugins.timing`);
inputs are built on aten, only the measured call runs under FlagGems dispatch. A
capture deny list names these tests by function name minus ``test_``: ``bench_add``.
"""
import torch

from fg_common import gems, randn


def test_bench_add(bench):
    for case in bench.cases():
        x, y = randn(case.shape, case.dtype, bench.device), randn(case.shape, case.dtype, bench.device)
        with gems("add"):
            bench.measure(case, lambda: torch.add(x, y))


def test_bench_mul(bench):
    for case in bench.cases():
        x, y = randn(case.shape, case.dtype, bench.device), randn(case.shape, case.dtype, bench.device)
        with gems("mul"):
            bench.measure(case, lambda: torch.mul(x, y))


def test_bench_gelu(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("gelu"):
            bench.measure(case, lambda: torch.nn.functional.gelu(x))


def test_bench_silu(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("silu"):
            bench.measure(case, lambda: torch.nn.functional.silu(x))
