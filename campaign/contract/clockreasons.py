"""Why a card's clock is where it is: NVML's clocks-event reasons, named once and sorted by what
they mean for a verdict. Read by the parent's telemetry (`campaign.running.telemetry`), the
worker's per-row clock (`campaign.plugins.rowclock`) and the judge (`campaign.judging.throttle`).

- benign: not a throttle (an idle card, clocks held by a configured setting);
- the power cap (``sw_power_cap``): the card's operating point under dense work, not a fault.
  A build that draws more power runs at a lower clock, and the time users get includes that;
  a direction under it stands when the delta in cycles agrees with the delta in time;
- environmental: everything else (thermal, hardware slowdown, the power brake, sync boost and
  any bit NVML adds later): the row is re-timed, and a workload is X only if it persists.

``sm_clock_low`` is the tool's own flag (a window's SM clock below a fraction of the run's
median): a clock fact, judged by the power cap's rule.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

# NVML clocks-event (throttle) reason bits, named as nvml.h names them.
THROTTLE_BITS = ((0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"),
                 (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"),
                 (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown"),
                 (0x100, "display_clock_setting"))

BENIGN = frozenset({"none", "gpu_idle", "applications_clocks_setting", "display_clock_setting"})
POWER_CAP = "sw_power_cap"
CLOCK_LOW = "sm_clock_low"
CLOCK_FACTS = frozenset({POWER_CAP, CLOCK_LOW})     # judged by the cycles rule, never a fault alone


def names(mask: int) -> tuple[str, ...]:
    """The reason names of an NVML mask, in bit order; unknown bits as ``0x...``."""
    named = [name for bit, name in THROTTLE_BITS if mask & bit]
    unknown = mask & ~sum(bit for bit, _ in THROTTLE_BITS)
    return tuple(named + ([f"0x{unknown:x}"] if unknown else []))


def environmental(reasons: Iterable[str]) -> tuple[str, ...]:
    """The reasons that are neither benign nor a clock fact, sorted: what re-times a row."""
    return tuple(sorted(set(reasons) - BENIGN - CLOCK_FACTS))


def nvml_reader(nvml: Any) -> Callable[..., int]:
    """The NVML call that reads a device's clocks-event reasons mask: the Event name, or on an older
    pynvml the Throttle one (deprecated in NVML 12, the same bits). Read by the parent's sampler and
    the worker's row clock alike."""
    reader: Callable[..., int] = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                                  or nvml.nvmlDeviceGetCurrentClocksThrottleReasons)
    return reader
