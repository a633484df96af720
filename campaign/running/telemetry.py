"""Device telemetry beside a run: evidence, never a gate.

Clock throttling and thermal drift move latency far more than the noise a
multi-round A/B reports, and leave no trace in a cell's own logs. A background
thread samples every `INTERVAL_S` into <root>/telemetry.tsv (`COLUMNS`), often
enough that a row's timing window holds samples; `campaign.judging.throttle` judges the
samples inside each window, and a cell's status row summarises clocks over them
only (its start and its compile time read the idle clock). The backend names its source
(`campaign.contract.platforms`), one of `SOURCES`: NVML, amdsmi or mthreads-gmi, each a class of
`campaign.running.telemetrysources`. The
devices come from the backend's visibility variable; several visible devices
(or none pinned) sample all of them. A sampler that cannot start writes its
reason to telemetry.err and the campaign runs unchanged. The table's format, and reading
it back, is `campaign.contract.telemetryfile`.
"""
from __future__ import annotations

import bisect
import dataclasses
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional, Protocol

from campaign.contract import canonical
from campaign.contract.artifacts import ROWS_FILE
from campaign.contract.cellfiles import Rows
from campaign.contract.runroot import RunRoot
from campaign.contract.telemetryfile import COLUMNS, Sample, Summary, format_sample, summarize
from campaign.running.telemetrysources import (  # noqa: F401 (the sources and their parsers, read here by name)
    AmdSmiSource,
    GmiSource,
    NvmlSource,
    amdsmi_sample,
    gmi_argv,
    nvml_sample,
    parse_gmi_json,
    strip_unit,
    throttle_names,
)

ERR_FILE = "telemetry.err"

# The shortest timing window is an event row's, >= warmup_ms + rep_ms (125 ms under the H200
# manifests): 0.1 s puts a sample in it. A read is a few NVML queries from the parent process;
# the table grows ~3 MB an hour per sampled device.
INTERVAL_S = 0.1

class Source(Protocol):
    def read(self, t: float) -> list[Sample]: ...


def visible_devices(value: Optional[str]) -> Optional[list[str]]:
    """The visibility variable's devices; None: not pinned, sample every device; []: none visible."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def timing_windows(cell_dir: Path) -> list[tuple[float, float]]:
    """The windows of a cell's timed rows (rows.json); none when it is absent or unreadable."""
    try:
        rows = Rows.model_validate(canonical.read_json(Path(cell_dir) / ROWS_FILE)).rows
    except (OSError, ValueError):
        return []
    return [(r.window_start_unix, r.window_end_unix) for r in rows
            if r.status == "ok" and r.window_start_unix is not None and r.window_end_unix is not None]


SOURCES: dict[str, Callable[[Optional[list[str]]], Source]] = {
    "nvml": NvmlSource, "mthreads-gmi": GmiSource, "amdsmi": AmdSmiSource}


class CardSource:
    """One card's telemetry source, its samples named with the card's uuid: every card's sampler writes
    into one telemetry.tsv, and the uuid is what the card's status rows carry, so the judge reads each
    row against its own card's samples (`campaign.judging.throttle`)."""

    def __init__(self, source: Source, uuid: str):
        self.source, self.uuid = source, uuid

    def read(self, t: float) -> list:
        return [dataclasses.replace(s, device=self.uuid) for s in self.source.read(t)]


class NoTelemetry(Exception):
    """Nothing to sample, by design rather than by failure: the reason is the whole message."""


def make_source(kind: Optional[str], devices: Optional[list[str]], compile_only: bool = False) -> Source:
    """The backend's telemetry source; `NoTelemetry` where there is by design none, RuntimeError (or
    the library's own) where one failed."""
    if kind is None and compile_only:
        raise NoTelemetry("no telemetry on this backend (compile-only): nothing executes, nothing is sampled")
    if devices == []:
        raise RuntimeError("the visibility variable is set but names no device: nothing to sample")
    if kind not in SOURCES:
        raise NoTelemetry(f"no telemetry on this backend: it declares no telemetry source ({kind!r})")
    return SOURCES[kind](devices)


class Sampler:
    """Samples ``source`` every ``interval_s`` on a daemon thread into telemetry.tsv.

    `mark` takes one sample on demand (cell start and end), so every cell's
    window holds at least two samples even when it is shorter than the interval.
    Errors after a good start are written to telemetry.err once each, never raised.
    """

    def __init__(self, root: RunRoot, make: Callable[[], Source], interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.time):
        self.tsv = root.telemetry_file
        self.err = root.file(ERR_FILE)
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
        except NoTelemetry as exc:   # nothing to sample here: said plainly, recorded, the campaign goes on
            self.reason = str(exc)
            self._note(self.reason)
            return False
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
