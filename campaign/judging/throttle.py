"""The clock of every timed row, and what it means for a verdict: pure, samples and rows in.

A clock summary over a whole cell reads its start and its compile time, where the device
idles (345 MHz on the H200); what matters is the clock while a row was being timed. A timed
row (status ok, a timer other than none) carries the wall-clock span of what its timer
measured (`Row.window_start_unix` .. `Row.window_end_unix`) and, where the worker could read
NVML, the clock inside that span read by the worker itself (`Row.clock`). A row's clock comes
from the worker's reads when it has them, else from the parent's telemetry samples inside
its window (start <= t <= end). Each timed row is:

- ``environmental``: a reason the worker's re-timing did not clear (or, for rows without the
  worker's reads, any sample in the window) names an environmental throttle
  (`campaign.contract.clockreasons.environmental`: thermal, hardware slowdown, the power brake);
- ``capped``: otherwise, a clock fact: ``sw_power_cap`` (the H200's operating point under dense
  fp16 GEMM: 870-1965 MHz seen), or the window's SM clock below `CLOCK_FRACTION` of the run's
  median (`CLOCK_LOW`, what judges a device that records no reasons: mthreads-gmi). A capped
  row is no fault: the classifier checks a direction against the delta in cycles (the row's
  time x its window's median SM clock) instead;
- ``unsampled``: no read inside its window (no worker clock and no telemetry sample, or no
  window at all). Counted, never assumed fine; its cycles are unknown;
- ``ok``: otherwise.

A row's samples are its own card's: on several cards each card's sampler names its samples with
the card's uuid (`campaign.running.telemetry.CardSource`), the name its status rows carry, so one
card's thermal slowdown never judges another card's rows. Where a cell's card is not named among
the samples (one card, whose rows name none; a root sampled before the samples were named by
card), every sampled device counts: the harness cannot tell which one a cell ran on.
"""
from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, Optional, Sequence

from campaign.contract import clockreasons
from campaign.contract.cellfiles import Row
from campaign.contract.telemetryfile import Sample
from campaign.judging import stats

CLOCK_FRACTION = 0.90
CLOCK_LOW = clockreasons.CLOCK_LOW
WORKER = "worker"        # reference_mhz's key for the clocks the worker read itself (Row.clock)

RowKey = tuple[str, tuple[int, ...], str, int]      # stats.samples' key: function, shape, dtype, occurrence


@dataclass(frozen=True)
class RowThrottle:
    state: Literal["ok", "capped", "environmental", "unsampled"]
    reasons: tuple[str, ...] = ()        # sorted non-benign reason names, CLOCK_LOW included
    samples: int = 0                     # reads inside the window that gave a clock or a reason
    sm_clock_min_mhz: Optional[float] = None
    sm_clock_mhz: Optional[float] = None     # the window's median SM clock: a row's cycles are time x this
    source: Optional[str] = None         # WORKER (Row.clock) or "telemetry" (the parent's samples)
    retimed: int = 0                     # times the worker re-timed the row for an environmental reason

    @property
    def throttled(self) -> bool:
        return self.state in ("capped", "environmental")


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
    throttled_rows: int                  # capped or environmental
    unsampled_rows: int
    sm_clock_median_mhz: Optional[float]
    sm_clock_min_mhz: Optional[float]
    reasons: Mapping[str, int]           # reason -> throttled rows naming it
    capped_rows: int = 0
    environmental_rows: int = 0
    retimed_rows: int = 0


def is_timed(row: Row) -> bool:
    return row.status == "ok" and row.timer != "none" and row.latency_ms is not None


def _informs(sample: Sample) -> bool:
    return sample.sm_clock_mhz is not None or sample.throttle_reasons != ""


def _inside(samples: Sequence[Sample], times: Sequence[float], row: Row, device: Optional[str]) -> list[int]:
    """Indices of the informative samples inside the row's window, of ``device`` alone where named."""
    if row.window_start_unix is None or row.window_end_unix is None:
        return []
    lo = bisect.bisect_left(times, row.window_start_unix)
    hi = bisect.bisect_right(times, row.window_end_unix)
    return [i for i in range(lo, hi) if _informs(samples[i]) and device in (None, samples[i].device)]


def _low(clock: Optional[float], ref: Optional[float], fraction: float) -> set[str]:
    return {CLOCK_LOW} if clock is not None and ref is not None and clock < fraction * ref else set()


def _state(reasons: set[str]) -> str:
    if clockreasons.environmental(reasons):
        return "environmental"
    return "capped" if reasons else "ok"


def _from_samples(indices: list[int], samples: Sequence[Sample], reference: Mapping[str, float],
                  fraction: float) -> RowThrottle:
    if not indices:
        return RowThrottle("unsampled")
    reasons: set[str] = set()
    for i in indices:
        sample = samples[i]
        reasons |= {name for name in sample.throttle_reasons.split("|") if name} - clockreasons.BENIGN
        reasons |= _low(sample.sm_clock_mhz, reference.get(sample.device), fraction)
    clocks = [samples[i].sm_clock_mhz for i in indices if samples[i].sm_clock_mhz is not None]
    return RowThrottle(_state(reasons), tuple(sorted(reasons)), len(indices), min(clocks) if clocks else None,
                       statistics.median(clocks) if clocks else None, "telemetry")


def _from_worker(row: Row, reference: Optional[float], fraction: float) -> RowThrottle:
    """The worker's own reads: its last attempt's reasons (re-timing cleared the earlier ones)."""
    clock = row.clock
    reasons = (set(clock.reasons) - clockreasons.BENIGN) | _low(clock.sm_mhz_median, reference, fraction)
    return RowThrottle(_state(reasons), tuple(sorted(reasons)), clock.samples, clock.sm_mhz_min, clock.sm_mhz_median,
                       WORKER, len(clock.retimed))


def _worker_read(row: Row) -> bool:
    return row.clock is not None and row.clock.samples > 0 and row.clock.sm_mhz_median is not None


def judge(samples: Iterable[Sample], rows_by_task: Mapping[str, Optional[Sequence[Row]]],
          fraction: float = CLOCK_FRACTION, cards: Optional[Mapping[str, Optional[str]]] = None) -> dict[str, TaskThrottle]:
    """Every task's timed rows judged against the worker's reads or the run's samples; a task
    without rows is left out. ``cards``: task -> the card it ran on (its status row's device), whose
    samples alone judge its rows where the samples name that card (see the module docstring)."""
    ordered = sorted(samples, key=lambda s: s.t)
    times = [s.t for s in ordered]
    named = {s.device for s in ordered}
    own = {task_id: card for task_id, card in (cards or {}).items() if card in named}
    timed: dict[str, list[tuple[RowKey, Row]]] = {
        task_id: [(key, row) for key, row in stats.keyed(rows) if is_timed(row)]
        for task_id, rows in rows_by_task.items() if rows is not None}
    inside = {task_id: {key: ([] if _worker_read(row) else _inside(ordered, times, row, own.get(task_id)))
                        for key, row in pairs}
              for task_id, pairs in timed.items()}
    in_window = sorted({i for per_key in inside.values() for indices in per_key.values() for i in indices})
    per_device: dict[str, list[float]] = {}
    for i in in_window:
        if ordered[i].sm_clock_mhz is not None:
            per_device.setdefault(ordered[i].device, []).append(ordered[i].sm_clock_mhz)
    worker = [row.clock.sm_mhz_median for pairs in timed.values() for _, row in pairs if _worker_read(row)]
    if worker:
        per_device[WORKER] = worker
    reference = {device: statistics.median(clocks) for device, clocks in per_device.items()}
    out = {}
    for task_id, pairs in timed.items():
        rows = {key: (_from_worker(row, reference.get(WORKER), fraction) if _worker_read(row)
                      else _from_samples(inside[task_id][key], ordered, reference, fraction)) for key, row in pairs}
        mine = sorted({i for indices in inside[task_id].values() for i in indices})
        clocks = [ordered[i].sm_clock_mhz for i in mine if ordered[i].sm_clock_mhz is not None]
        clocks += [row.clock.sm_mhz_median for _, row in pairs if _worker_read(row)]
        out[task_id] = TaskThrottle(rows=rows, clocks_mhz=tuple(clocks), reference_mhz=reference, fraction=fraction)
    return out


def cycles(rows: Sequence[Row], judged: Optional[TaskThrottle]) -> dict:
    """`stats.samples` of the rows with each latency in cycles (ms x the window's median MHz, so
    thousands of cycles); rows whose clock is unknown are left out."""
    timed = stats.samples(rows)
    if judged is None:
        return {}
    out = {}
    for key, sample in timed.items():
        clock = judged.rows.get(key).sm_clock_mhz if key in judged.rows else None
        if clock:
            out[key] = stats.Sample(sample.latency_ms * clock, sample.regime)
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
            rows=len(verdicts), throttled_rows=sum(v.throttled for v in verdicts),
            unsampled_rows=sum(v.state == "unsampled" for v in verdicts),
            sm_clock_median_mhz=statistics.median(clocks) if clocks else None,
            sm_clock_min_mhz=min(clocks) if clocks else None, reasons=dict(sorted(reasons.items())),
            capped_rows=sum(v.state == "capped" for v in verdicts),
            environmental_rows=sum(v.state == "environmental" for v in verdicts),
            retimed_rows=sum(v.retimed > 0 for v in verdicts))
    return out
