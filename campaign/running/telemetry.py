"""Device telemetry beside a run: evidence, never a gate.

Clock throttling and thermal drift move latency far more than the noise a
multi-round A/B reports, and leave no trace in a cell's own logs. A background
thread samples every `INTERVAL_S` into <root>/telemetry.tsv (`COLUMNS`), often
enough that a row's timing window holds samples; `campaign.judging.throttle` judges the
samples inside each window, and a cell's status row summarises clocks over them
only (its start and its compile time read the idle clock). The backend names its source
(`campaign.contract.platforms`), one of `SOURCES`: NVML (``pynvml``, optional), amdsmi
(ROCm's ``amdsmi``, optional; no clock-event reasons), or ``mthreads-gmi -q --json``,
whose values carry their units ("36C", "1888MHz", "477.68W") and whose power
key is "Power Draw " with a trailing space -- keys are matched stripped. The
devices come from the backend's visibility variable; several visible devices
(or none pinned) sample all of them. A sampler that cannot start writes its
reason to telemetry.err and the campaign runs unchanged. The table's format, and reading
it back, is `campaign.contract.telemetryfile`.
"""
from __future__ import annotations

import bisect
import json
import re
import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from campaign.contract import clockreasons
from campaign.contract.artifacts import ROWS_FILE, TELEMETRY_FILE
from campaign.contract.cellfiles import Rows
from campaign.contract.telemetryfile import COLUMNS, Sample, Summary, format_sample, summarize

ERR_FILE = "telemetry.err"

# The shortest timing window is an event row's, >= warmup_ms + rep_ms (125 ms under the H200
# manifests): 0.1 s puts a sample in it. A read is a few NVML queries from the parent process;
# the table grows ~3 MB an hour per sampled device.
INTERVAL_S = 0.1

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


class Source(Protocol):
    def read(self, t: float) -> list[Sample]: ...


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


def visible_devices(value: Optional[str]) -> Optional[list[str]]:
    """The visibility variable's devices; None: not pinned, sample every device; []: none visible."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def gmi_argv(devices: Optional[list[str]]) -> list[str]:
    """One pinned device gets -i; a list (or none pinned) samples every device, never a bare -i."""
    argv = ["mthreads-gmi", "-q", "--json"]
    if devices is not None and len(devices) == 1:
        argv += ["-i", devices[0]]
    return argv


def timing_windows(cell_dir: Path) -> list[tuple[float, float]]:
    """The windows of a cell's timed rows (rows.json); none when it is absent or unreadable."""
    try:
        rows = Rows.model_validate(json.loads((Path(cell_dir) / ROWS_FILE).read_text(encoding="utf-8"))).rows
    except (OSError, ValueError):
        return []
    return [(r.window_start_unix, r.window_end_unix) for r in rows
            if r.status == "ok" and r.window_start_unix is not None and r.window_end_unix is not None]


class GmiSource:
    def __init__(self, devices: Optional[list[str]], run: Callable[..., Any] = subprocess.run):
        self.argv = gmi_argv(devices)
        self.run = run
        self.read(time.time())  # fail at start, with the reason, rather than on every sample

    def read(self, t: float) -> list[Sample]:
        try:
            done = self.run(self.argv, capture_output=True, text=True, timeout=15)
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
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) \
            or nv.nvmlDeviceGetCurrentClocksThrottleReasons
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
# tests/test_vocabulary.py holds these keys equal to the platforms' names.
SOURCES: dict[str, Callable[[Optional[list[str]]], Source]] = {
    "nvml": NvmlSource, "mthreads-gmi": GmiSource, "amdsmi": AmdSmiSource}


def make_source(kind: Optional[str], devices: Optional[list[str]]) -> Source:
    """The backend's telemetry source; RuntimeError (or the library's own) says why there is none."""
    if devices == []:
        raise RuntimeError("the visibility variable is set but names no device: nothing to sample")
    if kind not in SOURCES:
        raise RuntimeError(f"the backend declares no telemetry source ({kind!r})")
    return SOURCES[kind](devices)


class Sampler:
    """Samples ``source`` every ``interval_s`` on a daemon thread into telemetry.tsv.

    `mark` takes one sample on demand (cell start and end), so every cell's
    window holds at least two samples even when it is shorter than the interval.
    Errors after a good start are written to telemetry.err once each, never raised.
    """

    def __init__(self, root: Path, make: Callable[[], Source], interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.time):
        self.tsv = Path(root) / TELEMETRY_FILE
        self.err = Path(root) / ERR_FILE
        self.make = make
        self.interval_s = interval_s
        self.clock = clock
        self.samples: list[Sample] = []
        self._times: list[float] = []       # the samples' t, for bisect: a run holds ~36,000 an hour
        self.source: Optional[Source] = None
        self.reason: Optional[str] = None
        self._errors: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _note(self, text: str) -> None:
        if text in self._errors:
            return
        self._errors.add(text)
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(self.err, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp}\t{text}\n")

    def start(self) -> bool:
        try:
            self.source = self.make()
        except Exception as exc:  # any failure to start is recorded, and the campaign goes on
            self.reason = f"no telemetry: {type(exc).__name__}: {exc}"
            self._note(self.reason)
            return False
        if not self.tsv.exists():
            self.tsv.write_text("\t".join(COLUMNS) + "\n", encoding="utf-8")
        self._thread = threading.Thread(target=self._loop, name="telemetry", daemon=True)
        self._thread.start()
        return True

    def mark(self) -> None:
        if self.source is None:
            return
        t = self.clock()
        try:
            taken = self.source.read(t)
        except Exception as exc:
            self._note(f"sample failed: {type(exc).__name__}: {exc}")
            return
        with self._lock:
            self.samples.extend(taken)
            self._times.extend(s.t for s in taken)
            with open(self.tsv, "a", encoding="utf-8") as handle:
                handle.write("".join(format_sample(s) for s in taken))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.mark()

    def window(self, start: float, end: float, cell_dir: Path) -> Summary:
        """A cell's summary: SM clocks over the samples inside its timed rows' windows only
        (none: not known), the maximum temperature over the whole cell [start, end]."""
        with self._lock:
            cell = self.samples[bisect.bisect_left(self._times, start):bisect.bisect_right(self._times, end)]
        windows = timing_windows(cell_dir)
        timed = summarize([s for s in cell if any(lo <= s.t <= hi for lo, hi in windows)])
        return Summary(timed.sm_clock_min_mhz, timed.sm_clock_median_mhz, summarize(cell).temp_max_c)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + 20)
