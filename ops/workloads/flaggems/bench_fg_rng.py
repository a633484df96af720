"""Benchmarks of FlagGems random ops: dropout (p=0.5, training) and rand.

Both draw a philox seed and offset from the device generator on every call. Measured on
the H200 (torch 2.11): that goes through torch's graph-safe generator, so the capture
succeeds and the rows are graph-timed (tests/gpu/test_timing_gpu.py pins it); on a
runtime whose generator refuses capture (MUSA in the seeds) every row falls back to
direct timing, marked BENCHMARK_DIRECT_NO_CUDAGRAPH. Deny-list keys: ``bench_dropout``,
``bench_rand``.
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
