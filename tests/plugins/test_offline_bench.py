"""FlagGems' benchmark framework module as the offline screen runs it (`campaign.plugins.offline_bench`).

FlagGems' own framework module lives only in its repository (not in the wheel CI installs), so the module
here is built the way 5.0.2's is: it imports ``gc`` and ``generate_tensor_input`` at its top and its run
loop calls ``gc.collect()`` after each shape. After `offline_bench.prepare`: that call collects the young
generations only (Python's gc callbacks say which generation ran) and still frees a cycle the shape just
made; the module's other ``gc`` names are the real ones; its input builder is the unfilled one; and a
module that does not import gc itself is left as it is.
"""
from __future__ import annotations

import gc
import types
import weakref

import torch

from campaign.plugins import flaggems_offline, offline_bench, offline_reads, offline_torch


def _framework(with_gc: bool = True) -> types.ModuleType:
    module = types.ModuleType(offline_bench.BENCHMARK_FRAMEWORK)
    if with_gc:
        module.gc = gc
    module.generate_tensor_input = lambda shape, dtype, device: torch.randint(0, 7, shape, dtype=dtype)
    return module


class _Node:
    def __init__(self):
        self.other = self                       # a reference cycle: only the collector frees it


def test_the_run_loops_collection_is_young_and_still_frees_what_the_shape_left():
    module = _framework()
    shim = flaggems_offline.Shim(target="cuda:90", digest="0" * 64)
    offline_bench.prepare(module, shim)
    assert module.gc is not gc and module.gc.get_count is gc.get_count and module.gc.isenabled is gc.isenabled
    node = _Node()
    freed = weakref.ref(node)
    del node
    ran: list[int] = []

    def seen(phase, info):
        if phase == "start":
            ran.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        module.gc.collect()                     # the framework's own call after each shape
    finally:
        gc.callbacks.remove(seen)
    assert ran == [offline_bench.YOUNG], ran
    assert freed() is None, "a cycle the shape made is freed by the young collection"
    assert module.gc.collect(2) >= 0 and ran == [offline_bench.YOUNG], "an explicit older generation is held to the young"
    drawn = module.generate_tensor_input((4,), torch.int32, "cuda")
    assert offline_reads.storage_ptr(drawn) in shim.marked, "the input builder is the unfilled one, its storage marked"


def test_a_framework_module_without_gc_of_its_own_is_left_as_it_is():
    module = _framework(with_gc=False)
    shim = flaggems_offline.Shim(target="cuda:90", digest="0" * 64)
    offline_bench.prepare(module, shim)
    assert not hasattr(module, "gc")
    assert offline_reads.storage_ptr(getattr(module, offline_torch.DRAWN_INPUTS)((4,), torch.int16, "cuda")) in shim.marked
