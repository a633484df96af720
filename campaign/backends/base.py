"""The one interface behind which everything vendor-specific lives.

A backend answers: which devices are present, which variable pins visibility,
what the device can do (capabilities), which timer and telemetry source apply,
how a graph-capture failure's wording is classified, which operators are
denied capture up front, and -- derived from the capabilities, never copied by
hand -- which pytest plugins a cell runs with (`campaign.backends.plan`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Protocol

from campaign.contract.platforms import platform

CaptureVerdict = Literal["fallback", "poisoned", "fatal"]


@dataclass(frozen=True)
class Capabilities:
    executes: bool                  # False: compile-only, launches are counted, not run
    graph_capture: bool             # the device can capture and replay graphs
    telemetry: Optional[str]        # a source of `campaign.running.telemetry`; None: nothing sampled
    disassembler: Optional[str]     # tool that yields sass, when present

    @classmethod
    def of(cls, name: str) -> "Capabilities":
        """The capabilities the backend's row declares (`campaign.contract.platforms`): never retyped here."""
        row = platform(name)
        return cls(executes=row.executes, graph_capture=row.graph_capture, telemetry=row.telemetry,
                   disassembler=row.disassembler)


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    uuid: Optional[str]
    target: str                     # "cuda:90", "hip:gfx942"
    driver: Optional[str] = None


class Backend(Protocol):
    name: str                       # a name of `campaign.contract.platforms.BACKEND_NAMES`
    torch_device: str               # device string tensors are created on
    visibility_variable: Optional[str]
    capabilities: Capabilities
    capture_deny: frozenset[str]    # pytest function names minus "test_", e.g. "unique2"
    compat_plugins: tuple[str, ...] # vendor compat plugins, planned before every other

    def enumerate_devices(self) -> list[DeviceInfo]: ...

    def device_interface(self):     # torch.cuda / torch.musa; None on cpu
        ...

    def graph_class(self):          # torch.cuda.CUDAGraph / torch.musa.MUSAGraph; None on cpu
        ...

    def classify_capture_failure(self, text: str) -> CaptureVerdict: ...
