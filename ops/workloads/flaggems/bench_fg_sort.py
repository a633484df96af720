"""Benchmarks of FlagGems sort and topk along the last dim of an [M, N] input.
topk takes the largest min(TOPK, N). Deny-list keys: ``bench_sort``, ``bench_topk``.
"""
import torch

from fg_common import gems, randn

TOPK = 64


def test_bench_sort(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("sort", "sort_stable"):
            bench.measure(case, lambda: torch.sort(x, dim=-1))


def test_bench_topk(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        k = min(TOPK, case.shape[-1])
        with gems("topk"):
            bench.measure(case, lambda: torch.topk(x, k, dim=-1))
