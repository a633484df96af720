"""No accelerator: Triton compiles for the manifest's declared target through the
compile-only driver (`campaign.plugins.compile_only`); launches are counted, never run.

There is no device to enumerate -- the target comes from the manifest -- no graph,
no telemetry, and no capture to fail.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from campaign.backends.base import Capabilities, CaptureVerdict, DeviceInfo

NAME = "cpu"


@dataclass(frozen=True)
class CpuBackend:
    name: str = NAME
    torch_device: str = "cpu"
    visibility_variable: Optional[str] = None
    capabilities: Capabilities = Capabilities.of(NAME)
    capture_deny: frozenset[str] = frozenset()
    # FlagGems imports and dispatches as on the target's card, where it is installed
    compat_plugins: tuple[str, ...] = ("campaign.plugins.flaggems_offline",)

    def enumerate_devices(self) -> list[DeviceInfo]:
        return []

    def device_interface(self):
        return None

    def graph_class(self):
        return None

    def classify_capture_failure(self, text: str) -> CaptureVerdict:
        # Nothing executes, so nothing is captured; a call here is a harness bug.
        raise RuntimeError(f"the cpu backend captures nothing; asked to classify: {text[:200]}")
