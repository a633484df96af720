"""Correctness of FlagGems sort and topk along the last dim. Values must equal torch's
exactly (ordering moves values, it does not compute them); indices are checked by the
value they point at, so equal values may come in either order.
"""
import pytest
import torch

from fg_common import FLOAT_DTYPES, assert_equal, randn, run_gems

SHAPES = [(3, 2), (7, 1000), (64, 4097), (2, 32768)]


def _points_at(x, values, indices):
    assert indices.dtype == torch.int64 and indices.shape == values.shape
    assert bool(((indices >= 0) & (indices < x.shape[-1])).all()), "an index is out of range"
    assert torch.equal(x.gather(-1, indices), values), "an index does not point at its value"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort(shape, dtype, descending):
    x = randn(shape, dtype)
    values, indices = run_gems(lambda: torch.sort(x, dim=-1, descending=descending), "sort", "sort_stable")
    assert_equal(values, torch.sort(x, dim=-1, descending=descending).values)
    _points_at(x, values, indices)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("k", [1, 64])
def test_topk(shape, dtype, k):
    x = randn(shape, dtype)
    k = min(k, shape[-1])
    values, indices = run_gems(lambda: torch.topk(x, k, dim=-1), "topk")
    assert_equal(values, torch.topk(x, k, dim=-1).values)
    _points_at(x, values, indices)
