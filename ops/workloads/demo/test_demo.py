"""Correctness of the demo workloads against torch, on a device that executes.

Inputs are fresh random values (never zeros) and every output buffer is
poisoned with NaN before the call, so an element the kernel never wrote fails.
"""
import pytest
import torch

from demo_kernels import add, matmul, row_sum, softmax

DTYPES = [torch.float16, torch.float32]


def _device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def _poison(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device=_device())


def _check(actual, expected, rtol, atol):
    assert not torch.isnan(actual).any(), "an output element was never written"
    torch.testing.assert_close(actual.float(), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 1000, 65537])
def test_add(dtype, n):
    x = torch.randn(n, dtype=dtype, device=_device())
    y = torch.randn(n, dtype=dtype, device=_device())
    expected = (x.float() + y.float()).to(dtype).float()
    _check(add(x, y, out=_poison((n,), dtype)), expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 7), (64, 1000), (128, 4096)])
def test_softmax(dtype, shape):
    x = torch.randn(shape, dtype=dtype, device=_device())
    expected = torch.softmax(x.float(), dim=-1)
    tol = 2e-3 if dtype == torch.float16 else 1e-5
    _check(softmax(x, out=_poison(shape, dtype)), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 3), (64, 1000), (32, 5000)])
def test_row_sum(dtype, shape):
    x = torch.randn(shape, dtype=dtype, device=_device())
    expected = x.float().sum(dim=-1)
    # fp32 accumulation; fp16 output rounds a sum of up to ~sqrt(n) magnitude
    tol = 1e-2 * shape[1] ** 0.5 if dtype == torch.float16 else 1e-4 * shape[1] ** 0.5
    _check(row_sum(x, out=_poison((shape[0],), dtype)), expected, rtol=1e-2, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk", [(16, 16, 16), (100, 200, 300), (512, 512, 512)])
def test_matmul(dtype, mnk):
    m, n, k = mnk
    a = torch.randn((m, k), dtype=dtype, device=_device())
    b = torch.randn((k, n), dtype=dtype, device=_device())
    expected = a.float() @ b.float()
    # tl.dot takes fp32 inputs as TF32 by default; error grows with sqrt(k)
    _check(matmul(a, b, out=_poison((m, n), dtype)), expected, rtol=2e-2, atol=2e-2 * k ** 0.5)
