"""A kernel test as its author wrote it for a GPU: Triton kernels timed with triton.testing.do_bench.

Nothing here knows about the campaign. The device comes from Triton's active driver (a GPU, or
the compile-only driver's CPU tensors in a cpu campaign); both spellings of do_bench are used,
the module attribute and a name imported from triton.testing.
"""
import pytest
import torch
import triton
import triton.language as tl
from triton.testing import do_bench

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def scale_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + y, mask=mask)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b).to(tl.float16))


def scale_add(x, y, alpha, block=1024):
    out = torch.empty_like(x)
    n = x.numel()
    scale_add_kernel[(triton.cdiv(n, block),)](x, y, out, alpha, n, BLOCK=block)
    return out


def dot(a, b):
    c = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float16, device=a.device)
    dot_kernel[(1,)](a, b, c, M=a.shape[0], N=b.shape[1], K=a.shape[1])
    return c


@pytest.mark.parametrize("n", [4096, 65536])
@pytest.mark.parametrize("dtype", [torch.float16])
def test_scale_add(n, dtype):
    x = torch.randn(n, device=DEVICE, dtype=dtype)
    y = torch.randn(n, device=DEVICE, dtype=dtype)
    ms = triton.testing.do_bench(lambda: scale_add(x, y, 2.0))
    print(f"scale_add n={n}: {ms:.4f} ms")
    p50, p20, p80 = do_bench(lambda: scale_add(x, y, 2.0, block=4096), quantiles=[0.5, 0.2, 0.8])
    print(f"scale_add n={n} block=4096: {p50:.4f} ms ({p20:.4f}-{p80:.4f})")


def test_dot():
    a = torch.randn((64, 32), device=DEVICE, dtype=torch.float16)
    b = torch.randn((32, 64), device=DEVICE, dtype=torch.float16)
    ms = triton.testing.do_bench_cudagraph(lambda: dot(a, b))
    print(f"dot 64x32x64: {ms:.4f} ms")
