"""torch as the card answers it, in a process that has none: the torch side of `campaign.plugins.flaggems_offline`.

torch.cuda's query API from the card's dumped record; tensors that say they are on the card and live
on the host; float fills skipped; the card's philox generator state. Each is patched where it is
looked up (the torch namespace, the Tensor class, torch.cuda), so code called from the dispatcher below
any torch function mode is answered too. What is counted rather than trusted (host reads, hand-backs,
compile errors) is `campaign.plugins.offline_reads`.
"""
from __future__ import annotations

import functools
import re
import types

from campaign.plugins import offline_reads

PHILOX_DEFAULT_SEED = 67280421310721            # torch's default_rng_seed_val, the card's first seed


class PhiloxState:
    """The card's default generator as FlagGems reads it: a 16-byte state, seed then offset. Held as
    Python ints: on the host every tensor op may be FlagGems' (its ops own the CPU key here), and the
    card does this bookkeeping in aten's host kernels, never in a Triton launch."""

    def __init__(self, seed: int = PHILOX_DEFAULT_SEED):
        self.manual_seed(seed)

    def get_state(self):
        import torch
        return torch.tensor([self._seed, self._offset], dtype=torch.int64).view(torch.uint8)

    def set_state(self, state) -> None:
        import torch
        self._seed, self._offset = (int(v) for v in state.view(torch.int64).tolist())

    def manual_seed(self, seed: int) -> "PhiloxState":
        self._seed, self._offset = int(seed), 0
        return self

    def initial_seed(self) -> int:
        return self._seed

    def advance(self, increment: int) -> tuple[int, int]:
        """FlagGems' ``philox_backend_seed_offset`` on the card: the seed and offset now, the offset
        then moved on by ``increment`` rounded up to 4, in host arithmetic as aten does it there."""
        now = (self._seed, self._offset)
        self._offset += (increment + 3) // 4 * 4
        return now

    def seed(self) -> int:
        return self._seed


class _NoGuard:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


def _properties(record: dict):
    return types.SimpleNamespace(**record["properties"])


def answer_torch_cuda(cuda, record: dict) -> None:
    props = _properties(record)
    capability = tuple(record["capability"])
    generator = PhiloxState()
    answers = {
        "is_available": lambda: True, "is_initialized": lambda: True, "_lazy_init": lambda: None,
        "device_count": lambda: 1, "current_device": lambda: 0, "set_device": lambda device: None,
        "get_device_properties": lambda device=None: props, "get_device_name": lambda device=None: props.name,
        "get_device_capability": lambda device=None: capability, "synchronize": lambda device=None: None,
        "empty_cache": lambda: None, "device": _NoGuard, "_DeviceGuard": _NoGuard,
        "mem_get_info": lambda device=None: (props.total_memory, props.total_memory),
        "default_generators": (generator,), "manual_seed": generator.manual_seed,
        "manual_seed_all": generator.manual_seed,
    }
    for name, value in answers.items():
        setattr(cuda, name, value)


def _is_cuda(device) -> bool:
    """``"cuda"``, ``"cuda:N"``, a cuda ``torch.device``, or a bare index: torch reads ``device=0`` as the
    accelerator's (FlagGems' randn_like passes ``x.device.index``)."""
    import torch
    return (isinstance(device, str) and device.split(":")[0] == "cuda") or (
        isinstance(device, torch.device) and device.type == "cuda") or (
        isinstance(device, int) and not isinstance(device, bool))


def _host(device):
    import torch
    return torch.device("cpu") if _is_cuda(device) else device


def _device_arguments(torch) -> tuple[str, ...]:
    """The torch functions that build a tensor on a ``device=`` (their own documentation says so)."""
    names = []
    for name in dir(torch):
        fn = getattr(torch, name, None)
        doc = getattr(fn, "__doc__", None) or ""
        if callable(fn) and not isinstance(fn, type) and (re.search(r"\bdevice=", doc[:800])
                                                          or "device (:class:`torch.device`" in doc):
            names.append(name)
    return tuple(names)


def _on_host(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _host(kwargs["device"])
        return fn(*args, **kwargs)
    return call


def _to_host(to):
    @functools.wraps(to)
    def call(self, *args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _host(kwargs["device"])
        return to(self, *(_host(a) for a in args), **kwargs)
    return call


FILLED = ("randn", "rand")                     # float fills no kernel reads here: left uninitialised
# what torch.empty takes as well: ``size=`` among them (``torch.randn(size=shape, ...)``: FlagGems' conv,
# upsample and resolve_neg/conj benchmarks draw so, which filled until 2026-12-07: 84 CPU-s of conv3d's cell)
EMPTY_KWARGS = ("size", "dtype", "layout", "device", "requires_grad", "pin_memory", "memory_format")


def _unfilled(fill, empty, taken=lambda: False):
    """``fill`` without filling: the same tensor as ``empty`` builds it. A skipped launch reads no
    input, so the values of a float input decide nothing that compiles; at FlagGems' 2**30-element
    shapes filling them cost seconds and gigabytes per tensor (an out= or generator= call fills).
    Where ``taken()`` -- FlagGems' own op takes the call now (`flaggems_offline.gems_takes`) -- the
    call goes on to it: its kernel compiles and its launch is skipped, so nothing is filled either, and
    the randn workload compiles FlagGems' randn as on the card (until 2026-12-07 it read NO_TRITON:
    the benchmark's ``torch.randn`` was this wrapper, and the op under test an empty tensor)."""
    @functools.wraps(fill)
    def call(*args, **kwargs):
        if taken() or set(kwargs) - set(EMPTY_KWARGS):
            return fill(*args, **kwargs)
        return empty(*args, **kwargs)
    return call


DRAWN_INPUTS = "generate_tensor_input"       # FlagGems' benchmark inputs: (shape, dtype, device)


def unfilled_inputs(generate, shim):
    """FlagGems' benchmark input builder with its integer and bool draws left unfilled, as its float
    draws are (`FILLED`): it draws them over the dtype's whole range (bool: 0 or 1), so no value is
    one a kernel's code depends on, and at 2**30 elements one draw cost 20 CPU-s (int32; logical_and's
    cell drew six). The storage is marked: a host read of such an input is counted with the reads of
    what a skipped launch was handed, so a cell whose host code reads one says so (`reads`)."""
    @functools.wraps(generate)
    def call(shape, dtype, device, *args, **kwargs):
        import torch
        if args or kwargs or dtype.is_floating_point or dtype.is_complex:
            return generate(shape, dtype, device, *args, **kwargs)
        tensor = torch.empty(shape, dtype=dtype, device=_host(device))
        if ptr := offline_reads.storage_ptr(tensor):
            shim.marked.add(ptr)
        return tensor
    return call


def fused_dropout(torch) -> None:
    """aten's ``dropout`` takes its fused kernel (``native_dropout``, FlagGems' dropout on the card)
    where C++ sees a CUDA input (``is_fused_kernel_acceptable``); a host tensor takes the composite
    path (bernoulli_, mul, div), a Python property cannot reach that branch. Both entry points take
    the card's path here, under the card's own condition (training, 0 < p < 1, elements)."""
    dropout = torch.dropout

    @functools.wraps(dropout)
    def card_dropout(input, p, train):
        if train and 0 < p < 1 and input.numel() > 0:
            return torch.native_dropout(input, p, train)[0]
        return dropout(input, p, train)
    torch.dropout = card_dropout
    torch._VF.dropout = card_dropout


def tensors_on_host(torch, taken=lambda name: False) -> None:
    """Tensors say they are on the card; tensors built for it live on the host (their host reads are counted
    by `campaign.plugins.offline_reads`, installed beside this by `flaggems_offline.install`).
    Patched where they are looked up (the torch namespace, the Tensor class), so FlagGems' own ops,
    called from the dispatcher below any torch function mode, are answered too. ``taken(name)``: aten's
    ``name`` goes to FlagGems' op now (its fill then compiles, see `_unfilled`)."""
    card = torch.device("cuda", 0)
    for name in FILLED:
        for built, empty in ((name, torch.empty), (f"{name}_like", torch.empty_like)):
            setattr(torch, built, _unfilled(getattr(torch, built), empty, functools.partial(taken, built)))
    for name in _device_arguments(torch):
        setattr(torch, name, _on_host(getattr(torch, name)))
    tensor = torch.Tensor
    for name in ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros"):
        setattr(tensor, name, _on_host(getattr(tensor, name)))
    tensor.to = _to_host(tensor.to)
    tensor.cuda = lambda self, *args, **kwargs: self
    tensor.pin_memory = lambda self, *args, **kwargs: self
    tensor.device = property(lambda self: card)
    tensor.is_cuda = property(lambda self: True)
    tensor.is_cpu = property(lambda self: False)


