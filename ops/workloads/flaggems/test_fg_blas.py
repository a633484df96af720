"""Correctness of FlagGems mm, bmm and addmm against torch in float64, written into
NaN-filled ``out=`` buffers (FlagGems implements the .out overloads).

Inputs are standard normal, so outputs grow as sqrt(K); fp32 accumulation error
grows the same way, and atol scales with it.
"""
import pytest
import torch

from fg_common import ATOL, FLOAT_DTYPES, assert_close, poisoned, randn, run_gems

MNK = [(1, 3, 5), (64, 128, 256), (300, 200, 1000), (1024, 512, 2048)]
BLAS_ATOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-4}


def _atol(dtype, k):
    return max(ATOL[dtype], BLAS_ATOL[dtype] * k ** 0.5)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mnk", MNK)
def test_mm(mnk, dtype):
    m, n, k = mnk
    a, b = randn((m, k), dtype), randn((k, n), dtype)
    out = poisoned((m, n), dtype)
    run_gems(lambda: torch.mm(a, b, out=out), "mm_out")
    assert_close(out, a.double() @ b.double(), dtype, _atol(dtype, k))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mnk", MNK[:3])
@pytest.mark.parametrize("batch", [1, 5])
def test_bmm(batch, mnk, dtype):
    m, n, k = mnk
    a, b = randn((batch, m, k), dtype), randn((batch, k, n), dtype)
    out = poisoned((batch, m, n), dtype)
    run_gems(lambda: torch.bmm(a, b, out=out), "bmm_out")
    assert_close(out, torch.bmm(a.double(), b.double()), dtype, _atol(dtype, k))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mnk", MNK)
def test_addmm(mnk, dtype):
    m, n, k = mnk
    bias, a, b = randn((n,), dtype), randn((m, k), dtype), randn((k, n), dtype)
    out = poisoned((m, n), dtype)
    run_gems(lambda: torch.addmm(bias, a, b, out=out), "addmm_out")
    assert_close(out, torch.addmm(bias.double(), a.double(), b.double()), dtype, _atol(dtype, k))
