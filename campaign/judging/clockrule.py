"""A timing direction at a clock fact: the power cap, or a low SM clock (`campaign.judging.throttle`).

On the H200 dense fp16 GEMM runs at ``sw_power_cap``: a build that draws more power runs at a lower
clock, and the time users get includes that. So a direction measured while a side sat at a clock
fact stands when the same pairs in cycles (each row's time x its window's median SM clock) give the
same direction by the same rule, each beyond its own A/A floor; where the cycles do not even lean
that way the clock difference explains the gap, and where they lean but fall short of the rule the
gap is not established in cycles. Pure: `campaign.judging.classrules` calls it.
"""
from __future__ import annotations

from typing import Optional

from campaign.contract.records import Timing
from campaign.contract.verdictnames import INCONCLUSIVE
from campaign.judging import direction


def clock_check(klass: str, reason: str, t: Timing, cycles: Optional[Timing],
                capped: list[str]) -> tuple[str, str, bool]:
    """A timing direction with a side at a clock fact (the power cap, a low clock) stands when the
    cycles (time x the window's SM clock) move the same way by the same rule; else X."""
    timing, cyc = t.primary, (cycles.primary if cycles else None)
    at = f"clock facts while timed: {'; '.join(capped)}"
    time_text = f"time {direction.pct(timing.point, True)} ({timing.verdict})"
    if cyc is None or cyc.point is None:
        return INCONCLUSIVE, (f"would be {klass} ({reason}), but {at}, and the clock of the timed rows is unknown, so the gap "
                              f"cannot be checked in cycles"), False
    cycles_text = f"cycles {direction.pct(cyc.point, True)} ({cyc.verdict}: {cyc.reason})"
    sides = ", ".join(side.split(" ", 1)[0] for side in capped)
    if cyc.leaning != timing.verdict:
        return INCONCLUSIVE, f"the clock difference explains the gap: {time_text}, {cycles_text}; {at}", False
    if cyc.verdict != timing.verdict:
        return INCONCLUSIVE, (f"the gap is not established in cycles (it leans {cyc.leaning}, short of the rule): {time_text}, "
                              f"{cycles_text}; {at}"), False
    return klass, (f"{reason}; cycles {direction.pct(cyc.point, True)} {cyc.verdict} too, beyond their own "
                   f"{direction.pct(cyc.floor)} A/A floor (power cap or low clock on {sides})"), True
