"""telemetry.tsv: one device sample a line (`COLUMNS`), written by the samplers of
`campaign.running.telemetry` beside a run and read back by `campaign.judging.evidence`.

Times are unix seconds (``t_unix``, and ``time_utc`` for a reader); an empty field is a
value the device did not report; ``throttle_reasons`` is NVML's clocks-event reasons as
names joined by ``|`` ("none": no reason, empty: not reported).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from campaign.contract.errors import InputError

COLUMNS = ("time_utc", "t_unix", "device", "sm_clock_mhz", "mem_clock_mhz", "temp_c", "power_w",
           "util_pct", "throttle_reasons")


@dataclass(frozen=True)
class Sample:
    t: float
    device: str
    sm_clock_mhz: Optional[float] = None
    mem_clock_mhz: Optional[float] = None
    temp_c: Optional[float] = None
    power_w: Optional[float] = None
    util_pct: Optional[float] = None
    throttle_reasons: str = ""


@dataclass(frozen=True)
class Summary:
    sm_clock_min_mhz: Optional[float]
    sm_clock_median_mhz: Optional[float]
    temp_max_c: Optional[float]


def summarize(samples: list[Sample], device: Optional[str] = None) -> Summary:
    """Min and median SM clock, max temperature of one device's samples (the first device seen)."""
    if device is None and samples:
        device = samples[0].device
    chosen = [s for s in samples if s.device == device]
    clocks = [s.sm_clock_mhz for s in chosen if s.sm_clock_mhz is not None]
    temps = [s.temp_c for s in chosen if s.temp_c is not None]
    return Summary(min(clocks) if clocks else None, statistics.median(clocks) if clocks else None,
                   max(temps) if temps else None)


def format_sample(sample: Sample) -> str:
    when = datetime.fromtimestamp(sample.t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    values = (when, f"{sample.t:.3f}", sample.device, sample.sm_clock_mhz, sample.mem_clock_mhz,
              sample.temp_c, sample.power_w, sample.util_pct, sample.throttle_reasons)
    return "\t".join("" if v is None else (f"{v:g}" if isinstance(v, float) else str(v)) for v in values) + "\n"


def _number(text: str) -> Optional[float]:
    return None if text == "" else float(text)


def read_samples(path: Path) -> Optional[list[Sample]]:
    """telemetry.tsv read back (`format_sample`'s inverse); None when the file is absent.

    A last line without its newline is a write cut short by a killed runner and is left
    out; any other line that does not parse is an InputError naming the file and line.
    """
    path = Path(path)
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").split("\n")
    samples = []
    for number, line in enumerate(lines[:-1], start=1):     # lines[-1]: "" or a cut-short write
        fields = tuple(line.split("\t"))
        if fields == COLUMNS:
            continue
        try:
            if len(fields) != len(COLUMNS):
                raise ValueError(f"{len(fields)} fields for {len(COLUMNS)} columns")
            _, t, device, sm, mem, temp, power, util, reasons = fields
            samples.append(Sample(float(t), device, _number(sm), _number(mem), _number(temp), _number(power),
                                  _number(util), reasons))
        except ValueError as exc:
            raise InputError(f"{path}:{number}: not a telemetry sample: {exc}") from None
    return samples
