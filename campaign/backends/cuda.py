"""NVIDIA through torch.cuda: graph capture, NVML telemetry, CUDA's error wording."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from campaign.backends.base import Capabilities, CaptureVerdict, DeviceInfo
from campaign.backends.capture import classify
from campaign.contract.platforms import platform

NAME = "cuda"
# Device faults, as the CUDA runtime words them ("CUDA error: an illegal memory access
# was encountered"). "device-side assert triggered" and never "device-side assert":
# see campaign.backends.capture.
FATAL = (
    "illegal memory access",
    "misaligned address",
    "device-side assert triggered",
    "unspecified launch failure",
    "an illegal instruction was encountered",
)
# No poisoning wording has been observed on CUDA; none is guessed.
POISONED: tuple[str, ...] = ()


def torch_cuda_devices() -> list[DeviceInfo]:
    """The devices this process sees (after CUDA_VISIBLE_DEVICES), in torch's order."""
    import torch

    if not torch.cuda.is_available():
        return []
    return torch_devices(lambda props: f"cuda:{props.major * 10 + props.minor}", _nvml_driver_version())


def torch_devices(target: Callable[[Any], str], driver: Optional[str]) -> list[DeviceInfo]:
    """Every device ``torch.cuda`` enumerates (a ROCm torch's too), its target read from its
    properties by ``target``."""
    import torch

    devices = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        uuid = str(props.uuid) if getattr(props, "uuid", None) else None
        devices.append(DeviceInfo(index=index, name=props.name, uuid=uuid, target=target(props), driver=driver))
    return devices


def _nvml_driver_version() -> Optional[str]:
    # torch exposes the runtime's version, not the driver's; NVML (nvidia-ml-py, the
    # gpu extra) gives the string nvidia-smi prints. Absent NVML, the driver is unknown.
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return None
    return version.decode() if isinstance(version, bytes) else str(version)


@dataclass(frozen=True)
class CudaBackend:
    discover: Callable[[], list[DeviceInfo]] = torch_cuda_devices
    name: str = NAME
    torch_device: str = "cuda"
    visibility_variable: Optional[str] = platform(NAME).visibility_variable
    capabilities: Capabilities = Capabilities.of(NAME)
    capture_deny: frozenset[str] = frozenset()
    compat_plugins: tuple[str, ...] = ()

    def enumerate_devices(self) -> list[DeviceInfo]:
        return list(self.discover())

    def device_interface(self):
        import torch

        return torch.cuda

    def graph_class(self):
        import torch

        return torch.cuda.CUDAGraph

    def classify_capture_failure(self, text: str) -> CaptureVerdict:
        return classify(text, FATAL, POISONED)
