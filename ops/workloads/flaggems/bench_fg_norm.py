"""Benchmarks of FlagGems normalisations over the last dim of an [M, N] input:
layer_norm (with weight and bias), rms_norm (with weight), softmax.
Deny-list keys: ``bench_layer_norm``, ``bench_rms_norm``, ``bench_softmax``.
"""
import torch

from fg_common import gems, randn

EPS = 1e-5


def test_bench_layer_norm(bench):
    for case in bench.cases():
        n = case.shape[-1]
        dev = bench.device
        x, w, b = randn(case.shape, case.dtype, dev), randn((n,), case.dtype, dev), randn((n,), case.dtype, dev)
        with gems("layer_norm"):
            bench.measure(case, lambda: torch.nn.functional.layer_norm(x, (n,), w, b, EPS))


def test_bench_rms_norm(bench):
    for case in bench.cases():
        n = case.shape[-1]
        x, w = randn(case.shape, case.dtype, bench.device), randn((n,), case.dtype, bench.device)
        with gems("rms_norm"):
            bench.measure(case, lambda: torch.nn.functional.rms_norm(x, (n,), w, EPS))


def test_bench_softmax(bench):
    for case in bench.cases():
        x = randn(case.shape, case.dtype, bench.device)
        with gems("softmax"):
            bench.measure(case, lambda: torch.softmax(x, dim=-1))
