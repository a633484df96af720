"""A timed row's own clock: the SM clock and clocks-event reasons read inside its timing window.

Not a plugin (no ``make``): `campaign.plugins.timing` builds one `RowClocks` per cell and hands
it to the device timers (`campaign.plugins._device_timers`), which open it when a row's window
opens and close it when the window closes. Between the two a daemon thread reads every
`INTERVAL_S`; the measuring thread itself reads once at the open and once just before the
close, so every window holds at least two reads however short it is. Reads are NVML calls
through ctypes, which release the GIL: the sampling thread takes the measuring thread's host
path for a few microseconds every few milliseconds.

Which card: the cell's torch device (``cuda`` is index 0 of what the cell sees: a cell is
pinned to one card) mapped to NVML by its uuid from torch; without one, through the
visibility variable's entry (an index or a uuid), else the same index. Where no clock can be
read -- no pynvml, a backend without NVML (cpu, musa), no device -- `Unavailable` says why,
run.log says it once ("row clocks: not read: ...") and every row's ``clock`` stays None.

`matmul_load` is the steady-clock load a timed cell runs before its first row
(`campaign.contract.timers.STEADY_CLOCK_S`).
"""
from __future__ import annotations

import statistics
import threading
import time
from typing import Callable, Mapping, Optional, Protocol

from campaign.contract import clockreasons
from campaign.contract.cellfiles import RowClock

# Short against the shortest window (an event row's, >= warmup_ms + rep_ms: ~125 ms under the
# H200 manifests): ~25 reads in it. An NVML clock read costs tens of microseconds.
INTERVAL_S = 0.005

Read = tuple[Optional[float], Optional[int]]      # (SM clock MHz, clocks-event reasons mask); None: not read


class Unavailable(RuntimeError):
    """No clock can be read in this cell; the message says why."""


class Reader(Protocol):
    source: str                     # RowClock.source: "nvml"
    device: str                     # the card read, for run.log

    def read(self) -> Read: ...     # never raises for a failed read: that part is None


def summarize(source: str, reads: list[Read]) -> RowClock:
    """One window's reads as a `RowClock`; a read that gave neither a clock nor a reason does not count."""
    clocks = sorted(float(mhz) for mhz, _ in reads if mhz is not None)
    reasons = {name for _, mask in reads if mask is not None for name in clockreasons.names(mask)}
    return RowClock(source=source, samples=sum(mhz is not None or mask is not None for mhz, mask in reads),
                    sm_mhz_median=float(statistics.median(clocks)) if clocks else None,
                    sm_mhz_min=clocks[0] if clocks else None, sm_mhz_max=clocks[-1] if clocks else None,
                    reasons=tuple(sorted(reasons)))


class NvmlReader:
    source = "nvml"

    def __init__(self, nvml, handle, device: str):
        self.nvml = nvml
        self.handle = handle
        self.device = device
        self._reasons = clockreasons.nvml_reader(nvml)

    def _guarded(self, call, *args):
        try:
            return call(self.handle, *args)
        except self.nvml.NVMLError:
            return None

    def read(self) -> Read:
        return self._guarded(self.nvml.nvmlDeviceGetClockInfo, self.nvml.NVML_CLOCK_SM), self._guarded(self._reasons)


def torch_index(torch_device: str) -> int:
    """``cuda`` -> 0 (the current device of a cell pinned to one card), ``cuda:1`` -> 1."""
    _, _, index = torch_device.partition(":")
    return int(index) if index else 0


def nvml_uuid(text: str) -> str:
    """torch reports bare uuids; NVML looks them up with their "GPU-" (or "MIG-") prefix."""
    text = text.strip()
    return text if text[:4].upper() in ("GPU-", "MIG-") else f"GPU-{text}"


def nvml_handle(nvml, index: int, uuid: Optional[str], visible: Optional[str]) -> tuple[object, str]:
    """The NVML handle of the cell's device ``index`` and how it was found, for run.log.

    The uuid is exact whatever the device order; the visibility entry is what the runner
    pinned (an index in NVML's order, or a uuid); a bare index is NVML's only where nothing
    is pinned and CUDA_DEVICE_ORDER agrees, the last resort."""
    if uuid:
        return nvml.nvmlDeviceGetHandleByUUID(nvml_uuid(uuid)), f"uuid {nvml_uuid(uuid)}"
    entries = [part.strip() for part in visible.split(",") if part.strip()] if visible is not None else None
    if entries is not None:
        if index >= len(entries):
            raise Unavailable(f"device {index} is not among the visible devices {visible!r}")
        entry = entries[index]
        if entry.isdigit():
            return nvml.nvmlDeviceGetHandleByIndex(int(entry)), f"index {entry} (visibility variable)"
        return nvml.nvmlDeviceGetHandleByUUID(entry), f"uuid {entry} (visibility variable)"
    return nvml.nvmlDeviceGetHandleByIndex(index), f"index {index} (nothing pinned)"


def open_nvml(backend, environ: Mapping[str, str], nvml=None) -> NvmlReader:
    """The reader of the cell's device; `Unavailable` says why there is none.

    ``nvml``: the pynvml module (imported here when not given); device discovery is the
    backend's (``enumerate_devices``: torch's view, uuids included)."""
    if backend.capabilities.telemetry != "nvml":
        raise Unavailable(f"the {backend.name} backend reads no NVML clock "
                          f"(its telemetry: {backend.capabilities.telemetry or 'none'})")
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            raise Unavailable("pynvml is not installed (pip install nvidia-ml-py)") from None
    index = torch_index(backend.torch_device)
    try:
        info = next((d for d in backend.enumerate_devices() if d.index == index), None)
    except RuntimeError as exc:                     # torch's own words for a device it cannot reach
        raise Unavailable(f"device discovery failed: {exc}") from None
    if info is None:
        raise Unavailable(f"torch sees no {backend.torch_device} device {index}")
    visible = environ.get(backend.visibility_variable) if backend.visibility_variable else None
    try:
        nvml.nvmlInit()
        handle, found = nvml_handle(nvml, index, info.uuid, visible)
    except nvml.NVMLError as exc:
        raise Unavailable(f"NVML: {type(exc).__name__}: {exc}") from None
    return NvmlReader(nvml, handle, f"{backend.torch_device}:{index} = NVML {found}")


class RowClocks:
    """One cell's row clocks: the reader opened once, then one `open`..`close` per timed window."""

    def __init__(self, open_reader: Callable[[], Reader], log, interval_s: float = INTERVAL_S):
        self._open_reader = open_reader
        self._log = log
        self.interval_s = interval_s
        self.reader: Optional[Reader] = None
        self.why_not: Optional[str] = None          # why no clock is read, once tried
        self._tried = False
        self._reads: list[Read] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> bool:
        """Open the reader on the first call; False (said once in run.log) where there is none."""
        if not self._tried:
            self._tried = True
            try:
                self.reader = self._open_reader()
            except Unavailable as exc:
                self.why_not = str(exc)
                self._log.line(f"row clocks: not read: {self.why_not}")
            else:
                self._log.line(f"row clocks: {self.reader.source} {self.reader.device}, every "
                               f"{self.interval_s * 1000:g} ms inside each timed row's window")
        return self.reader is not None

    def read_now(self) -> Optional[Read]:
        """One read outside any window (the steady-clock load's before and after)."""
        return self.reader.read() if self.start() else None

    def open(self) -> None:
        """A window opened: read now, then every interval until `close`."""
        self.discard()
        if not self.start():
            return
        self._reads = [self.reader.read()]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(self._stop, self._reads),
                                        name="rowclock", daemon=True)
        self._thread.start()

    def _loop(self, stop: threading.Event, reads: list[Read]) -> None:
        while not stop.wait(self.interval_s):
            reads.append(self.reader.read())

    def close(self) -> Optional[RowClock]:
        """The window is closing: stop the thread, read once more, summarise. None: not open."""
        if not self._stop_thread():
            return None
        self._reads.append(self.reader.read())
        return summarize(self.reader.source, self._reads)

    def discard(self) -> None:
        """Stop without a summary (a timing that raised); nothing when not open."""
        self._stop_thread()

    def _stop_thread(self) -> bool:
        if self._thread is None:
            return False
        self._stop.set()
        self._thread.join()
        self._thread = None
        return True


def matmul_load(backend, seconds: float, wall: Callable[[], float] = time.monotonic) -> int:
    """Dense fp16 matmuls on the cell's device for ``seconds`` of wall time; how many ran.

    4096^3 in fp16 keeps an H100/H200's tensor cores busy (~0.1 ms each); synchronising
    every 8 keeps the wall-time check close to what the device did."""
    import torch

    interface = backend.device_interface()
    a = torch.randn(4096, 4096, dtype=torch.float16, device=backend.torch_device)
    b = torch.randn(4096, 4096, dtype=torch.float16, device=backend.torch_device)
    out = torch.empty_like(a)
    done = 0
    start = wall()
    while wall() - start < seconds:
        for _ in range(8):
            torch.matmul(a, b, out=out)
        interface.synchronize()
        done += 8
    del a, b, out
    return done
