"""Throttling per timed row: a run's device samples joined to each row's timing window.

A clock summary over a whole cell reads its start and its compile time, where the
device idles (345 MHz on the H200); what matters is the clock while a row was being
timed. A timed row (status ok, a timer other than none) carries the wall-clock span
of what its timer measured (`Row.window_start_unix` .. `Row.window_end_unix`); a
sample with start <= t <= end is inside it. Each timed row is:

- ``throttled``: a sample inside its window names a reason outside `BENIGN_REASONS`
  (NVML's names as `campaign.running.telemetry.THROTTLE_BITS` records them; on the H200
  ``sw_power_cap`` came at 1350-1965 MHz, so the reason counts whatever the clock), or
  its SM clock is below `CLOCK_FRACTION` of the run's median SM clock over every
  in-window sample of that device (`CLOCK_LOW`). The clock rule is what judges a
  device that records no reasons (mthreads-gmi); 0.90 sits below the boost clock's
  own steps (1950-1980 MHz at full load on the H200) and far below any cap seen.
- ``unsampled``: no sample inside its window that reads a clock or a reason, or no
  window at all (rows written before windows were recorded). Counted, never assumed fine.
- ``ok``: otherwise.

Where the visibility variable pinned no device, every sampled device counts: the
harness cannot tell which one a cell ran on. Pure: samples and rows in, verdicts out.
"""
from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, Optional, Sequence

from campaign.judging import stats
from campaign.contract.cellfiles import Row
from campaign.contract.telemetryfile import Sample

# Not throttles: an idle device (no work queued), and clocks held by a configured
# setting (application or display clocks) rather than lowered by a power or thermal event.
BENIGN_REASONS = frozenset({"none", "gpu_idle", "applications_clocks_setting", "display_clock_setting"})
CLOCK_FRACTION = 0.90
CLOCK_LOW = "sm_clock_low"

RowKey = tuple[str, tuple[int, ...], str, int]      # stats.samples' key: function, shape, dtype, occurrence


@dataclass(frozen=True)
class RowThrottle:
    state: Literal["ok", "throttled", "unsampled"]
    reasons: tuple[str, ...] = ()        # throttled: sorted reason names, CLOCK_LOW included
    samples: int = 0                     # samples inside the window that read a clock or a reason
    sm_clock_min_mhz: Optional[float] = None


@dataclass(frozen=True)
class TaskThrottle:
    """One cell's timed rows judged, keyed as `campaign.judging.stats.samples` keys them."""

    rows: Mapping[RowKey, RowThrottle]
    clocks_mhz: tuple[float, ...]        # SM clocks of the samples inside this cell's windows
    reference_mhz: Mapping[str, float]   # per device: the run's median in-window SM clock
    fraction: float = CLOCK_FRACTION

    def count(self, state: str) -> int:
        return sum(r.state == state for r in self.rows.values())


@dataclass(frozen=True)
class SideThrottle:
    """One side (cell name) of a workload, over every round given."""

    rows: int
    throttled_rows: int
    unsampled_rows: int
    sm_clock_median_mhz: Optional[float]
    sm_clock_min_mhz: Optional[float]
    reasons: Mapping[str, int]           # reason -> throttled rows naming it


def is_timed(row: Row) -> bool:
    return row.status == "ok" and row.timer != "none" and row.latency_ms is not None


def _informs(sample: Sample) -> bool:
    return sample.sm_clock_mhz is not None or sample.throttle_reasons != ""


def _inside(samples: Sequence[Sample], times: Sequence[float], row: Row) -> list[int]:
    """Indices of the informative samples inside the row's window."""
    if row.window_start_unix is None or row.window_end_unix is None:
        return []
    lo = bisect.bisect_left(times, row.window_start_unix)
    hi = bisect.bisect_right(times, row.window_end_unix)
    return [i for i in range(lo, hi) if _informs(samples[i])]


def _reasons(sample: Sample, reference: Mapping[str, float], fraction: float) -> set[str]:
    named = {name for name in sample.throttle_reasons.split("|") if name} - BENIGN_REASONS
    ref = reference.get(sample.device)
    if sample.sm_clock_mhz is not None and ref is not None and sample.sm_clock_mhz < fraction * ref:
        named.add(CLOCK_LOW)
    return named


def _judge_row(indices: list[int], samples: Sequence[Sample], reference: Mapping[str, float],
               fraction: float) -> RowThrottle:
    if not indices:
        return RowThrottle("unsampled")
    reasons: set[str] = set()
    for i in indices:
        reasons |= _reasons(samples[i], reference, fraction)
    clocks = [samples[i].sm_clock_mhz for i in indices if samples[i].sm_clock_mhz is not None]
    return RowThrottle("throttled" if reasons else "ok", tuple(sorted(reasons)), len(indices),
                       min(clocks) if clocks else None)


def judge(samples: Iterable[Sample], rows_by_task: Mapping[str, Optional[Sequence[Row]]],
          fraction: float = CLOCK_FRACTION) -> dict[str, TaskThrottle]:
    """Every task's timed rows judged against the run's samples; a task without rows is left out."""
    ordered = sorted(samples, key=lambda s: s.t)
    times = [s.t for s in ordered]
    inside: dict[str, list[tuple[RowKey, list[int]]]] = {}
    for task_id, rows in rows_by_task.items():
        if rows is None:
            continue
        inside[task_id] = [(key, _inside(ordered, times, row)) for key, row in stats.keyed(rows) if is_timed(row)]
    in_window = sorted({i for pairs in inside.values() for _, indices in pairs for i in indices})
    per_device: dict[str, list[float]] = {}
    for i in in_window:
        if ordered[i].sm_clock_mhz is not None:
            per_device.setdefault(ordered[i].device, []).append(ordered[i].sm_clock_mhz)
    reference = {device: statistics.median(clocks) for device, clocks in per_device.items()}
    out = {}
    for task_id, pairs in inside.items():
        mine = sorted({i for _, indices in pairs for i in indices})
        out[task_id] = TaskThrottle(
            rows={key: _judge_row(indices, ordered, reference, fraction) for key, indices in pairs},
            clocks_mhz=tuple(ordered[i].sm_clock_mhz for i in mine if ordered[i].sm_clock_mhz is not None),
            reference_mhz=reference, fraction=fraction)
    return out


def summary(tasks: Iterable) -> dict[str, SideThrottle]:
    """Per cell name, over the given tasks (objects with ``.task.cell`` and ``.throttle``, e.g.
    `campaign.judging.evidence.TaskEvidence` of one workload); a cell none of whose tasks was judged
    (no telemetry, rows not read) is absent."""
    grouped: dict[str, list[TaskThrottle]] = {}
    for item in tasks:
        if item.throttle is not None:
            grouped.setdefault(item.task.cell, []).append(item.throttle)
    out = {}
    for cell, judged in sorted(grouped.items()):
        verdicts = [r for t in judged for r in t.rows.values()]
        clocks = [c for t in judged for c in t.clocks_mhz]
        reasons: dict[str, int] = {}
        for verdict in verdicts:
            for reason in verdict.reasons:
                reasons[reason] = reasons.get(reason, 0) + 1
        out[cell] = SideThrottle(
            rows=len(verdicts), throttled_rows=sum(v.state == "throttled" for v in verdicts),
            unsampled_rows=sum(v.state == "unsampled" for v in verdicts),
            sm_clock_median_mhz=statistics.median(clocks) if clocks else None,
            sm_clock_min_mhz=min(clocks) if clocks else None, reasons=dict(sorted(reasons.items())))
    return out
