"""What the timing plugin does about the device's clock around its rows.

Not a plugin (no ``make``): `campaign.plugins.timing` calls it.

- A timed row whose window saw an environmental clock reason (thermal, hardware slowdown,
  power brake: `campaign.contract.clockreasons`) is timed again, at most
  `campaign.contract.timers.RETIMES` times; the row keeps the last attempt's latency, window
  and clock, ``clock.retimed`` names each re-time's reasons and run.log has a line for each.
  The power cap (``sw_power_cap``) is the card's operating point and never re-times.
- Under a noise target, each row's sampling gets a run.log line (``NOISE CAPPED`` where the time
  cap stopped it above the target; `campaign.contract.timers`).
- Before a timed task's first row (only where the backend executes), the device runs a
  fixed dense load for `campaign.contract.timers.STEADY_CLOCK_S` seconds, so the clock the
  first row meets does not depend on what ran before the cell; run.log says how long and
  the SM clock before and after. It runs at the first ``measure``, not at configure: by then
  the test has built its inputs on the device, so the device and its context exist in every
  timing plugin built on this one (`campaign.plugins.dobench` calls ``measure`` and never the
  timing plugin's configure), and only the first row's compile runs between the load and its window.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional

from campaign.contract import timers
from campaign.contract.cellfiles import Row
from campaign.planning import shapes as shape_sets
from campaign.plugins import rowclock
from campaign.plugins._device_timers import DeviceTimers


def forget_window(device_timers: DeviceTimers) -> None:
    # a timer that returns without recording a window must not hand on the previous row's
    device_timers.window = None
    device_timers.clock = None
    device_timers.noise = None


def retiming(device_timers: DeviceTimers, log, base: dict, run) -> tuple[Any, tuple[str, ...]]:
    """``run()``'s latency, run again while its window's clock saw an environmental reason
    (at most `timers.RETIMES` times), and each re-time's cause. What raises propagates:
    the last attempt is the row's, its failure included."""
    causes: list[str] = []
    latency = run()
    while len(causes) < timers.RETIMES:
        clock = device_timers.clock
        cause = timers.retime_cause(clock.reasons) if clock is not None else None
        if cause is None:
            break
        causes.append(cause)
        log.line(f"row {base['function']} {shape_sets.format_shape(base['shape'])} {base['dtype']}: "
                 f"re-timed ({len(causes)} of {timers.RETIMES}): {cause} inside its window")
        forget_window(device_timers)
        latency = run()
    return latency, tuple(causes)


def window_and_clock(device_timers: DeviceTimers, retimed: tuple[str, ...]) -> dict:
    """A row's fields for the window its timer recorded, the clock read inside it and, under a
    noise target, what its sampling reached."""
    window, clock = device_timers.window, device_timers.clock
    out = {} if window is None else dict(window_start_unix=window[0], window_end_unix=window[1])
    if clock is not None:
        out["clock"] = clock.model_copy(update={"retimed": retimed})
    noise = device_timers.noise
    if noise is not None:
        out.update(samples=noise.samples, noise_pct=noise.spread_pct, noise_capped=noise.capped)
    return out


def log_noise(device_timers: DeviceTimers, target: Optional[timers.NoiseTarget], log, base: dict) -> None:
    """run.log's line for a row sampled to a noise target (NOISE CAPPED where the cap stopped it)."""
    if device_timers.noise is not None and target is not None:
        log.line(f"row {base['function']} {shape_sets.format_shape(base['shape'])} {base['dtype']}: "
                 + timers.noise_line(device_timers.noise, target))


def noise_label(target: Optional[timers.NoiseTarget]) -> str:
    if target is None:
        return ""
    return f" max_noise_pct={target.max_noise_pct:g} min_samples={target.min_samples} timeout_s={target.timeout_s:g}"


def steady_clock(row_clocks: rowclock.RowClocks, steady_load: Callable[[float], int], log) -> None:
    """`timers.STEADY_CLOCK_S` of dense load before the first timed row (see the module
    docstring for why here). A load that fails is said in run.log and the rows are timed
    as they come: each row's own clock still says what it ran at."""
    seconds = timers.STEADY_CLOCK_S
    if seconds <= 0:
        return
    before = row_clocks.read_now()
    started = time.monotonic()
    try:
        ran = steady_load(seconds)
    except Exception as exc:
        log.line(f"steady clock: the load failed after {time.monotonic() - started:.2f} s; rows timed "
                 f"without it: {timers.error_text(exc, limit=300).splitlines()[0]}")
        return
    elapsed = time.monotonic() - started
    log.line(f"steady clock: {elapsed:.2f} s of dense load ({ran} fp16 matmuls) before the first "
             f"timed row; SM clock {sm_mhz(before)} -> {sm_mhz(row_clocks.read_now())}")


def sm_mhz(read: Optional[rowclock.Read]) -> str:
    return "not read" if read is None or read[0] is None else f"{read[0]:g} MHz"


def clocks_line(rows: list[Row]) -> str:
    """run.log's summary of the ok rows' clocks: how many were read, re-timed, still throttled."""
    ok = [row for row in rows if row.status == "ok"]
    read = [row.clock for row in ok if row.clock is not None and row.clock.samples]
    retimed = sum(bool(row.clock and row.clock.retimed) for row in ok)
    persisted = sum(bool(row.clock and timers.retime_cause(row.clock.reasons)) for row in ok)
    line = (f"row clocks: {len(read)} of {len(ok)} ok rows read; {retimed} re-timed; "
            f"{persisted} still environmental after their re-times")
    sampled = [row for row in ok if row.samples is not None]
    if sampled:
        capped = sum(bool(row.noise_capped) for row in sampled)
        line += f"; noise target: {len(sampled) - capped} of {len(sampled)} rows reached it, {capped} capped"
    return line
