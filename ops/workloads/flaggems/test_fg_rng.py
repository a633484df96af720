"""Correctness of FlagGems dropout and rand by their properties, not by values:
shape and dtype; dropout keeps an element scaled by 1/(1-p) or zeroes it, at a rate
within 6 sigma of p; rand is uniform (range, mean and variance within 6 sigma).
"""
import pytest
import torch

from fg_common import DEVICE, FLOAT_DTYPES, RTOL, randn, run_gems

SHAPES = [(4096,), (256, 1024), (3, 333, 777)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout(shape, dtype, p):
    x = randn(shape, dtype)
    out = run_gems(lambda: torch.nn.functional.dropout(x, p, training=True), "dropout")
    assert out.shape == x.shape and out.dtype == dtype
    assert not torch.isnan(out).any()
    dropped = out == 0
    kept = (x.float() / (1 - p)).to(dtype)
    torch.testing.assert_close(out[~dropped], kept[~dropped], rtol=RTOL[dtype], atol=0)
    n = x.numel()
    rate = dropped.double().mean().item()
    assert abs(rate - p) < 6 * (p * (1 - p) / n) ** 0.5, f"dropped {rate:.4f} of elements, expected {p}"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rand(shape, dtype):
    out = run_gems(lambda: torch.rand(shape, dtype=dtype, device=DEVICE), "rand")
    assert out.shape == shape and out.dtype == dtype and not torch.isnan(out).any()
    values = out.double()
    # Drawn in fp32 in [0, 1); a narrower dtype may round the largest draws up to 1.
    upper_ok = values < 1 if dtype == torch.float32 else values <= 1
    assert bool(((values >= 0) & upper_ok).all()), "a value is outside [0, 1)"
    n = out.numel()
    assert abs(values.mean().item() - 0.5) < 6 * (1 / 12 / n) ** 0.5
    assert abs(values.var().item() - 1 / 12) < 6 * (1 / 180 / n) ** 0.5 + RTOL[dtype]
    second = run_gems(lambda: torch.rand(shape, dtype=dtype, device=DEVICE), "rand")
    assert not torch.equal(out, second), "two draws are identical: the generator did not advance"
