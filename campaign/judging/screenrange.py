"""The screen's timing columns: the range of one pinned pair per workload, pure (`campaign.judging.screening`
judges the pair; this says what its timings span).

Only IR_CHANGED and NO_IR_DIFF print a range (candidate/baseline - 1 over the
shapes timed on both sides); anything else would read like a finding. The range
keeps timing regimes apart, as `campaign.judging.stats` does: it is drawn from one regime
(the primary: graph, then event, then direct; fallback rows only when nothing
else) and ``range_regime``/``range_left_out`` say which and how many paired shapes
of other regimes, or timed differently on the two sides, stayed out of it.

When the baseline benchmarked autotune configs (the recording cell) its timings
are not comparable with replaying cells (FlagGems mm on the H200: a replaying
control with identical code measured -11.4 % against it), so the range is
candidate/control - 1, both replaying (``range_vs``). The control's own A/A
(control/baseline - 1, same regime) is shown beside any range (``aa_range``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from campaign.contract.fields import BASELINE, CANDIDATE, CONTROL
from campaign.contract.platforms import platform
from campaign.contract.verdictnames import IR_CHANGED, NO_COMPARABLE_IR, NO_IR_DIFF
from campaign.judging import stats
from campaign.judging.screening import Facts, Side, Verdict

NOT_COMPARABLE = "range vs recording baseline (not comparable: baseline tuned)"
IR_PASS_RANGE = "not timed: IR unchanged, no range"


@dataclass(frozen=True)
class Range:
    """The screen's timing columns: a span and what it is relative to, and the control's A/A beside it."""

    span: str = ""
    label: str = ""
    vs: str = ""                         # the cell the candidate is divided by: baseline, or control
    regime: str = ""
    left_out: Optional[int] = None       # paired shapes of other regimes or timed differently on the two sides
    aa: str = ""
    aa_label: str = ""


def _paired(first: Side, second: Side) -> tuple[dict[str, list[float]], int]:
    """second/first - 1 per shape, by regime; a shape the two sides timed differently is counted, never paired."""
    by_regime: dict[str, list[float]] = {}
    mixed = 0
    for key, s in first.samples.items():
        other = second.samples.get(key)
        if other is None:
            continue
        if other.regime != s.regime:
            mixed += 1
            continue
        by_regime.setdefault(s.regime, []).append(other.latency_ms / s.latency_ms - 1)
    return by_regime, mixed


def _span(deltas: list[float]) -> str:
    return f"{min(deltas) * 100:+.2f}%…{max(deltas) * 100:+.2f}%"


def _aa(f: Facts, regime: str) -> tuple[str, str]:
    base, ctrl = f.sides[BASELINE], f.sides.get(CONTROL)
    if ctrl is None:
        return "", ""
    if not (base.timed and ctrl.timed):
        return "", "no A/A: the control or the baseline ran untimed"
    deltas = _paired(base, ctrl)[0].get(regime)
    if not deltas:
        return "", f"no A/A: no {regime} shape timed alike in control and baseline"
    label = f"control/baseline-1 (A/A) over {len(deltas)} {regime} shapes"
    if base.tuning_variants:
        label += ": against the recording baseline, so it holds the recording cell's offset, not only noise"
    return _span(deltas), label


def shape_range(f: Facts, v: Verdict) -> Range:
    """candidate/baseline - 1 (candidate/control - 1 when the baseline tuned) over one regime's shapes, min…max."""
    base = f.sides[BASELINE]
    if v.name == NO_COMPARABLE_IR and base.tuning_variants and CONTROL not in f.sides:
        return Range(label=f"{NOT_COMPARABLE}: not printed; there is no control to time the candidate against")
    if v.name not in (IR_CHANGED, NO_IR_DIFF):
        return Range()
    vs = CONTROL if base.tuning_variants else BASELINE
    ref, cand = f.sides.get(vs), f.sides[CANDIDATE]
    if not platform(f.backend).executes:
        return Range(label=f"not timed: {f.backend} compiles only, no range")
    if ref is None or not (ref.timed and cand.timed):
        missing = "" if vs == BASELINE else f"; {NOT_COMPARABLE}: not printed"
        return Range(label=f"not timed: a side ran untimed, no range{missing}")
    if f.caliber_findings:
        return Range(label="no range: the cells differ in caliber (see note)")
    by_regime, mixed = _paired(ref, cand)
    regime = stats.primary_regime(list(by_regime))    # the regime a campaign verdict would rest on
    if regime is None:
        return Range(label="no range: no shape timed alike on both sides"
                     + (f" ({mixed} timed differently)" if mixed else ""))
    deltas = by_regime[regime]
    others = {r: len(d) for r, d in sorted(by_regime.items()) if r != regime}
    left = [f"{n} {r}" for r, n in others.items()] + ([f"{mixed} timed differently on the two sides"] if mixed else [])
    what = f"candidate/{vs}-1 over {len(deltas)} {regime} shapes"
    if vs == CONTROL:
        what += " (baseline tuned: both sides replay)"
    label = (f"noise floor of one measurement (IR unchanged), {what}" if v.name == NO_IR_DIFF
             else f"{what}, one measurement")
    if left:
        label += f"; left out: {', '.join(left)}"
    aa, aa_label = _aa(f, regime)
    return Range(_span(deltas), label, vs, regime, sum(others.values()) + mixed, aa, aa_label)
