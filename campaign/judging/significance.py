"""How sure a directional claim is: a pooled t-test over rounds and Holm's step-down over workloads.

Pure, no IO. The rule a timing direction must pass (`campaign.judging.stats` applies it) has
three parts, each answering a different way a claim goes wrong:

1. **Both orders, at least twice each.** Rounds alternate run order to cancel drift;
   a direction seen in one order only is drift until shown otherwise.
2. **Every round beyond the A/A floor.** With 2–4 rounds the range of per-round
   deltas must lie wholly outside ±floor, the floor being the largest |control/
   baseline − 1| of the same aggregate over rounds (with 5 or more, the 95 %
   t-interval instead of the range, and the floor the 80th-percentile |A/A|, which
   does not climb with rounds as a maximum does: `campaign.judging.direction.aa_floor`).
3. **A pooled t-test at 0.1 % per workload, Holm-corrected over the campaign.**
   The per-round log ratios log(candidate/baseline) are tested against zero; their
   variance is pooled with the control's A/A log ratios (which are zero-mean by
   construction), giving 2R − 1 degrees of freedom instead of R − 1. The p-value
   feeds Holm's step-down over every workload whose timing was tested, at a
   campaign-wide level of 1 %, never looser than 0.1 % for one workload.

Under no effect this keeps the false "faster"/"slower" rate of a workload at or below
0.1 % and of a campaign at or below 1 % (`tests/bench/simulate_false_claims.py`
measures it with this code on Gaussian, t(3) and Laplace noise).
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Optional

WORKLOAD_ALPHA = 0.001      # the most a single workload may be wrong, whatever the campaign size
CAMPAIGN_ALPHA = 0.01       # family-wise, over the workloads whose timing was tested (Holm)
MIN_ROUNDS_PER_ORDER = 2

RULE = ("direction only when: >= 2 rounds in each run order; every round (2-4 rounds: the range; >= 5: the 95% "
        "t-interval) beyond the control's A/A floor (the largest |A/A| up to 4 rounds, the 80th percentile beyond) "
        "in the same direction, in each order; pooled t-test p < 0.1% per "
        "workload, Holm step-down at 1% over the campaign's timed workloads")


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-4, exact)."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df} < 1")
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:
        acc, piece = 1.0, 1.0
        for k in range(1, (df - 1) // 2):
            piece *= (2 * k) / (2 * k + 1) * c2
            acc += piece
        inside = 2 / math.pi * (theta + (s * math.cos(theta) * acc if df > 1 else 0.0))
    else:
        acc, piece = 1.0, 1.0
        for k in range(1, df // 2):
            piece *= (2 * k - 1) / (2 * k) * c2
            acc += piece
        inside = s * acc
    return min(1.0, max(0.0, 1.0 - inside))


def t_critical(alpha: float, df: int) -> float:
    """The |t| at which `t_two_sided_p` reaches ``alpha`` (bisection to the float's resolution):
    p < alpha exactly when |t| > this."""
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) >= alpha:
        low, high = high, high * 2
    for _ in range(200):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        low, high = (mid, high) if t_two_sided_p(mid, df) >= alpha else (low, mid)
    return high


def pooled_t(log_ratios: Iterable[float], aa_log_ratios: Iterable[float]) -> tuple[Optional[float], Optional[int]]:
    """Two-sided p of mean(log_ratios) = 0; variance pooled with the zero-mean A/A log ratios.

    Returns (p, degrees of freedom); (None, None) with fewer than two rounds (nothing to test).
    Without spread (or with one too small for a float to hold) p is 1 at a zero mean, else 0."""
    d = list(log_ratios)
    a = list(aa_log_ratios)
    n = len(d)
    if n < 2:
        return None, None
    mean = sum(d) / n
    ss = sum((x - mean) ** 2 for x in d) + sum(x * x for x in a)
    df = (n - 1) + len(a)
    se = math.sqrt(ss / df / n)
    if se == 0:     # no spread, or one whose squares are subnormal: ss / df / n underflows to 0
        return (1.0 if mean == 0 else 0.0), df
    return t_two_sided_p(mean / se, df), df


def holm(pvalues: Mapping[str, Optional[float]], alpha: float = CAMPAIGN_ALPHA,
         cap: float = WORKLOAD_ALPHA) -> dict[str, tuple[bool, float]]:
    """Holm's step-down over the named p-values: name -> (rejected, the level it was held to).

    A None p-value (nothing tested) is not part of the family. Each level is also capped
    at ``cap`` so one workload is never held looser than the per-workload rate."""
    tested = sorted(((p, name) for name, p in pvalues.items() if p is not None))
    m = len(tested)
    out: dict[str, tuple[bool, float]] = {}
    still = True
    for i, (p, name) in enumerate(tested):
        level = min(cap, alpha / (m - i))
        still = still and p < level
        out[name] = (still, level)
    return out
