"""Benchmark targets of the demo workloads.

Each test draws its cases (shape x dtype) from the ``bench`` fixture
(`campaign.plugins.timing`): the op's shape set at the campaign's bench level,
narrowed by the manifest, times the workload's dtypes. Inputs are built once per
case, outside the timed call.
"""
import torch

from demo_kernels import add, matmul, row_sum, softmax


def _rand(shape, dtype, device):
    return torch.randn(shape, dtype=dtype, device=device)


def test_bench_add(bench):
    for case in bench.cases():
        x = _rand(case.shape, case.dtype, bench.device)
        y = _rand(case.shape, case.dtype, bench.device)
        bench.measure(case, lambda: add(x, y))


def test_bench_softmax(bench):
    for case in bench.cases():
        x = _rand(case.shape, case.dtype, bench.device)
        bench.measure(case, lambda: softmax(x))


def test_bench_row_sum(bench):
    for case in bench.cases():
        x = _rand(case.shape, case.dtype, bench.device)
        bench.measure(case, lambda: row_sum(x))


def test_bench_matmul(bench):
    for case in bench.cases():
        m, n, k = case.shape
        a = _rand((m, k), case.dtype, bench.device)
        b = _rand((k, n), case.dtype, bench.device)
        bench.measure(case, lambda: matmul(a, b))
