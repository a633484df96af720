"""A tiny stand-in for the installed flag_gems package, written for the project's tests.

What the stand-in checkouts' Benchmark needs of it: ``use_gems()``, a context in which the
aten ops it implements dispatch to its Triton kernels (registered into a fresh
``torch.library.Library`` and destroyed on exit, as FlagGems does), and the vendor it
dispatched to. The kernels are launched on the active Triton driver's device: in a cpu
campaign that is the compile-only driver, so they compile for the manifest's target and
run nothing.
"""
import contextlib

import torch
import triton
import triton.language as tl

__version__ = "0.0.0+stand-in"
vendor_name = "nvidia"


def __getattr__(name):
    # FlagGems' ``flag_gems.device``: read when a Benchmark is built, after the driver is chosen
    if name == "device":
        return triton.runtime.driver.active.get_active_torch_device().type
    raise AttributeError(name)


@triton.jit
def abs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.abs(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


@triton.jit
def neg_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, -tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _pointwise(kernel):
    def run(x):
        out = torch.empty_like(x)
        n = x.numel()
        kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
    return run


def mm(a, b):
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(a.shape[0], 64), triton.cdiv(b.shape[1], 64))
    mm_kernel[grid](a, b, c, a.shape[0], b.shape[1], a.shape[1], BM=64, BN=64, BK=32)
    return c


OPS = {"abs": _pointwise(abs_kernel), "neg": _pointwise(neg_kernel), "mm": mm}


@contextlib.contextmanager
def use_gems(exclude=None, include=None):
    key = __getattr__("device").upper()
    lib = torch.library.Library("aten", "IMPL")
    for name, fn in OPS.items():
        if (include is None or name in include) and name not in (exclude or ()):
            lib.impl(name, fn, key)
    try:
        yield
    finally:
        lib._destroy()
