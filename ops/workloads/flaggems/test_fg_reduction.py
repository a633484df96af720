"""Correctness of FlagGems reductions over the last dim against torch in float64.

Accumulation error of a sum grows about as sqrt(N), so atol scales with it; amax is
exact; argmax is checked by the value it points at, so a tie may break either way.
"""
import pytest
import torch

from fg_common import ATOL, DEVICE, FLOAT_DTYPES, assert_close, poisoned, randn, run_gems

SHAPES = [(1, 3), (7, 1000), (64, 4097), (3, 65536)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sum(shape, dtype):
    x = randn(shape, dtype)
    out = poisoned(shape[:-1], dtype)
    run_gems(lambda: torch.sum(x, dim=-1, out=out), "sum_dim_out")
    assert_close(out, x.double().sum(dim=-1), dtype, 10 * ATOL[dtype] * shape[-1] ** 0.5)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_amax(shape, dtype):
    x = randn(shape, dtype)
    out = run_gems(lambda: torch.amax(x, dim=-1), "amax")
    assert_close(out, x.double().amax(dim=-1), dtype, 0.0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_argmax(shape, dtype):
    x = randn(shape, dtype)
    index = run_gems(lambda: torch.argmax(x, dim=-1), "argmax")
    assert index.dtype == torch.int64 and index.shape == shape[:-1] and index.device.type == torch.device(DEVICE).type
    assert bool(((index >= 0) & (index < shape[-1])).all()), "an index is out of range"
    assert torch.equal(x.gather(-1, index.unsqueeze(-1)).squeeze(-1), x.amax(dim=-1)), "an index is not at the max"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_cumsum(shape, dtype):
    x = randn(shape, dtype)
    out = poisoned(shape, dtype)
    run_gems(lambda: torch.cumsum(x, dim=-1, out=out), "cumsum_out")
    assert_close(out, x.double().cumsum(dim=-1), dtype, 10 * ATOL[dtype] * shape[-1] ** 0.5)
