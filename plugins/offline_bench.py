"""FlagGems' benchmark framework module as the offline screen runs it (`campaign.plugins.flaggems_offline`).

Two changes to ``benchmark.performance_utils`` (FlagGems 5.0.2), made when it has imported, before the
test modules that read it:

- its input builder (``generate_tensor_input``) draws no integers (`offline_torch.unfilled_inputs`);
- its run loop's ``gc.collect()`` after every shape and dtype collects the young generations only.
  On the card that full collection runs outside the timed calls and frees the last shape's tensors
  held in reference cycles; offline nothing is timed, and a full collection walks every object the
  worker holds (torch, Triton, each compiled kernel): py-spy over abs, exp, mul and sum (both sides,
  one lane) found 985 of 1,847 samples in that one line, more than half of the cells' time. Young
  collections still free the cycles the shape just made; older garbage waits for Python's own full
  collections. Nothing here reaches a kernel's source, its specialisation or its compile.
"""
from __future__ import annotations

import gc
import types

from campaign.plugins import offline_torch

BENCHMARK_FRAMEWORK = "benchmark.performance_utils"    # FlagGems 5.0.2's benchmark framework module
YOUNG = 1                                                # gc.collect(1): generations 0 and 1


def young_collections() -> types.SimpleNamespace:
    """A stand-in for the ``gc`` module as the framework module sees it: ``collect()`` collects the
    young generations; every other name is the real module's."""
    names = {name: getattr(gc, name) for name in dir(gc) if not name.startswith("__")}
    names["collect"] = lambda generation=YOUNG: gc.collect(min(generation, YOUNG))
    return types.SimpleNamespace(**names)


def prepare(module, shim) -> None:
    """The framework module as the offline screen runs it (see the module docstring)."""
    generate = getattr(module, offline_torch.DRAWN_INPUTS, None)
    if generate is not None:
        setattr(module, offline_torch.DRAWN_INPUTS, offline_torch.unfilled_inputs(generate, shim))
    if getattr(module, "gc", None) is gc:
        module.gc = young_collections()
