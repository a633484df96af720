"""The vendors' telemetry sources behind `campaign.running.telemetry.SOURCES`, one class each:
NVML (``pynvml``, optional), ``mthreads-gmi -q --json`` (values carry their units: "36C",
"1888MHz", "477.68W"; the power key is "Power Draw " with a trailing space, so keys are matched
stripped) and ROCm's ``amdsmi`` (optional; no clock-event reasons). Each reads its devices' clocks,
temperature, power and utilisation into `campaign.contract.telemetryfile.Sample` rows; a library
that is absent raises RuntimeError naming it, which the sampler writes to telemetry.err.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from typing import Any, Callable, Optional

from campaign.contract import clockreasons, toolenv
from campaign.contract.telemetryfile import Sample

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def strip_unit(value: Any) -> Optional[float]:
    """'1888MHz' -> 1888.0, '477.68W' -> 477.68, 'N/A' -> None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _NUMBER.search(str(value)) if value is not None else None
    return float(match.group()) if match else None


def _get(mapping: Any, *names: str) -> Any:
    """A key matched after stripping spaces on both sides ("Power Draw " is "Power Draw")."""
    if not isinstance(mapping, dict):
        return None
    stripped = {str(key).strip().lower(): value for key, value in mapping.items()}
    for name in names:
        if name.lower() in stripped:
            return stripped[name.lower()]
    return None


def parse_gmi_json(text: str, t: float) -> list[Sample]:
    """Samples from ``mthreads-gmi -q --json``; raises ValueError when it is not that output."""
    data = json.loads(text)
    gpus = _get(data, "GPU")
    if isinstance(gpus, dict):
        gpus = [gpus]
    if not isinstance(gpus, list):
        raise ValueError("no 'GPU' list in mthreads-gmi output")
    samples = []
    for position, gpu in enumerate(gpus):
        clocks = _get(gpu, "Clocks") or {}
        index = _get(gpu, "Index")
        samples.append(Sample(
            t=t, device=str(index if index is not None else position).strip(),
            sm_clock_mhz=strip_unit(_get(clocks, "Graphics", "SM", "GPU")),
            mem_clock_mhz=strip_unit(_get(clocks, "Memory", "Mem")),
            temp_c=strip_unit(_get(_get(gpu, "Temperature"), "GPU Current Temp", "GPU")),
            power_w=strip_unit(_get(_get(gpu, "Power Readings"), "Power Draw")),
            util_pct=strip_unit(_get(_get(gpu, "Utilization"), "Gpu")),
        ))
    return samples


def throttle_names(mask: Optional[int]) -> str:
    if mask is None:
        return ""
    named = clockreasons.names(mask)
    return "|".join(named) if named else "none"


def nvml_sample(raw: dict[str, Any], t: float) -> Sample:
    """One device's NVML readings (clocks MHz, temperature C, power mW, utilisation %, reasons mask)."""
    power_mw = raw.get("power_mw")
    return Sample(t=t, device=str(raw["index"]), sm_clock_mhz=strip_unit(raw.get("sm_clock_mhz")),
                  mem_clock_mhz=strip_unit(raw.get("mem_clock_mhz")), temp_c=strip_unit(raw.get("temp_c")),
                  power_w=power_mw / 1000.0 if power_mw is not None else None,
                  util_pct=strip_unit(raw.get("util_pct")), throttle_reasons=throttle_names(raw.get("throttle_mask")))


def gmi_argv(devices: Optional[list[str]]) -> list[str]:
    """One pinned device gets -i; a list (or none pinned) samples every device, never a bare -i."""
    argv = ["mthreads-gmi", "-q", "--json"]
    if devices is not None and len(devices) == 1:
        argv += ["-i", devices[0]]
    return argv


class GmiSource:
    def __init__(self, devices: Optional[list[str]], run: Callable[..., Any] = subprocess.run):
        self.argv = gmi_argv(devices)
        self.run = run
        self.read(time.time())  # fail at start, with the reason, rather than on every sample

    def read(self, t: float) -> list[Sample]:
        try:
            with toolenv.clean(os.environ, keep=("LD_LIBRARY_PATH",)) as env:
                done = self.run(self.argv, capture_output=True, text=True, timeout=15, env=env,
                                stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise RuntimeError("mthreads-gmi not found on PATH") from None
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{' '.join(self.argv)} did not answer within 15 s") from None
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(self.argv)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
        return parse_gmi_json(done.stdout, t)


class NvmlSource:
    def __init__(self, devices: Optional[list[str]]):
        try:
            import pynvml
        except ImportError:
            raise RuntimeError("pynvml is not installed (pip install nvidia-ml-py)") from None
        self.nvml = pynvml
        pynvml.nvmlInit()
        if devices is None:
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        else:
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(int(d)) if d.isdigit()
                            else pynvml.nvmlDeviceGetHandleByUUID(d) for d in devices]

    def _raw(self, handle) -> dict[str, Any]:
        nv = self.nvml

        def guarded(call, *args):
            try:
                return call(handle, *args)
            except nv.NVMLError:
                return None
        util = guarded(nv.nvmlDeviceGetUtilizationRates)
        reasons = clockreasons.nvml_reader(nv)
        return {"index": nv.nvmlDeviceGetIndex(handle),
                "sm_clock_mhz": guarded(nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_SM),
                "mem_clock_mhz": guarded(nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_MEM),
                "temp_c": guarded(nv.nvmlDeviceGetTemperature, nv.NVML_TEMPERATURE_GPU),
                "power_mw": guarded(nv.nvmlDeviceGetPowerUsage),
                "util_pct": util.gpu if util is not None else None,
                "throttle_mask": guarded(reasons)}

    def read(self, t: float) -> list[Sample]:
        return [nvml_sample(self._raw(handle), t) for handle in self.handles]


def amdsmi_sample(raw: dict[str, Any], t: float) -> Sample:
    """One device's amdsmi readings (clocks MHz, temperature C, power W, activity %); amdsmi
    reports no clock-event reasons mask here, so the reasons are unknown (empty), never "none"."""
    return Sample(t=t, device=str(raw["index"]), sm_clock_mhz=strip_unit(raw.get("sm_clock_mhz")),
                  mem_clock_mhz=strip_unit(raw.get("mem_clock_mhz")), temp_c=strip_unit(raw.get("temp_c")),
                  power_w=strip_unit(raw.get("power_w")), util_pct=strip_unit(raw.get("util_pct")))


class AmdSmiSource:
    def __init__(self, devices: Optional[list[str]], smi=None):
        if smi is None:
            try:
                import amdsmi as smi
            except ImportError:
                raise RuntimeError("amdsmi is not installed (it ships with ROCm: pip install amdsmi)") from None
        self.smi = smi
        smi.amdsmi_init()
        handles = smi.amdsmi_get_processor_handles()
        # HIP_VISIBLE_DEVICES holds indices here; amdsmi's own uuids are not torch's, so none is matched
        self.handles = [(str(i), h) for i, h in enumerate(handles)
                        if devices is None or str(i) in devices]
        if devices is not None and len(self.handles) != len(devices):
            raise RuntimeError(f"amdsmi sees {len(handles)} devices; cannot sample {', '.join(devices)}")

    def _raw(self, index: str, handle) -> dict[str, Any]:
        smi = self.smi

        def guarded(call, *args):
            try:
                return call(handle, *args)
            except Exception:  # amdsmi's AmdSmiLibraryException: a metric this device does not report
                return None

        def clock(kind):
            return (guarded(smi.amdsmi_get_clock_info, kind) or {}).get("clk")
        power = guarded(smi.amdsmi_get_power_info) or {}
        activity = guarded(smi.amdsmi_get_gpu_activity) or {}
        return {"index": index, "sm_clock_mhz": clock(smi.AmdSmiClkType.GFX), "mem_clock_mhz": clock(smi.AmdSmiClkType.MEM),
                "temp_c": guarded(smi.amdsmi_get_temp_metric, smi.AmdSmiTemperatureType.HOTSPOT,
                                  smi.AmdSmiTemperatureMetric.CURRENT),
                "power_w": power.get("current_socket_power", power.get("average_socket_power")),
                "util_pct": activity.get("gfx_activity")}

    def read(self, t: float) -> list[Sample]:
        return [amdsmi_sample(self._raw(index, handle), t) for index, handle in self.handles]


# The sources by the name a backend declares (`campaign.contract.platforms.Platform.telemetry`);
# tests/structure/test_vocabulary.py holds these keys equal to the platforms' names.
