"""Shapes accounted for: what a workload's class may say of its shapes. Pure over one regime's
timing (`campaign.contract.records.RegimeTiming`); `campaign.judging.classrules` calls it.

A workload aggregates its shapes by the geometric mean, and a mean can hide what its shapes did:
one shape +5 % and one -5 % average to nothing, three shapes +0.3 % and one -8 % to -1.85 %. So:

- a shape **moved** when its own rule resolved it (`campaign.judging.stats`: its interval beyond
  its own A/A floor) and its delta is at least the manifest's ``min_effect_pct`` (the smallest
  effect worth a claim; 0 by default: every resolved shape counts);
- shapes moved in **opposite directions** are named as such, "shapes disagree", and the workload
  is X: there is no one direction to claim, and no "no measured change" either;
- a G or R says how many shapes carry it ("k of n shapes"), and a workload claim smaller than
  ``min_effect_pct`` is no claim;
- a bound "no change beyond ±x %" is printed only where it holds for every shape: no shape's
  interval lies wholly beyond ±x; otherwise the shapes that lie beyond it are named instead.
"""
from __future__ import annotations

from typing import Iterable, Optional

from campaign.contract.manifest import Manifest
from campaign.contract.records import RegimeTiming, ShapeTiming
from campaign.judging.direction import FASTER, NEUTRAL, SLOWER, pct
from campaign.judging.direction import moved as leaning

SHOWN = 3        # shapes named in a reason before "and N more"


def min_effect(manifest: Manifest) -> float:
    """The manifest's smallest effect worth a claim (`min_effect_pct`), as a fraction."""
    return float(manifest.min_effect_pct) / 100


def moved(timing: RegimeTiming, way: str, min_effect: float = 0.0) -> list[ShapeTiming]:
    """The shapes resolved ``way`` (faster or slower) by their own rule, by at least ``min_effect``."""
    return [s for s in timing.shapes if s.verdict == way and abs(s.point) >= min_effect]


def shape_text(s: ShapeTiming) -> str:
    """One shape as a reason names it: its key and geomean delta."""
    return f"{s.key} {pct(s.point, True)}"


def named(shapes: Iterable[ShapeTiming]) -> str:
    shapes = list(shapes)
    shown = ", ".join(shape_text(s) for s in shapes[:SHOWN])
    return shown + (f" and {len(shapes) - SHOWN} more" if len(shapes) > SHOWN else "")


def disagree(timing: RegimeTiming, min_effect: float = 0.0) -> Optional[str]:
    """"shapes disagree: ..." where shapes moved in opposite directions; None where they did not."""
    faster, slower = moved(timing, FASTER, min_effect), moved(timing, SLOWER, min_effect)
    if not (faster and slower):
        return None
    return (f"shapes disagree: faster {named(faster)}; slower {named(slower)} ({len(faster)} faster and "
            f"{len(slower)} slower of {len(timing.shapes)} shapes, each by its own interval and floor)")


def carried(timing: RegimeTiming, way: str, min_effect: float = 0.0) -> str:
    """What a G or R says of its shapes: "k of n shapes faster", naming them where not all are."""
    carriers, n = moved(timing, way, min_effect), len(timing.shapes)
    return f"{len(carriers)} of {n} shapes {way}" + (f" ({named(carriers)})" if 0 < len(carriers) < n else "")


def below_effect(timing: RegimeTiming, min_effect: float) -> Optional[str]:
    """Why a workload direction is no claim: its geomean under ``min_effect``; None where it is not."""
    if timing.point is None or abs(timing.point) >= min_effect:
        return None
    return (f"{timing.verdict} by the rule, but geomean {pct(timing.point, True)} is under "
            f"min_effect_pct {pct(min_effect)}: no claim")


def beyond(timing: RegimeTiming, bound: float) -> list[ShapeTiming]:
    """The shapes whose interval lies wholly beyond ±``bound``: a bound that does not hold for them."""
    return [s for s in timing.shapes if s.interval is not None
            and (s.interval.low > bound or s.interval.high < -bound)]


def unbounded(timing: RegimeTiming) -> Optional[str]:
    """Where the workload's resolvable effect is no bound for every shape, what a neutral class says
    instead of "no change beyond ±x %"; None where it holds for every shape."""
    if timing.resolvable is None:
        return None
    out = beyond(timing, timing.resolvable)
    if not out:
        return None
    return (f"; no bound holds for every shape: {len(out)} of {len(timing.shapes)} shape(s) moved beyond "
            f"±{pct(timing.resolvable)} by their own interval: {named(out)} (not established for the workload)")


def bound(timing: RegimeTiming) -> str:
    """What a timing-neutral class can say: the smallest effect this floor and these rounds resolve,
    where it holds for every shape (`unbounded` names the shapes where it does not)."""
    if timing.resolvable is None:
        return "; no effect is resolvable at this floor and these rounds"
    return unbounded(timing) or (f"; no change beyond ±{pct(timing.resolvable)} (the smallest effect this floor "
                                 "and these rounds resolve)")


def moved_anyway(timing: RegimeTiming, min_effect: float = 0.0) -> Optional[str]:
    """Where a workload's direction is not established, how its timing moved all the same: every
    round beyond the A/A floor the same way (too few rounds, or short of the t-test), or shapes moved
    in opposite directions; None where neither. Identical code that moved so is not the noise floor.
    One round has no interval: its one delta beyond its one A/A is a coin's toss under no effect (the
    IR-unchanged workloads whose later rounds were skipped), labelled as moved, never a class."""
    way = leaning([d for _, _, d in timing.rounds], timing.interval, timing.floor) if timing.interval else NEUTRAL
    if way != NEUTRAL:
        n = len(timing.rounds)
        return (f"leaning {way}, every round beyond the ±{pct(timing.floor)} A/A floor, not established "
                f"({n} round{'s' if n != 1 else ''}): geomean {pct(timing.point, True)}, {timing.reason}")
    return disagree(timing, min_effect)
