"""AMD Instinct through a ROCm build of torch (HIP behind ``torch.cuda``): hipGraph capture,
amdsmi telemetry (`campaign.running.telemetry.AmdSmiSource`), targets spelled ``hip:gfx942``.

A ROCm torch answers through ``torch.cuda`` and names its runtime ``torch.version.hip``;
the architecture is ``gcnArchName`` ("gfx942:sramecc+:xnack-"), whose feature suffix is
not part of the target Triton compiles for. Nothing here ran on an AMD host: the device
faults' wording was not recorded, so none is guessed (as on MUSA), and the compile path is
tested offline through the cpu backend with target ``hip:gfx942``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from campaign.backends.base import Capabilities, CaptureVerdict, DeviceInfo
from campaign.backends.capture import classify
from campaign.backends.cuda import CudaBackend, torch_devices
from campaign.contract.platforms import platform

NAME = "rocm"
FATAL: tuple[str, ...] = ()
POISONED: tuple[str, ...] = ()


def target_of(arch_name: str) -> str:
    """"gfx942:sramecc+:xnack-" -> "hip:gfx942"."""
    family, = platform(NAME).families
    return f"{family}:{arch_name.split(':', 1)[0].strip()}"


def torch_rocm_devices() -> list[DeviceInfo]:
    """The devices this process sees (after HIP_VISIBLE_DEVICES), in torch's order; none
    where torch is not a ROCm build."""
    import torch

    if getattr(torch.version, platform(NAME).runtime_version, None) is None or not torch.cuda.is_available():
        return []
    return torch_devices(lambda props: target_of(getattr(props, "gcnArchName", "unknown")), amdsmi_driver_version())


def amdsmi_driver_version() -> Optional[str]:
    """The kernel driver's version from amdsmi (the ``amdsmi`` package of ROCm); None where absent."""
    try:
        import amdsmi
    except ImportError:
        return None
    try:
        amdsmi.amdsmi_init()
        try:
            handles = amdsmi.amdsmi_get_processor_handles()
            info = amdsmi.amdsmi_get_gpu_driver_info(handles[0]) if handles else {}
        finally:
            amdsmi.amdsmi_shut_down()
    except Exception:  # amdsmi raises its own AmdSmiException family, and KeyError on old builds
        return None
    return info.get("driver_version") or None


@dataclass(frozen=True)
class RocmBackend(CudaBackend):
    """CUDA's interface, devices, graph class and capture handling through ``torch.cuda``: a ROCm
    torch answers there. What differs is the data: discovery, name, visibility, capabilities."""

    discover: Callable[[], list[DeviceInfo]] = torch_rocm_devices
    name: str = NAME
    visibility_variable: Optional[str] = platform(NAME).visibility_variable
    capabilities: Capabilities = Capabilities.of(NAME)

    def classify_capture_failure(self, text: str) -> CaptureVerdict:
        return classify(text, FATAL, POISONED)
