"""Moore Threads through torch_musa (``torch.musa``): MUSAGraph capture, mthreads-gmi telemetry.

MUSA has its own wording; none of the CUDA phrases match it. Recorded on an S5000:

- "operation not permitted when stream is capturing" (perf_sort): fallback
- "MUSAGeneratorImpl::current_seed is not callable during capture" (dropout, rand): fallback
- "MUSA error: unknown error" during capture: poisoned -- the fallback runs and the
  process then dies in teardown (unique2 before it was denied: rc=1, no rows).

``capture_deny`` skips the attempt for operators where the attempt itself is the
damage. It is keyed by the pytest FUNCTION name minus ``test_`` (``unique2``, not the
file's ``unique``; `campaign.contract.timers.deny_key`): a wrong key fails open silently.

Nothing here runs off an MThreads host; device enumeration reads torch.musa's
properties defensively because which fields it fills was not verified offline.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from campaign.backends.base import Capabilities, CaptureVerdict, DeviceInfo
from campaign.backends.capture import classify
from campaign.contract.platforms import platform

NAME = "musa"
# MUSA's wording for a device fault has not been recorded, so none is guessed: an
# unrecognised fault is classified fallback and surfaces when the row is re-run
# uncaptured.
FATAL: tuple[str, ...] = ()
POISONED = ("musa error: unknown error",)
CAPTURE_DENY = frozenset({"unique2"})


def torch_musa_devices() -> list[DeviceInfo]:
    """The devices this process sees (after MUSA_VISIBLE_DEVICES), in torch_musa's order."""
    try:
        import torch
        import torch_musa  # noqa: F401  (registers torch.musa)
    except ImportError:
        return []
    if not torch.musa.is_available():
        return []
    devices = []
    for index in range(torch.musa.device_count()):
        props = torch.musa.get_device_properties(index)
        major, minor = getattr(props, "major", None), getattr(props, "minor", None)
        uuid = getattr(props, "uuid", None)
        devices.append(DeviceInfo(index=index, name=props.name, uuid=str(uuid) if uuid else None,
                                  target=f"musa:{major * 10 + minor}" if major is not None else "musa:unknown"))
    return devices


@dataclass(frozen=True)
class MusaBackend:
    discover: Callable[[], list[DeviceInfo]] = torch_musa_devices
    name: str = NAME
    torch_device: str = "musa"
    visibility_variable: Optional[str] = platform(NAME).visibility_variable
    capabilities: Capabilities = Capabilities.of(NAME)
    capture_deny: frozenset[str] = CAPTURE_DENY
    compat_plugins: tuple[str, ...] = ("campaign.plugins.musa_compat",)

    def enumerate_devices(self) -> list[DeviceInfo]:
        return list(self.discover())

    def device_interface(self):
        import torch
        import torch_musa  # noqa: F401

        return torch.musa

    def graph_class(self):
        import torch
        import torch_musa  # noqa: F401

        return torch.musa.MUSAGraph

    def classify_capture_failure(self, text: str) -> CaptureVerdict:
        return classify(text, FATAL, POISONED)
