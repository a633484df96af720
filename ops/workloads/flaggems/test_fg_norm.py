"""Correctness of FlagGems layer_norm, rms_norm and softmax over the last dim, against
torch in float64. softmax outputs are small (about 1/N), so its atol is far below them
and every row must also sum to 1.
"""
import pytest
import torch

from fg_common import ATOL, FLOAT_DTYPES, RTOL, assert_close, randn, run_gems

SHAPES = [(1, 3), (7, 1000), (64, 4097), (2, 16384)]
EPS = 1e-5
SOFTMAX_ATOL = {torch.float16: 1e-6, torch.bfloat16: 1e-5, torch.float32: 1e-7}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm(shape, dtype):
    n = shape[-1]
    x, w, b = randn(shape, dtype), randn((n,), dtype), randn((n,), dtype)
    out = run_gems(lambda: torch.nn.functional.layer_norm(x, (n,), w, b, EPS), "layer_norm")
    expected = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), EPS)
    assert_close(out, expected, dtype, 4 * ATOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rms_norm(shape, dtype):
    n = shape[-1]
    x, w = randn(shape, dtype), randn((n,), dtype)
    out = run_gems(lambda: torch.nn.functional.rms_norm(x, (n,), w, EPS), "rms_norm")
    expected = torch.nn.functional.rms_norm(x.double(), (n,), w.double(), EPS)
    assert_close(out, expected, dtype, 4 * ATOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax(shape, dtype):
    x = randn(shape, dtype)
    out = run_gems(lambda: torch.softmax(x, dim=-1), "softmax")
    assert_close(out, torch.softmax(x.double(), dim=-1), dtype, SOFTMAX_ATOL[dtype])
    row_sums = out.double().sum(dim=-1)
    torch.testing.assert_close(row_sums, torch.ones_like(row_sums), rtol=0, atol=4 * RTOL[dtype] * shape[-1] ** 0.5)
