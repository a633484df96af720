"""Correctness of FlagGems gather, index_select and masked_select: they move values,
so every element must equal torch's exactly."""
import pytest
import torch

from fg_common import DEVICE, FLOAT_DTYPES, assert_equal, randn, run_gems

SHAPES = [(1, 3), (7, 1000), (64, 4097), (1024, 256)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gather(shape, dtype):
    m, n = shape
    x = randn(shape, dtype)
    index = torch.randint(0, n, (m, max(1, n // 2)), device=DEVICE)
    out = run_gems(lambda: torch.gather(x, 1, index), "gather")
    assert_equal(out, torch.gather(x.cpu(), 1, index.cpu()).to(DEVICE))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_index_select(shape, dtype):
    m, n = shape
    x = randn(shape, dtype)
    index = torch.randint(0, m, (max(1, m // 2),), device=DEVICE)
    out = run_gems(lambda: torch.index_select(x, 0, index), "index_select")
    assert_equal(out, torch.index_select(x.cpu(), 0, index.cpu()).to(DEVICE))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_masked_select(shape, dtype):
    x = randn(shape, dtype)
    mask = torch.rand(shape, device=DEVICE) < 0.5
    out = run_gems(lambda: torch.masked_select(x, mask), "masked_select")
    assert_equal(out, torch.masked_select(x.cpu(), mask.cpu()).to(DEVICE))
