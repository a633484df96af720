"""What the FlagGems workloads share: dispatch to exactly the measured FlagGems
functions, and the correctness rules.

Dispatch goes through FlagGems' public API, ``flag_gems.use_gems(include=[...])``, naming
the FlagGems *function* names (``layer_norm`` serves aten's ``native_layer_norm``,
``dropout`` serves ``native_dropout``, ``softmax`` serves ``_softmax``). Only the measured
op is registered, so input construction and the timer's own work (``do_bench`` zeroes
its L2 buffer before every iteration) stay on aten and never launch a FlagGems kernel
that would be counted as measured. A name FlagGems does not register is an error here;
FlagGems itself would only warn and silently leave aten in place.

Correctness: fresh random inputs (never zeros); references computed by torch in
float64 outside the FlagGems context and rounded to the output dtype; an ``out=``
buffer filled with NaN where FlagGems implements the ``.out`` overload, and otherwise
every element compared with the reference and checked for NaN. ``run_gems`` also
fails a test in which no Triton kernel launched: that would be aten passing for
FlagGems.
"""
from contextlib import contextmanager

import flag_gems
import torch
from triton import knobs

DEVICE = flag_gems.device
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32]

# rtol per output dtype: about one unit in the last place (FlagGems' own resolutions).
RTOL = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1.3e-6}
# atol per output dtype for outputs of magnitude ~1; ops scale it where error grows.
ATOL = {torch.float16: 1e-3, torch.bfloat16: 1e-2, torch.float32: 1e-5}


@contextmanager
def gems(*functions):
    """FlagGems dispatch for exactly ``functions`` (FlagGems function names)."""
    with flag_gems.use_gems(include=list(functions)):
        registered = set(flag_gems.all_registered_ops())
        missing = [name for name in functions if name not in registered]
        if missing:
            raise RuntimeError(f"FlagGems {flag_gems.__version__} registered none of {missing}")
        yield


@contextmanager
def triton_launches():
    count = [0]

    def hook(metadata):
        count[0] += 1

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        yield count
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)


def run_gems(call, *functions):
    """``call()`` under FlagGems dispatch; fails unless a Triton kernel launched."""
    with gems(*functions), triton_launches() as launches:
        out = call()
    assert launches[0] > 0, f"no Triton kernel launched: {functions} did not reach FlagGems"
    return out


def randn(shape, dtype, device=DEVICE):
    """Standard normal values with no exact zero (a zero could hide an unwritten output)."""
    x = torch.randn(shape, dtype=torch.float32, device=device).to(dtype)
    return torch.where(x == 0, torch.ones_like(x), x)


def poisoned(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device=DEVICE)


def assert_close(actual, expected64, dtype, atol):
    """Every element against the float64 reference rounded to ``dtype``; no NaN anywhere."""
    assert actual.dtype == dtype, f"dtype {actual.dtype}, expected {dtype}"
    assert actual.shape == expected64.shape, f"shape {tuple(actual.shape)}, expected {tuple(expected64.shape)}"
    assert not torch.isnan(actual).any(), "an output element is NaN: never written, or wrong"
    torch.testing.assert_close(actual, expected64.to(dtype), rtol=RTOL[dtype], atol=atol)


def assert_equal(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual, expected), "outputs differ from the reference"
