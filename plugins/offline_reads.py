"""What the offline shim counts rather than trusts: a host read of a tensor a skipped launch was handed
(or an unfilled input), FlagGems handing an op back to aten, a kernel that did not compile for the
target. The counts go to the cell's offline.json (`campaign.plugins.flaggems_offline.Shim.trust`).

A host read is counted where it is looked up: the Tensor methods that give the host a tensor's values
without aten (``tolist``, ``numpy``) are wrapped, and aten's scalar read (``_local_scalar_dense``),
which ``item``, ``bool``, ``int``, ``float``, ``index`` and every tensor passed where C++ takes a number
reach, gets a CPU kernel that counts before it reads.
"""
from __future__ import annotations

import functools
import os
import sys
import types
from typing import Optional

# the Tensor methods that hand a tensor's values to the host without aten's scalar read: counted where
# they are looked up; ``item``, ``bool``, ``int``, ``float``, ``index`` and a tensor given as a size
# (``torch.empty(part_sums[-1])``: masked_select) all reach ``aten::_local_scalar_dense``, counted there
HOST_READS = ("tolist", "numpy")
SCALAR_READ = "_local_scalar_dense"


def storage_ptr(tensor) -> Optional[int]:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


HERE = os.path.dirname(os.path.abspath(__file__))


def call_site(depth: int = 2) -> str:
    """The first caller outside torch and this shim: ``allclose (flag_gems/ops/allclose.py:88)``."""
    import torch
    skipped = (os.path.dirname(torch.__file__) + os.sep, HERE + os.sep)
    frame: Optional[types.FrameType] = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename.startswith(skipped):
        frame = frame.f_back
    if frame is None:
        return "torch"
    path = frame.f_code.co_filename.replace(os.sep, "/")
    shown = path[path.rindex("flag_gems/"):] if "flag_gems/" in path else os.path.basename(path)
    return f"{frame.f_code.co_name} ({shown}:{frame.f_lineno})"


def _count_read(shim, tensor) -> None:
    """A host read of ``tensor``, counted at its call site where its storage is marked."""
    if shim.marked and storage_ptr(tensor) in shim.marked:
        shim.host_reads[call_site()] += 1


def _counted(read, shim):
    @functools.wraps(read)
    def call(self, *args, **kwargs):
        _count_read(shim, self)
        return read(self, *args, **kwargs)
    return call


def compile_errors_named(shim) -> None:
    """A kernel that does not compile for the target is named (kernel, the error's first line) before the
    error goes on: where no row ran, the screen says that instead of "nothing ran"."""
    from triton.runtime.jit import JITFunction
    do_compile = JITFunction._do_compile

    @functools.wraps(do_compile)
    def named(self, *args, **kwargs):
        try:
            return do_compile(self, *args, **kwargs)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[-1][:200]
            shim.compile_errors[f"{getattr(self, '__name__', '?')}: {type(exc).__name__}: {first}"] += 1
            raise
    JITFunction._do_compile = named


def fallbacks_counted(torch, shim) -> None:
    """FlagGems handing an op back to aten (``OpOverload.redispatch`` called from its code: ``to`` and
    ``copy_`` under their conditions) is counted by op and call site: that op compiled no Triton kernel,
    on the card's path or not, and the screen names it rather than comparing what did not compile."""
    overload = torch._ops.OpOverload
    redispatch = overload.redispatch

    @functools.wraps(redispatch)
    def counted(self, keyset, *args, **kwargs):
        site = call_site()
        if "flag_gems/" in site:
            shim.fallbacks[f"{self.name()} from {site}"] += 1
        return redispatch(self, keyset, *args, **kwargs)
    overload.redispatch = counted


def host_reads_counted(torch, shim) -> None:
    """The Tensor methods of `HOST_READS` count a read of a marked storage at its call site."""
    for name in HOST_READS:
        setattr(torch.Tensor, name, _counted(getattr(torch.Tensor, name), shim))


def _host_value(tensor, numpy):
    """A one-element host tensor's value as a Python number, read through numpy: no aten scalar read."""
    import torch
    value = tensor.detach().resolve_conj().resolve_neg()
    try:
        return numpy(value).item()
    except TypeError:                    # bfloat16, float8, complex32: widened exactly first
        return numpy(value.to(torch.complex128 if value.is_complex() else torch.float64)).item()


def scalar_reads_counted(torch, shim):
    """aten's scalar read on the host is counted as the Tensor methods are: the one kernel ``item``,
    ``bool``, ``int``, ``float``, ``index`` and every tensor passed where C++ takes a number (a size, a
    slice bound) reach, so ``torch.empty(part_sums[-1])`` counts as ``.item()`` does. The CPU kernel is
    replaced by one that reads the value through numpy; the library that holds it is returned, and the
    override lasts while it is held."""
    import warnings
    numpy = getattr(torch.Tensor.numpy, "__wrapped__", torch.Tensor.numpy)     # not the counted one

    def read(self):
        _count_read(shim, self)
        return _host_value(self, numpy)
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel.*")
        library.impl(SCALAR_READ, read, "CPU")
    return library
