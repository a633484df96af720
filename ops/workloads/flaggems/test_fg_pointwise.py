"""Correctness of FlagGems pointwise ops against torch in float64 (see fg_common)."""
import pytest
import torch

from fg_common import ATOL, FLOAT_DTYPES, assert_close, randn, run_gems

SHAPES = [(1,), (1000,), (33, 1025), (4, 17, 513)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add(shape, dtype):
    x, y = randn(shape, dtype), randn(shape, dtype)
    out = run_gems(lambda: torch.add(x, y), "add")
    assert_close(out, x.double() + y.double(), dtype, ATOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_mul(shape, dtype):
    x, y = randn(shape, dtype), randn(shape, dtype)
    out = run_gems(lambda: torch.mul(x, y), "mul")
    assert_close(out, x.double() * y.double(), dtype, ATOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gelu(shape, dtype):
    x = randn(shape, dtype)
    out = run_gems(lambda: torch.nn.functional.gelu(x), "gelu")
    assert_close(out, torch.nn.functional.gelu(x.double()), dtype, ATOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_silu(shape, dtype):
    x = randn(shape, dtype)
    out = run_gems(lambda: torch.nn.functional.silu(x), "silu")
    assert_close(out, torch.nn.functional.silu(x.double()), dtype, ATOL[dtype])
