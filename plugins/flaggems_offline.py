"""FlagGems on the compile-only backend: flag_gems imports, configures and dispatches as on the card.

flag_gems does not import without its device: at import it asks torch.cuda for the card's name (its
tuner store is named after it), its capability (which arch folder's tune configs and ops replace the
generic ones: ``_nvidia/hopper`` on a 9.x card), and its properties (SM count, shared memory per
block with opt-in: its tuners prune configs by them). Its benchmarks and ops then build tensors on
``flag_gems.device`` ("cuda"), enter ``torch.cuda.device(x.device)`` around each launch, assert
``x.is_cuda``, branch on ``x.device.type``, and draw philox seeds from the CUDA generator. This module
answers all of that in a cell of the cpu backend, in one place, from the device's committed record
(`campaign.backends.devicerecord`, dumped on the card), so the kernels compile for the target with
the configuration FlagGems chooses on the card, and nothing is launched:

- **torch.cuda's query API** answers as the recorded card: available, one device, its properties,
  name and capability; ``device``/``_DeviceGuard`` are no-op guards; synchronize and empty_cache do
  nothing; ``default_generators`` hold a philox state of the card's layout (seed, offset), started at
  torch's default seed, so FlagGems' random ops draw seeds and offsets as they do on the card.
- **Tensors say they are on the card**: ``Tensor.device`` reads ``cuda:0`` and ``is_cuda`` True, so a
  device-type branch takes the card's path; a tensor built for ``cuda`` (a ``device=`` argument,
  ``.to``, ``.cuda()``) is built on the host instead: the torch functions that take a ``device=``
  (read from their own documentation) and the Tensor methods that move are wrapped where they are
  looked up, so FlagGems' ops, called from the dispatcher, are answered as its tests are.
- **FlagGems dispatches on the CPU key**: its aten registrations use ``runtime.device.dispatch_key``,
  set to ``CPU`` the moment flag_gems finishes importing (a wrapped loader), so ``use_gems`` and
  ``enable`` route host tensors to its Triton ops.
- **Float inputs are not filled**: ``torch.randn``/``rand`` (and ``_like``) build the tensor unfilled
  (integer draws -- indices, counts -- are drawn as ever): a skipped launch reads no input, and
  FlagGems' 2**30-element shapes cost seconds and gigabytes per filled tensor. Where FlagGems' own op
  takes the call (inside ``use_gems``: the op a randn workload times) it goes on to that op, whose
  kernel compiles and whose launch is skipped (`gems_takes`). The integer and bool
  inputs of its benchmark's input builder (``generate_tensor_input``: the whole dtype's range) are
  left unfilled too, their storages marked (a host read of one is counted below); its run loop's
  per-shape ``gc.collect()`` collects the young generations only (`campaign.plugins.offline_bench`).
- **What the card decides from data is counted, not trusted**: a launch is skipped, so its outputs
  hold whatever the allocation held. The storage of every tensor handed to a launch is marked, and a
  host read of a tensor on a marked storage (``item``, ``tolist``, ``bool``, ``int``, ``float``,
  ``numpy``, and a tensor passed where C++ takes a number: ``torch.empty(part_sums[-1])``, through
  aten's scalar read) is counted: host logic that reads kernel results (nonzero, unique, masked_select) chose
  its next kernels from garbage, and the cell says where and how often. A value derived from a kernel's
  output by further torch ops before it is read is not followed: the count is a floor.
- **FlagGems handing an op back to torch is counted**: its ``OpOverload.redispatch`` calls (``to``,
  ``copy_`` under their conditions) compile no Triton kernel, by op and call site.

Both are written to the cell's offline.json (`campaign.contract.cellfiles.OfflineTrust`), and the screen
gives a workload whose cell holds either NEEDS_CARD (`campaign.judging.screening`). Not detected: aten's
C++ branches on the device type (``at::dropout``'s fused kernel, answered by hand in `offline_torch.fused_dropout`;
another would take the host's composite path unseen), FlagGems' Python device branches (answered: tensors
say ``cuda``, so they take the card's path), and a kernel result read after further torch ops.

FlagGems is screened only as 5.0.2 (the device record's properties and the vendor's tune configs are
read as that version reads them) with its vendor's configs present: `install` refuses anything else by
name (`Unscreenable`), and the worker records the refusal as a failed preflight check.

The shim is installed once per process (a batch runs several workloads in one) before any conftest
is imported (FlagGems' benchmark conftest imports flag_gems at its top), and only where flag_gems is
installed and the target's family has a FlagGems vendor; run_identity records the record it answered
from (`answered_from`). Environment: the cell is given ``GEMS_VENDOR`` by the parent (the target
family's vendor, `campaign.contract.cellenv_rules`) and its own tuner store (``FLAGGEMS_CACHE_DIR``).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Optional

import pytest

from campaign.backends import devicerecord
from campaign.contract.artifacts import OFFLINE_FILE
from campaign.contract.canonical import write_json_new
from campaign.contract.cellfiles import OfflineTrust, Site
from campaign.contract.platforms import gems_vendor
from campaign.plugins import compile_only, offline_bench, offline_reads, offline_torch

SCREENED_VERSION = "5.0.2"      # the FlagGems whose configuration the device record and vendor configs answer


class Unscreenable(ValueError):
    """FlagGems cannot be screened offline here: ``check`` names the preflight check it fails."""

    def __init__(self, check: str, detail: str):
        super().__init__(detail)
        self.check = check


@dataclass
class Shim:
    target: str
    digest: str
    flag_gems: str = ""
    marked: set = field(default_factory=set)     # data_ptr of every storage a skipped launch was handed, or unfilled
    host_reads: Counter = field(default_factory=Counter)   # call site -> host reads of marked tensors
    fallbacks: Counter = field(default_factory=Counter)    # "op from call site" -> FlagGems' redispatches
    compile_errors: Counter = field(default_factory=Counter)   # "kernel: error" -> compiles that raised
    kept: list = field(default_factory=list)     # what the process's patches need alive: the scalar read's library

    @property
    def answered_from(self) -> str:
        return f"{self.target} sha256:{self.digest}"

    @property
    def reads(self) -> int:
        return sum(self.host_reads.values())

    def reset(self) -> None:
        """A session counts its own: storages marked by an earlier workload of the process are freed by
        now, and an address the allocator hands out again is not that launch's output."""
        self.marked.clear()
        self.host_reads.clear()
        self.fallbacks.clear()
        self.compile_errors.clear()

    def trust(self) -> OfflineTrust:
        def sites(counts: Counter) -> tuple[Site, ...]:
            return tuple(Site(site=k, count=v) for k, v in sorted(counts.items()))
        return OfflineTrust(answered_from=self.answered_from, flag_gems=self.flag_gems,
                            host_reads=sites(self.host_reads), torch_fallbacks=sites(self.fallbacks),
                            compile_errors=sites(self.compile_errors))


ACTIVE: Optional[Shim] = None


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` when ``name`` has finished importing (wrapping its loader's exec)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module, then = spec.loader.exec_module, self.then

        def exec_then(module):
            exec_module(module)
            then(module)
        spec.loader.exec_module = exec_then
        return spec


def dispatch_on_host(flag_gems) -> None:
    """FlagGems' ops go to the CPU key; its philox bookkeeping stays host arithmetic.

    On the card the generator state is a host tensor, so ``c1 += increment`` runs on aten's CPU
    kernel; here the CPU key is FlagGems', and that add would be a skipped Triton launch that never
    moves the offset (every draw the same offset, other kernels compiled: seen as ``_copy_kernel``
    and ``add_func_tensor_scalar`` in every random op's IR). Each module's binding is replaced."""
    flag_gems.runtime.device.dispatch_key = "CPU"
    random_utils = sys.modules["flag_gems.utils.random_utils"]
    original = random_utils.philox_backend_seed_offset

    def philox_backend_seed_offset(increment, generator=None):
        import torch
        source = torch.cuda.default_generators[0] if generator is None else generator
        return source.advance(increment) if isinstance(source, offline_torch.PhiloxState) else original(increment, generator)

    for module in [m for name, m in sys.modules.items() if name.startswith("flag_gems") and m is not None]:
        if getattr(module, "philox_backend_seed_offset", None) is original:
            module.philox_backend_seed_offset = philox_backend_seed_offset


def after_import(name: str, then) -> None:
    """``then(module)`` now if ``name`` is imported, else when it has finished importing."""
    if name in sys.modules:
        then(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


def mark_launch_args(args) -> None:
    """Called by the compile-only launcher with a skipped launch's arguments."""
    if ACTIVE is None:
        return
    import torch
    for value in args:
        if isinstance(value, torch.Tensor) and (ptr := offline_reads.storage_ptr(value)):
            ACTIVE.marked.add(ptr)


def gems_takes(name: str) -> bool:
    """Whether aten's ``name`` goes to FlagGems' own op now: inside ``use_gems`` (or after ``enable``)
    FlagGems' registrar holds the aten names it registered, and outside it FlagGems has none."""
    registrar = getattr(sys.modules.get("flag_gems"), "current_work_registrar", None)
    return registrar is not None and name in getattr(registrar, "all_keys", ())


# the providers whose workloads run FlagGems: a cell of another provider is left to plain torch (a
# batch keeps the shim for its later workloads once one of these installed it: one process, one torch)
PROVIDERS = ("flaggems", "flaggems_upstream")


def _installed() -> bool:
    """The flag_gems that imports is an installed FlagGems distribution's: a module named flag_gems
    found elsewhere (a stand-in on the path, ahead of an installed one) is not what this shim answers for."""
    try:
        package = Path(str(metadata.distribution("flag_gems").locate_file("flag_gems"))).resolve()
    except metadata.PackageNotFoundError:
        return False
    spec = importlib.util.find_spec("flag_gems")
    return spec is not None and spec.origin is not None and Path(spec.origin).resolve().parent == package


def screenable(vendor: str, environ=os.environ) -> str:
    """The installed FlagGems' version, where it is the one screened and ``vendor``'s configs are present
    and chosen; `Unscreenable` names what is not."""
    version = metadata.version("flag_gems")
    if version != SCREENED_VERSION:
        raise Unscreenable("offline_flaggems_version", f"flag_gems {version} is installed; the offline screen answers "
                           f"as FlagGems {SCREENED_VERSION} configures (its device properties and vendor tune configs)")
    chosen = environ.get("GEMS_VENDOR")
    if chosen != vendor:
        raise Unscreenable("offline_gems_vendor", f"GEMS_VENDOR is {chosen or 'unset'}, the target's vendor is "
                           f"{vendor}: FlagGems would probe for a device and choose other configs")
    configs = Path(str(metadata.distribution("flag_gems").locate_file("flag_gems"))) / "runtime" / "backend" / f"_{vendor}"
    if not (configs / "tune_configs.yaml").is_file():
        raise Unscreenable("offline_gems_vendor", f"{configs}/tune_configs.yaml is absent: FlagGems' {vendor} "
                           "vendor configs are not installed, its tuners would run on other configs")
    return version


def install(target: str, provider: str) -> Optional[Shim]:
    """Answer for ``target``'s card in this process (once; later calls return the shim in place).
    None where the provider runs no FlagGems, flag_gems is not installed, or the target's family has
    no FlagGems vendor; `Unscreenable` where the installed FlagGems cannot be screened."""
    global ACTIVE
    if ACTIVE is not None:
        return ACTIVE
    vendor = gems_vendor("cpu", target)
    if provider not in PROVIDERS or vendor is None or not _installed():
        return None
    version = screenable(vendor)
    import torch

    record = devicerecord.load(target)
    shim = Shim(target=target, digest=devicerecord.digest(record), flag_gems=version)
    offline_torch.answer_torch_cuda(torch.cuda, record)
    offline_torch.tensors_on_host(torch, gems_takes)
    offline_reads.host_reads_counted(torch, shim)
    shim.kept.append(offline_reads.scalar_reads_counted(torch, shim))
    offline_torch.fused_dropout(torch)
    offline_reads.fallbacks_counted(torch, shim)
    offline_reads.compile_errors_named(shim)
    after_import("flag_gems", dispatch_on_host)
    after_import(offline_bench.BENCHMARK_FRAMEWORK, lambda module: offline_bench.prepare(module, shim))
    compile_only.LAUNCH_HOOKS.append(mark_launch_args)
    ACTIVE = shim
    return shim


class FlagGemsOffline:
    def __init__(self, ctx):
        self.ctx = ctx

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self, early_config, parser, args):
        try:
            shim = install(self.ctx.terms.device.target, self.ctx.task.provider)
        except (FileNotFoundError, ValueError) as exc:
            raise pytest.UsageError(f"flaggems offline: {exc}") from None
        if shim is not None:
            shim.reset()
            self.ctx.log.line(f"flaggems offline: torch.cuda answers as {shim.answered_from}; tensors built "
                              "for cuda live on the host; FlagGems dispatches on the CPU key")

    def pytest_unconfigure(self, config):
        if ACTIVE is not None:
            self.ctx.log.line(f"flaggems offline: {ACTIVE.reads} host reads of tensors a skipped launch was handed")
            write_trust(self.ctx.cell_dir, ACTIVE)


def write_trust(cell_dir: Path, shim: Shim) -> None:
    """offline.json, once per cell: the benchmark session's (the correctness session runs nothing offline)."""
    path = Path(cell_dir) / OFFLINE_FILE
    if not path.exists():
        write_json_new(path, shim.trust().model_dump(mode="json"))


def make(ctx) -> FlagGemsOffline:
    return FlagGemsOffline(ctx)
