"""The `cpu` backend's compile-only driver: real code for a declared target, nothing executed.

Installed with ``triton.runtime.driver.set_active`` at pytest_configure (restored at
unconfigure), it makes an ordinary launch with CPU tensors go through the whole
Triton pipeline for ``manifest.device.target`` ("cuda:90" -> ``GPUTarget("cuda", 90, 32)``,
"hip:gfx942" -> ``GPUTarget("hip", "gfx942", 64)``; the families are
`campaign.contract.platforms.FAMILIES`) with the options the GPU would use, so the TTGIR
equals what the device compiles. Nothing here trims the backend's stages: ptxas (shipped
in Triton's wheel) builds the cubin as on a GPU, so SASS can be taken offline
(`campaign.plugins.ir_capture`); for hip the wheel's LLVM writes amdgcn and the hsaco.

Protocol with the rest of Triton 3.6 (runtime/jit.py, compiler/compiler.py):

- ``utils.load_binary`` hands out a unique fake (module, function) handle pair per
  loaded variant, unique across the workloads of a batch process too, so a launch's ``function`` joins to one variant's hash through
  ``kernel_load_end_hook``, exactly as CUfunction handles do on a GPU.
- ``launcher_cls(...)(grid..., function, packed_metadata, launch_metadata, enter, exit, *args)``
  fires the enter and exit hooks itself (the C launcher does that on a GPU), counts
  the launch and skips it: output tensors keep whatever they held.
- ``get_benchmarker`` refuses: there is nothing to time, so autotuned kernels need a
  recording to replay or the declared first-config policy (`campaign.plugins.autotune`).
"""
from __future__ import annotations

import functools
import importlib
import itertools

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase
from triton.compiler.compiler import make_backend
from triton.runtime.driver import driver as _active_driver

from campaign.contract.platforms import triton_target

# What the device reports (cuDeviceGetAttribute, hipDeviceGetAttribute), per target. Only
# max_shared_mem, max_num_regs, multiprocessor_count and warpSize are read while
# compiling, pruning or sizing grids; clocks and bus width are unknown offline (0).
DEVICE_PROPERTIES = {
    # H100 / H200 SXM: 227 KiB opt-in shared memory per block, 132 SMs.
    "cuda:90": {"max_shared_mem": 232448, "max_num_regs": 65536, "multiprocessor_count": 132, "warpSize": 32,
         "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0},
    # A100: 163 KiB opt-in shared memory per block, 108 SMs.
    "cuda:80": {"max_shared_mem": 166912, "max_num_regs": 65536, "multiprocessor_count": 108, "warpSize": 32,
         "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0},
    # MI300X: 64 KiB LDS per workgroup, 304 CUs, wavefront 64.
    "hip:gfx942": {"max_shared_mem": 65536, "max_num_regs": 65536, "multiprocessor_count": 304, "warpSize": 64,
                   "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0, "arch": "gfx942"},
}
MAX_THREADS_PER_BLOCK = 1024


class NothingToTime(RuntimeError):
    """Raised when something asks the compile-only driver to time a kernel."""


def parse_target(text: str) -> GPUTarget:
    """"cuda:90" -> GPUTarget("cuda", 90, 32), "hip:gfx942" -> GPUTarget("hip", "gfx942", 64)."""
    return GPUTarget(*triton_target(text))


def capability(target: GPUTarget) -> tuple[int, int]:
    """What torch reports as the device's capability: (9, 0) for cuda 90, (9, 4) for gfx942."""
    if isinstance(target.arch, int):
        return divmod(target.arch, 10)
    digits = target.arch.removeprefix("gfx")
    return int(digits[:-2]), int(digits[-2], 16)


def _refuse_benchmark(kernel_call, *, quantiles=None, **kwargs):
    raise NothingToTime("the compile-only driver executes nothing, so nothing can be timed: "
                        "replay recorded autotune configs or declare autotune policy first-config")


# One count for the process: a batch process builds a driver per workload, and the launch index joins
# a launch's handle to the variant loaded under it process-wide (`campaign.plugins.ir_capture.PROCESS`),
# so a handle is never handed out twice, as a CUfunction is not while its module is loaded.
HANDLES = itertools.count(0x1000)


class CompileOnlyUtils:
    def __init__(self, properties: dict):
        self._properties = dict(properties)
        self._handles = HANDLES
        self.loaded: dict[int, str] = {}            # fake function handle -> kernel name

    def load_binary(self, name, kernel, shared, device):
        module, function = next(self._handles), next(self._handles)
        self.loaded[function] = name
        # n_regs and n_spills come from the driver on a GPU; 0 here, nothing reads them to compile.
        return module, function, 0, 0, MAX_THREADS_PER_BLOCK

    def unload_module(self, module):                # called by Triton 3.9; nothing was loaded
        return None

    def get_device_properties(self, device):
        return dict(self._properties)


# Called with each skipped launch's kernel arguments (`campaign.plugins.flaggems_offline` marks the
# tensors a launch was handed: their contents are not what the card would have written).
LAUNCH_HOOKS: list = []


class CompileOnlyLauncher:
    """Stands in for the C launcher: hooks fire as on a GPU, the kernel does not run."""

    def __init__(self, driver: "CompileOnlyDriver", src, metadata):
        self.driver = driver

    def __call__(self, grid_x, grid_y, grid_z, stream, function, packed_metadata, launch_metadata,
                 enter_hook, exit_hook, *args):
        if enter_hook is not None:
            enter_hook(launch_metadata)
        self.driver.launches += 1
        for hook in LAUNCH_HOOKS:
            hook(args)
        if exit_hook is not None:
            exit_hook(launch_metadata)


class CompileOnlyDriver(DriverBase):
    def __init__(self, target: GPUTarget, properties: dict, ty_to_cpp=None):
        super().__init__()
        self.target = target
        self.ty_to_cpp = ty_to_cpp
        self.utils = CompileOnlyUtils(properties)
        self.launches = 0
        # Triton calls launcher_cls(src, metadata) once per loaded variant.
        self.launcher_cls = functools.partial(CompileOnlyLauncher, self)

    @classmethod
    def is_active(cls):
        return False                                # never picked automatically; set_active only

    def map_python_to_cpp_type(self, ty: str) -> str:
        return self.ty_to_cpp(ty)

    def get_current_target(self):
        return self.target

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        if device != 0:
            raise ValueError(f"the compile-only driver has one device (0), not {device}")

    def get_current_stream(self, device=None):
        return 0

    def get_device_capability(self, device=None):
        return capability(self.target)

    def get_device_interface(self):
        import torch
        return torch.cpu

    def get_benchmarker(self):
        return _refuse_benchmark

    def get_empty_cache_for_benchmark(self):
        import torch
        return torch.empty(0, dtype=torch.int)

    def clear_cache(self, cache):
        cache.zero_()


def build_driver(target_text: str) -> CompileOnlyDriver:
    target = parse_target(target_text)
    compiler = make_backend(target)                 # refuses a target no installed Triton backend compiles
    if target_text not in DEVICE_PROPERTIES:
        raise ValueError(f"no device properties known for {target_text}: add them to DEVICE_PROPERTIES "
                         f"(known: {', '.join(sorted(DEVICE_PROPERTIES))})")
    # the type names of the launcher Triton would build for this target (its backend's driver module)
    driver_module = importlib.import_module(type(compiler).__module__.rsplit(".", 1)[0] + ".driver")
    return CompileOnlyDriver(target, DEVICE_PROPERTIES[target_text], driver_module.ty_to_cpp)


class CompileOnlyPlugin:
    def __init__(self, ctx):
        self.ctx = ctx
        self.driver: CompileOnlyDriver | None = None
        self.previous = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        target = self.ctx.terms.device.target
        try:
            self.driver = build_driver(target)
        except (ValueError, RuntimeError) as exc:
            raise pytest.UsageError(f"compile-only driver: {exc}") from None
        # The private slot, not `.active`: reading that would build the default driver,
        # which raises on a machine without a GPU.
        self.previous = _active_driver._active
        _active_driver.set_active(self.driver)
        self.ctx.log.line(f"compile-only: triton {triton.__version__} compiles for {target}; nothing executes")

    def pytest_unconfigure(self, config):
        if self.driver is None:
            return
        if _active_driver._active is self.driver:
            _active_driver.set_active(self.previous)
        self.ctx.log.line(f"compile-only: {self.driver.launches} launches counted, none executed")
        self.driver = None


def make(ctx) -> CompileOnlyPlugin:
    return CompileOnlyPlugin(ctx)
