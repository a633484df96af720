"""A test that runs its kernel but never times it: no do_bench call, so no row."""
import torch
from dobench_my_kernel import DEVICE, scale_add


def test_runs_but_times_nothing():
    x = torch.ones(1024, device=DEVICE, dtype=torch.float32)
    assert scale_add(x, x, 1.0).shape == x.shape
