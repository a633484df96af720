"""MThreads compat: drop a FlagGems skip guard written as ``torch.cuda.is_available()``.

Several FlagGems tests gate on ``torch.cuda.is_available()`` although the code under
test dispatches through ``flag_gems.device``; on MThreads such a guard turns a
working operator into "not measured". An override drops one ``skipif`` mark and
only when all of these hold:

- the item's file ends with the override's path (one file per override);
- the mark's reason equals the override's reason exactly;
- flag_gems is already imported and has dispatched to the ``mthreads`` vendor
  (this plugin never imports flag_gems itself);
- the installed flag_gems is the version the list was read from (``FLAGGEMS_VERSION``):
  in another release a guard's file or wording may have moved, so nothing is dropped.

It walks the node chain rather than the item's own marks, because a module-level
``pytestmark`` sits on the Module node, not on the item. Every cell on this backend says
in run.log which list it applied and whether it was active.

The list was read from FlagGems 5.0.2 (tag v5.0.2 = 30bfcc07): every ``skipif`` of its
benchmark/ and tests/ that names CUDA. One guard tests only ``torch.cuda.is_available()``
around code that runs on ``flag_gems.device``: tests/test_embedding.py's
embedding_dense_backward (OVERRIDES). Every other one is kept for a reason read from the
code (KEPT): a vLLM reference, an input device that falls back to "cpu" without CUDA, a
torch reference kernel registered for CUDA only, or an explicit ``flag_gems.device !=
"cuda"``. In FlagGems' later layout the earlier harness probed on an S5000: ``test_fft.py``
overridden (25 rows); ``test_grid_sample.py`` (its input helper defaults to the literal
device "cuda"; unskipped, all 90 cases fail in aten::empty) and ``test_cutlass_scaled_mm.py``
(it also gates on vLLM) kept. The 5.0.2 override is read, not yet observed on an MThreads
device (its ``observed`` says so): if it fails there, it fails as a test, never as
"not measured".
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, Optional

import pytest

VENDOR = "mthreads"
FLAGGEMS_VERSION = "5.0.2"      # the release OVERRIDES and KEPT were read from


@dataclass(frozen=True)
class Override:
    path: str          # file path suffix inside the FlagGems tree, e.g. "benchmark/test_fft.py"
    reason: str        # the skipif reason, exactly as written
    observed: str      # the evidence that the unskipped test runs there


OVERRIDES: tuple[Override, ...] = (
    Override("tests/test_embedding.py", "CUDA is not available",
             "read in FlagGems 5.0.2: inputs built on flag_gems.device, compared with the reference; "
             "not yet observed on an MThreads device"),
)
# (path, reason, why the guard stays): every other CUDA-naming skipif of FlagGems 5.0.2
KEPT: tuple[tuple[str, str, str], ...] = (
    ("tests/test_grouped_topk.py", "CUDA is not available", "the reference is vLLM's grouped_topk"),
    ("tests/test_DSA/test_sparse_mla_ops.py", "CUDA device required",
     'its module-level device is "cpu" without CUDA: unskipped, the inputs land on the CPU'),
    ("tests/test_DSA/test_bin_topk.py", "CUDA device required", 'device falls back to "cpu"; it also needs TLE'),
    ("tests/test_apply_repetition_penalties.py", "need VLLM+CUDA", "the reference is vLLM's op"),
    ("benchmark/test_unary_pointwise_perf.py", "CUDA required", "it times vllm._custom_ops beside FlagGems"),
    ("benchmark/test_attention_perf.py", "CUDA is not available",
     "the torch side is aten::_flash_attention_forward, a CUDA kernel of torch"),
    ("benchmark/test_special_perf.py", "CUDA backend is not available for this benchmark.",
     'the guard also tests flag_gems.device != "cuda": the authors\' own device rule'),
)


def flag_gems_vendor() -> Optional[str]:
    """The vendor flag_gems dispatched to, or None when it has not been imported."""
    module = sys.modules.get("flag_gems")
    if module is None:
        return None
    vendor = getattr(module, "vendor_name", None)
    if vendor is None:
        device = getattr(getattr(module, "runtime", None), "device", None)
        vendor = getattr(device, "vendor_name", None)
    return vendor


def flag_gems_version() -> Optional[str]:
    module = sys.modules.get("flag_gems")
    return None if module is None else getattr(module, "__version__", None)


def _is_guard(mark, reason: str) -> bool:
    return mark.name == "skipif" and mark.kwargs.get("reason") == reason


class MusaCompatPlugin:
    """``pinned``: the FlagGems version the overrides were read from (None: a list not tied to
    a release, as a test writes one); ``version`` reports the installed flag_gems."""

    def __init__(self, overrides: tuple[Override, ...], vendor: Callable[[], Optional[str]], log,
                 pinned: Optional[str] = None, version: Callable[[], Optional[str]] = flag_gems_version):
        self.overrides = overrides
        self.vendor = vendor
        self.log = log
        self.pinned = pinned
        self.version = version
        self.dropped: list[str] = []

    def _active(self) -> bool:
        vendor, have = self.vendor(), self.version()
        # a local build's "+suffix" is the same release
        stale = self.pinned is not None and (have or "").split("+")[0] != self.pinned
        if self.pinned is not None:
            state = (f"inactive: flag_gems {have or 'not imported'} is not {self.pinned}" if stale else
                     "active" if vendor == VENDOR else f"inactive: vendor {vendor or 'unknown'}, not {VENDOR}")
            self.log(f"musa_compat: {len(self.overrides)} override(s) read from FlagGems {self.pinned}; {state}")
        return bool(self.overrides) and vendor == VENDOR and not stale

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items) -> None:
        if not self._active():
            return
        for item in items:
            path = item.path.as_posix()
            for override in self.overrides:
                if not path.endswith("/" + override.path) and path != override.path:
                    continue
                for node in item.listchain():
                    kept = [m for m in node.own_markers if not _is_guard(m, override.reason)]
                    if len(kept) != len(node.own_markers):
                        node.own_markers[:] = kept
                        self.dropped.append(item.nodeid)
                        self.log(f"musa_compat: dropped skipif {override.reason!r} on {item.nodeid}")


def make(ctx) -> MusaCompatPlugin:
    return MusaCompatPlugin(OVERRIDES, flag_gems_vendor, ctx.log.line, pinned=FLAGGEMS_VERSION)
