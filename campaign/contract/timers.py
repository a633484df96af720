"""Timer policy as pure functions: which timer a row gets, what a capture failure
means for it, and the arithmetic of repeated timings. No torch, no device, no clock;
`campaign.plugins.timing` calls these and does the measuring.

Row timers (``Row.timer``), and what each number is:

- ``event``: one ``triton.testing.do_bench`` call (L2 flushed before every
  iteration; host launch path inside the events), reduced by the manifest's
  ``return_mode``.
- ``graph``: the per-call time of a replayed graph of back-to-back calls (no L2
  flush; host launch path outside).
- ``direct``: the median over ``repeat`` separate ``do_bench`` calls. Used when the
  manifest asks for it and for every row a graph campaign could not capture (those
  rows also carry BENCHMARK_DIRECT_NO_CUDAGRAPH and the phase that failed).
- ``none``: a compile-only backend: the call compiled and was counted, nothing ran.

Noise target (the manifest's ``timer.max_noise_pct``, ``min_samples``, ``timeout_s``; unset:
the fixed sample counts above). A row's samples are taken until their *relative spread* is at
most the target or the time cap is reached, whichever comes first, and at least ``min_samples``
of them. A sample is one per-call time of a timed graph replay (graph), one per-iteration time of
``do_bench`` (event: its ``return_mode="all"`` list, several calls of it if need be), or one
``do_bench`` call's value (direct). The relative spread is the relative standard error of the
samples' mean, ``s / (sqrt(n) * mean)`` with ``s`` the sample standard deviation (n - 1): how far
the row's centre may sit from the centre of its own distribution, which shrinks as samples are
added, so a noisy row can still reach the target by repetition. nvbench's ``--max-noise`` (its
stdrel criterion) compares the relative standard deviation ``s / mean`` itself, which does not
shrink with n: an nvbench target of r % on n samples is ours at r / sqrt(n) %. A row stopped by the
cap (``timeout_s``, seconds of sampling after the first sample's call returned) above its target
records ``noise_capped`` and the spread it reached: noisy, and said so. The row's latency is still
the ``return_mode`` reduction (direct: the median) of every sample taken.

Clocks. A timed row whose in-window clock reasons include an environmental one
(`campaign.contract.clockreasons`: thermal, hardware slowdown, power brake, ...) is timed
again, at most `RETIMES` times, as nvbench discards its throttled samples; the power cap
and the benign reasons never re-time. Before a timed cell's first row the device runs a
fixed load for `STEADY_CLOCK_S` seconds, so the clock state the first row meets does not
depend on what ran before it.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional, Sequence

from campaign.contract import clockreasons, faults
from campaign.contract.artifacts import FALLBACK_MARKER as FALLBACK_MARKER  # re-exported: the timing code names them here
from campaign.contract.artifacts import POISONED_MARKER as POISONED_MARKER

# The manifest's timer kinds (`Timer.kind`), the one list, and whether each flushes L2 before
# every timed call (in the caliber): do_bench clears L2 before every repetition; graph replay
# (do_bench_cudagraph) does not.
L2_FLUSH = {"event": True, "graph": False, "direct": True}
TIMER_KINDS = tuple(L2_FLUSH)
UNTIMED = "none"                        # a row's timer where nothing ran: compile-only, or a failure before timing
ROW_TIMERS = TIMER_KINDS + (UNTIMED,)

# do_bench_cudagraph's choices, kept so a graph number means the same thing here:
# 5 calls estimate one call's cost; 10 timed replays; 1000 calls when the estimate is 0.
ESTIMATE_CALLS = 5
TIMED_REPLAYS = 10
CALLS_IF_UNMEASURABLE = 1000
# Bounds the capture's size (and its cost) for calls whose estimate is tiny.
MAX_GRAPH_CALLS = 10000
# Re-times of a row whose window saw an environmental clock reason; a reason that persists
# past them stays on the row (``RowClock.reasons``) for the judge.
RETIMES = 2
# Seconds of dense load before a timed cell's first row (0: none). An idle card sits at a low
# clock and a card that just ran a long cell may be hot. 2 s is a choice, not yet a measurement:
# well past the driver's clock and power control steps (tens of ms), and ~2 s a timed cell.
STEADY_CLOCK_S = 2.0


@dataclass(frozen=True)
class NoiseTarget:
    """The manifest's noise target of a row (see the module docstring)."""

    max_noise_pct: float
    min_samples: int
    timeout_s: float


@dataclass(frozen=True)
class Noise:
    """What sampling a row to its noise target reached: ``spread_pct`` is None below two samples."""

    samples: int
    spread_pct: Optional[float]
    capped: bool


def noise_target(timer: Any) -> Optional[NoiseTarget]:
    """The manifest timer's noise target, or None where it sets none."""
    if getattr(timer, "max_noise_pct", None) is None:
        return None
    return NoiseTarget(timer.max_noise_pct, timer.min_samples, timer.timeout_s)


def relative_spread(values: Sequence[float]) -> Optional[float]:
    """The relative standard error of the mean, in percent; None for fewer than two values or a
    mean that is not positive (no relative spread is defined)."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if not math.isfinite(mean) or mean <= 0:
        return None
    return 100.0 * statistics.stdev(values) / (math.sqrt(len(values)) * mean)


def sampled_enough(values: Sequence[float], target: NoiseTarget, elapsed_s: float) -> Optional[Noise]:
    """Whether a row's sampling stops: None to take more; else what it reached, ``capped`` where
    the time cap stopped it above the target (or with too few samples to tell)."""
    spread = relative_spread(values)
    quiet = spread is not None and spread <= target.max_noise_pct
    if len(values) >= target.min_samples and quiet:
        return Noise(len(values), spread, False)
    if elapsed_s >= target.timeout_s:
        return Noise(len(values), spread, True)
    return None


def noise_line(noise: Noise, target: NoiseTarget) -> str:
    """run.log's words for a row's sampling."""
    spread = "undefined" if noise.spread_pct is None else f"{noise.spread_pct:.3g}%"
    if noise.capped:
        return (f"NOISE CAPPED: relative spread {spread} > target {target.max_noise_pct:g}% after {noise.samples} "
                f"samples at the {target.timeout_s:g} s cap")
    return f"noise: relative spread {spread} <= {target.max_noise_pct:g}% after {noise.samples} samples"


class TimerRefused(ValueError):
    """A timing request whose result would not be the number the row claims."""


def deny_key(function: str) -> str:
    """The capture deny list's key: the pytest FUNCTION name minus ``test_``
    (``test_bench_dropout`` -> ``bench_dropout``), never the file's name."""
    return function[len("test_"):] if function.startswith("test_") else function


def check_timer(kind: str, executes: bool, graph_capture: bool) -> None:
    """Refuse a timer the backend cannot honour. (direct_repeat under an event timer, which
    would mean nothing, is refused by the manifest model itself.)"""
    if not executes:
        return                                          # compile-only: nothing is timed, rows say "none"
    if kind == "graph" and not graph_capture:
        raise TimerRefused("timer graph: this backend cannot capture graphs; every row would be a "
                           "fallback under a graph label -- use event or direct")


def repeat_count(direct_repeat: Optional[int]) -> int:
    return 1 if direct_repeat is None else direct_repeat


def check_direct_request(return_mode: str, quantiles: Optional[Sequence[float]]) -> None:
    """A median across calls is defined for one number per call, not for a sequence."""
    if quantiles is not None:
        raise TimerRefused("direct timing takes the median over repeated calls; quantiles return a "
                           "sequence per call, for which that median is undefined")
    if return_mode == "all":
        raise TimerRefused("direct timing takes the median over repeated calls; return_mode 'all' "
                           "returns every sample, for which that median is undefined")


def median_of_repeats(values: Sequence[float]) -> float:
    """The direct timer's number: the median over ``repeat`` single-call timings."""
    if not values:
        raise TimerRefused("no timings to take the median of")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TimerRefused(f"a repeated timing returned {value!r}, not one number")
    return float(statistics.median(values))


def summarize(values: Sequence[float], return_mode: str) -> float:
    """Reduce per-call times as triton.testing does for its return modes."""
    if not values:
        raise TimerRefused("no timings to summarize")
    reducers: dict[str, Callable[[Sequence[float]], float]] = {"median": statistics.median, "mean": statistics.mean,
                                                                "min": min, "max": max}
    if return_mode not in reducers:
        raise TimerRefused(f"return_mode {return_mode!r} is not one of {', '.join(reducers)}")
    return float(reducers[return_mode](values))


def retime_cause(reasons: Sequence[str]) -> Optional[str]:
    """Why a row is timed again: its window's environmental reasons joined by "|"; None: it is not."""
    return "|".join(clockreasons.environmental(reasons)) or None


def check_latency(value: float) -> float:
    """A latency is a finite positive number of milliseconds, or the row has none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TimerRefused(f"the timer returned {value!r}, not a number of milliseconds")
    if not math.isfinite(value) or value <= 0:
        raise TimerRefused(f"the timer returned {value!r} ms: not a latency")
    return float(value)


def calls_for(estimate_ms: float, budget_ms: float) -> int:
    """How many calls fill ``budget_ms`` when one call costs ``estimate_ms`` (at least 1)."""
    if estimate_ms <= 0:
        return CALLS_IF_UNMEASURABLE
    return max(1, int(budget_ms / estimate_ms))


def graph_calls(estimate_ms: float, rep_ms: float) -> int:
    return min(MAX_GRAPH_CALLS, calls_for(estimate_ms, rep_ms))


@dataclass(frozen=True)
class CaptureDecision:
    """What a failed capture attempt means for its row and for the process."""

    verdict: str
    marker: Optional[str]           # marker to emit
    retime_direct: bool             # time the row uncaptured, as a direct row
    stop_measuring: bool            # measure nothing more in this process
    status: Literal["ok", "failed"]  # the row's status unless the re-timing itself fails


def decide(verdict: str) -> CaptureDecision:
    """A backend's classification of the failure's wording -> the row's fate.

    fallback: the kernel refused capture; re-time it direct and mark it.
    poisoned: the attempt left the context unusable; a number taken now would be
    measured inside a dead process, so the row fails and the process stops measuring.
    fatal: the kernel faulted on the device; that is never a latency.
    """
    if verdict == "fallback":
        return CaptureDecision(verdict, FALLBACK_MARKER, True, False, "ok")
    if verdict == "poisoned":
        return CaptureDecision(verdict, POISONED_MARKER, False, True, "failed")
    if verdict == "fatal":
        return CaptureDecision(verdict, None, False, False, "failed")
    raise ValueError(f"capture verdict {verdict!r} is not fallback, poisoned or fatal")


def row_error(exc: BaseException) -> str:
    """`error_text` of an exception a measured call raised, which becomes a failed row -- unless it is
    a fault of the machine (`campaign.contract.faults.write_fault`: a full disk, a file-size limit under
    Triton's cache), raised again so the worker exits on it and the cell runs again."""
    if faults.write_fault(exc) is not None:
        raise exc
    return error_text(exc)


def error_text(exc: BaseException, limit: int = 4000) -> str:
    """The exception and every cause/context under it, one line each: what the wording
    classifier reads (a capture's real error is often the context of capture_end's)."""
    lines: list[str] = []
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        message = str(current).strip()
        lines.append(f"{type(current).__name__}: {message}" if message else type(current).__name__)
        current = current.__cause__ or current.__context__
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + " ...[truncated]"
