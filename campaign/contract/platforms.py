"""The backends and the Triton target families: the one list of each, read everywhere else.

A backend (the manifest's ``device.backend``) is how a cell reaches a device; a target
family (the part of ``device.target`` before the colon) is which of Triton's compilers
builds the code. They are not the same list: the ``cpu`` backend compiles for any family
offline (`campaign.plugins.compile_only`), and ``rocm`` reaches a ``hip`` target.

Validation (`campaign.contract.manifest`), the plans, the cell's environment, the telemetry
source, the IR stages the capture writes and the caliber's runtime version all read these
rows; the vendor code behind a name is `campaign.backends` (tested: tests/structure/test_vocabulary.py).
Adding a backend is one `Platform` row here, its module under `campaign/backends/`, its
registration there and, if it samples the device, its source in `campaign.running.telemetry`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Family:
    """A Triton target family: ``<name>:<arch>`` in a manifest, ``GPUTarget(name, arch, warp_size)``."""

    name: str
    arch: str                       # regex of the arch part
    numeric_arch: bool              # "90" -> 90 for GPUTarget; "gfx942" stays a string
    warp_size: int
    stages: tuple[str, ...]         # the text stages Triton writes for it, in pipeline order
    disassembly: Optional[str]      # a stage taken offline from the binary (nvdisasm over the cubin)
    # FlagGems' GEMS_VENDOR for a card of this family: what the cpu backend's offline shim answers
    # as (`campaign.plugins.flaggems_offline`); None: FlagGems is not screened offline for it
    gems_vendor: Optional[str] = None

    @property
    def ir_stages(self) -> tuple[str, ...]:
        """Every stage a cell compiled for this family can be fingerprinted at, in pipeline order."""
        return self.stages + ((self.disassembly,) if self.disassembly else ())


@dataclass(frozen=True)
class Platform:
    """What a backend is, as data; the code that acts on it is `campaign.backends.<name>`."""

    name: str
    executes: bool                  # False: compile-only, launches counted, nothing run
    graph_capture: bool
    telemetry: Optional[str]        # a source in `campaign.running.telemetry`; None: no sampling
    disassembler: Optional[str]
    families: tuple[str, ...]       # the target families its device may name
    visibility_variable: Optional[str]
    runtime_version: Optional[str]  # the torch.version attribute naming the device runtime
    gems_vendor: Optional[str]      # FlagGems' GEMS_VENDOR for it (`campaign.contract.cellenv_rules`)
    uuid_prefix: Optional[str] = None   # what its tools print before the uuid torch reports bare


FAMILIES = (
    Family("cuda", arch=r"[0-9]+", numeric_arch=True, warp_size=32,
           stages=("ttir", "ttgir", "llir", "ptx"), disassembly="sass", gems_vendor="nvidia"),
    # MUSA's stages were never recorded on a MUSA host; ir_capture writes whichever of these appear.
    Family("musa", arch=r"[0-9]+", numeric_arch=True, warp_size=32,
           stages=("ttir", "ttgir", "llir", "ptx"), disassembly=None),
    Family("hip", arch=r"gfx[0-9a-f]+", numeric_arch=False, warp_size=64,
           stages=("ttir", "ttgir", "llir", "amdgcn"), disassembly=None),
)
BY_FAMILY = {family.name: family for family in FAMILIES}

PLATFORMS = (
    Platform("cuda", executes=True, graph_capture=True, telemetry="nvml", disassembler="nvdisasm",
             families=("cuda",), visibility_variable="CUDA_VISIBLE_DEVICES", runtime_version="cuda",
             gems_vendor="nvidia", uuid_prefix="GPU-"),
    Platform("musa", executes=True, graph_capture=True, telemetry="mthreads-gmi", disassembler=None,
             families=("musa",), visibility_variable="MUSA_VISIBLE_DEVICES", runtime_version="musa",
             gems_vendor="mthreads"),
    Platform("rocm", executes=True, graph_capture=True, telemetry="amdsmi", disassembler=None,
             families=("hip",), visibility_variable="HIP_VISIBLE_DEVICES", runtime_version="hip",
             gems_vendor="amd"),
    # compiles for any family offline (`campaign.plugins.compile_only`); nothing to see or sample
    Platform("cpu", executes=False, graph_capture=False, telemetry=None, disassembler=None,
             families=tuple(BY_FAMILY), visibility_variable=None, runtime_version=None, gems_vendor=None),
)
BY_NAME = {platform.name: platform for platform in PLATFORMS}

BACKEND_NAMES = tuple(BY_NAME)
UUID_PREFIXES = tuple(p.uuid_prefix for p in PLATFORMS if p.uuid_prefix is not None)
TELEMETRY_SOURCES = tuple(p.telemetry for p in PLATFORMS if p.telemetry is not None)
# Every stage a manifest may fingerprint at, each family's order kept where they share it.
IR_STAGES = tuple(dict.fromkeys(s for f in FAMILIES for s in f.ir_stages))
TEXT_STAGES = tuple(dict.fromkeys(s for f in FAMILIES for s in f.stages))
TARGET_PATTERN = "^(" + "|".join(f"{f.name}:{f.arch}" for f in FAMILIES) + ")$"


def platform(name: str) -> Platform:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKEND_NAMES))}") from None


def gems_vendor(backend: str, target: str) -> Optional[str]:
    """FlagGems' vendor in a cell of ``backend`` for ``target``: the backend's own, or, on a backend
    that compiles offline, that of the target's family (a cpu cell for cuda:90 configures FlagGems
    as an NVIDIA card does)."""
    row = platform(backend)
    if row.executes:
        return row.gems_vendor
    found = BY_FAMILY.get(target.partition(":")[0])
    return found.gems_vendor if found is not None else None


def card_backend(target: str) -> Optional[str]:
    """The backend that runs ``target`` on its card (cuda for cuda:90): where an offline screen's
    changed workloads are timed."""
    name = target.partition(":")[0]
    return next((p.name for p in PLATFORMS if p.executes and name in p.families), None)


def family(target: str) -> Family:
    """The family of a target such as "cuda:90" or "hip:gfx942"."""
    name, _, arch = target.partition(":")
    found = BY_FAMILY.get(name)
    if found is None or not re.fullmatch(found.arch, arch):
        raise ValueError(f"target {target!r} is not <family>:<arch> with a family of "
                         f"{', '.join(BY_FAMILY)} (e.g. cuda:90, hip:gfx942)")
    return found


def triton_target(target: str) -> tuple[str, int | str, int]:
    """``GPUTarget``'s arguments for a target: "cuda:90" -> ("cuda", 90, 32), "hip:gfx942" ->
    ("hip", "gfx942", 64)."""
    spec = family(target)
    arch = target.partition(":")[2]
    return spec.name, int(arch) if spec.numeric_arch else arch, spec.warp_size


def stages_of(target: str) -> tuple[str, ...]:
    """The IR stages a cell compiled for ``target`` can be fingerprinted at, in pipeline order."""
    return family(target).ir_stages


def visibility_variables() -> tuple[str, ...]:
    """Every backend's visibility variable, sorted: what a cell's env may inherit."""
    return tuple(sorted({p.visibility_variable for p in PLATFORMS if p.visibility_variable is not None}))
