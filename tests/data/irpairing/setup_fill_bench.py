"""A benchmark whose setup launches a fill kernel with a scalar that differs from process to process,
beside a main kernel the switch leaves alone -- the shape of FlagGems' own items, whose setup runs
``fill_scalar_kernel`` with a value Triton specialises ``i32`` in one cell and ``i64`` in another.

The value is read from the cell's environment only to make the difference deterministic: the
candidate fills 2**31 + 5 (specialised ``i64``), every other cell 5 (``i32``); every cell also
fills 7, so the fill kernel has a variant both sides compile alike.
"""
import os

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def fill_scalar_kernel(out_ptr, value_scalar, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, value_scalar, mask=offsets < n)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def fill(n, value, block=1024):
    out = torch.empty(n, device=DEVICE, dtype=torch.int64)
    fill_scalar_kernel[(triton.cdiv(n, block),)](out, value, n, BLOCK=block)
    return out


def test_scale():
    n = 4096
    fill(n, 7)
    fill(n, 2**31 + 5 if os.environ.get("DISABLE_MMA_V3") == "1" else 5)
    x = torch.randn(n, device=DEVICE, dtype=torch.float32)
    out = torch.empty_like(x)
    triton.testing.do_bench(lambda: scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024))
