"""The interval of per-round deltas and the direction rule: when a set of ratios says faster or slower.

Pure functions over numbers; `campaign.judging.stats` pairs the rows and calls them per
shape and per regime.

Intervals say how they were made:

- 1 round: none ("single round: no interval"); a direction is never claimed.
- 2–4 rounds: the min–max range of the per-round deltas, "range of N rounds".
  No distribution is assumed; with two points a t-interval would be a costume.
- ≥ 5 rounds: a 95 % Student-t interval over log ratios, "95% t-interval of N
  rounds (log ratios)".

A shape is faster/slower only when its interval clears its own A/A floor, i.e. lies
wholly outside [1/(1+floor) − 1, floor] (which implies it excludes zero). A shape's floor
is taken from the A/A distances of that shape over rounds, each |log(control/baseline)|, given
as the fraction exp(|log|) − 1: per-shape noise is never averaged into a workload floor.

**The floor is an upper quantile, not the maximum** (`aa_floor`, the one estimator every floor
goes through: per shape, the workload aggregate, the cycles, `resolvable`, and so adaptive
rounds' stopping). Of n distances it is the k-th smallest, k = ceil(4n/5) (`floor_rank`): the
largest up to 4 rounds, as it always was; the 2nd largest of 5 to 9, the 3rd of 10 to 14. The
k-th of n order statistics lies, in expectation, at position k/(n + 1) of the distribution,
whatever the distribution; 4/5 is the position of the largest of 4 (the rounds every committed
H200 root has), and ceil(4n/5) is the largest k that never exceeds it; any rank rule ceil(p·n) that
keeps the largest at n <= 4 has p > 3/4, so it ranks no lower at 6, 8, 10 or 12 rounds: 4/5 is
held from both sides (`tests/bench/stopping.md` compares 17/20, 9/10 and the max). A maximum climbs with n
(its position n/(n + 1)), so with it more rounds gave less power: a true 1 % slowdown was called
in 64 % of simulated workloads at 4 rounds and 37 % at 12. The quantile's expected position never
exceeds 4/5, and its expected value stays below the 4-round maximum's for Gaussian, t(3) and
Laplace A/A (`tests/judging/test_floor.py`); the t-test, the intervals and the orders rule still
hold the false-claim rate (`tests/bench/false_claims.md`, `tests/bench/stopping.md`). Where the floor
is not the largest (n > 4), a reason says so after the figure (`floor_note`).

Both the floor and the band are symmetric in log ratio, so swapping baseline and
candidate turns every ratio r into 1/r and every faster into slower, exactly (a plain
±floor band was not: +5 % cleared a 4.9 % floor where its mirror, −4.76 %, did not). Without a control the floor is unknown and the verdict is
neutral, saying so. Shapes whose per-round deltas take both signs are counted and named.

The workload aggregate is, per round, the geometric mean of the ratios over the
shapes paired in every round; its floor is `aa_floor` of the same aggregate's A/A.
A workload direction follows `campaign.judging.significance`: at least two rounds in each
run order, the interval beyond the floor overall and in each order, a pooled t-test
at 0.1 %, and at least one shape resolved in that direction and none against it (a geomean of
shapes that flip sign is not a finding, nor one that hides a shape moved the other way).
`leaning` keeps what the interval alone said.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

from campaign.contract.records import Interval
from campaign.judging import significance

BASELINE_FIRST = "baseline-first"
CANDIDATE_FIRST = "candidate-first"
ORDERS = (BASELINE_FIRST, CANDIDATE_FIRST)
FASTER, SLOWER, NEUTRAL = "faster", "slower", "neutral"
FLOOR_POSITION = (4, 5)     # the floor's expected position among the A/A distances: the largest of 4's, 4/(4 + 1)

# Two-sided 95 % Student-t quantiles; above 30 degrees of freedom the 30 value (conservative).
_T95 = {4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179,
        13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
        25: 2.060, 30: 2.042}


def interval(ratios: list[float]) -> Optional[Interval]:
    """Interval of per-round deltas (ratio − 1), labelled with how it was made."""
    n = len(ratios)
    if n < 2:
        return None
    if n < 5:
        return Interval(low=min(ratios) - 1, high=max(ratios) - 1, method=f"range of {n} rounds")
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    t = _T95[max(k for k in _T95 if k <= n - 1)]
    half = t * sd / math.sqrt(n)
    return Interval(low=math.exp(mean - half) - 1, high=math.exp(mean + half) - 1,
                    method=f"95% t-interval of {n} rounds (log ratios)")


def geomean(ratios: Iterable[float]) -> float:
    ratios = list(ratios)
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def judge(iv: Optional[Interval], floor: Optional[float], has_control: bool, note: str = "") -> tuple[str, str]:
    """faster/slower only when the interval lies wholly outside [1/(1+floor) − 1, +floor]: the
    band ±log(1+floor) in log ratio, the same distance either way. ``note``: what the floor is
    (`floor_note`), said after it."""
    if not has_control:
        return NEUTRAL, "no control cell: A/A floor unknown, no direction claimed"
    if iv is None:
        return NEUTRAL, "one round: no interval, no direction claimed"
    if floor is None:
        return NEUTRAL, "control missing in a round: A/A floor unknown"
    if iv.low <= 0 <= iv.high:
        return NEUTRAL, f"{iv.method} spans zero"
    if iv.high < 1 / (1 + floor) - 1:
        return FASTER, f"{iv.method} below −{pct(floor)} A/A floor{note}"
    if iv.low > floor:
        return SLOWER, f"{iv.method} above +{pct(floor)} A/A floor{note}"
    return NEUTRAL, f"{iv.method} excludes zero but not the ±{pct(floor)} A/A floor{note}"


def moved(deltas: list[float], iv: Optional[Interval], floor: Optional[float]) -> str:
    """Which way the timing moved beyond the A/A floor, however few the rounds: the interval against
    the floor (`judge`), or with one round its one delta. A leaning, never a direction: the rule of
    `campaign.judging.significance` decides whether it is established."""
    if floor is None or not deltas:
        return NEUTRAL
    return judge(iv or Interval(low=min(deltas), high=max(deltas), method="one round"), floor, True)[0]


def pct(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.2f}%" if signed else f"{abs(value) * 100:.2f}%"


def floor_rank(n: int) -> int:
    """Which of n A/A distances, counted from the smallest, is the floor: ceil(4n/5), the largest rank k
    whose expected position k/(n + 1) is at most 4/5, the position of the largest of 4 (the floor every
    4-round campaign had). n <= 4: n, the largest; 6: 5; 8: 7; 12: 10."""
    return -(-FLOOR_POSITION[0] * n // FLOOR_POSITION[1])


def floor_words(n: int) -> str:
    """What the floor of n A/A distances is, in words: the largest up to 4 rounds, the 80th percentile
    (counted from the top) beyond."""
    from_top = n - floor_rank(n) + 1
    if from_top == 1:
        return f"the largest |A/A| of {n} round{'s' if n > 1 else ''}"
    return f"the 80th-percentile |A/A| of {n} rounds: their {_ordinal(from_top)} largest"


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def aa_floor(aa: list[float], needed: int, has_control: bool) -> Optional[float]:
    """The A/A floor of the rounds that have an A/A: the `floor_rank`-th smallest of their distances
    |log(1 + A/A)| (a control 5 % fast is as far as one 5.26 % slow), given back as exp(·) − 1: the
    largest of up to 4 rounds, the 80th percentile beyond, so that more rounds never raise it in
    expectation. Unknown unless every round taken against the baseline has its control (rounds taken
    against the control carry no A/A by construction)."""
    if not has_control or not aa or len(aa) < needed:
        return None
    distances = sorted(abs(math.log1p(d)) for d in aa)
    return math.exp(distances[floor_rank(len(distances)) - 1]) - 1


def floor_note(n: int) -> str:
    """What a reason adds after "A/A floor" where the floor is not the largest |A/A| (n > 4 rounds):
    nothing up to 4 rounds, so that every verdict of 4 rounds or fewer reads as it always did."""
    return "" if floor_rank(n) == n else f" ({floor_words(n)})"


def orders_verdict(per_round: list[tuple[int, str, float]], floor: Optional[float],
                   has_control: bool) -> tuple[dict[str, float], dict[str, str], dict[str, int]]:
    """Per run order: geomean delta, verdict (its own interval against the floor, needing at least
    `significance.MIN_ROUNDS_PER_ORDER` rounds) and how many rounds it has."""
    by_order, verdicts, counts = {}, {}, {}
    for o in ORDERS:
        ratios = [x for _, order, x in per_round if order == o]
        if not ratios:
            continue
        by_order[o], counts[o] = geomean(ratios) - 1, len(ratios)
        if len(ratios) < significance.MIN_ROUNDS_PER_ORDER:
            verdicts[o] = NEUTRAL
        else:
            verdicts[o] = judge(interval(ratios), floor, has_control)[0]
    return by_order, verdicts, counts


def direction(leaning: str, reason: str, order_verdicts: dict[str, str], counts: dict[str, int],
              p: Optional[float], shape_counts: dict[str, int]) -> tuple[str, str]:
    """The rule of `campaign.judging.significance`, applied in order; the reason names the part that held it back."""
    if leaning == NEUTRAL:
        return NEUTRAL, reason
    short = [o for o in ORDERS if counts.get(o, 0) < significance.MIN_ROUNDS_PER_ORDER]
    if short:
        have = ", ".join(f"{counts.get(o, 0)} {o}" for o in ORDERS)
        return NEUTRAL, (f"{reason}; direction not established: {have} round(s), a direction needs "
                         f">= {significance.MIN_ROUNDS_PER_ORDER} in each order")
    against = [o for o in ORDERS if order_verdicts.get(o) != leaning]
    if against:
        return NEUTRAL, f"{reason}; not {leaning} in " + ", ".join(f"{o} ({order_verdicts.get(o)})" for o in against)
    if p is None or p >= significance.WORKLOAD_ALPHA:
        return NEUTRAL, f"{reason}; pooled t-test p = {_p(p)} >= {_p(significance.WORKLOAD_ALPHA)}"
    opposite = SLOWER if leaning == FASTER else FASTER
    if shape_counts[opposite] or not shape_counts[leaning]:
        # An aggregate is not a finding when no shape carries it (topk: shapes flipping sign), nor when a
        # shape moved against it: a geomean would hide that shape (`campaign.judging.shaperule`)
        return NEUTRAL, (f"{reason}, but {shape_counts[leaning]} shape(s) resolved {leaning} against "
                         f"{shape_counts[opposite]} {opposite} ({shape_counts['sign_flipping']} sign-flipping)")
    return leaning, f"{reason}, in both orders; pooled t-test p = {_p(p)}"


def _p(p: Optional[float]) -> str:
    return "n/a" if p is None else f"{p:.2g}"


def resolvable(rounds: list[tuple[int, str, float]], aa: list[float], floor: Optional[float],
               alpha: float = significance.WORKLOAD_ALPHA) -> Optional[float]:
    """The smallest true effect, as a fraction, that the rule would have claimed with this spread: the
    larger of the two directions' (`resolvable_each`); None where no effect could be claimed (no floor,
    or fewer than `significance.MIN_ROUNDS_PER_ORDER` rounds in an order)."""
    each = resolvable_each(rounds, aa, floor, alpha)
    return None if each is None else max(-each[0], each[1])


def resolvable_each(rounds: list[tuple[int, str, float]], aa: list[float], floor: Optional[float],
                    alpha: float = significance.WORKLOAD_ALPHA) -> Optional[tuple[float, float]]:
    """(faster, slower): the effects e < 0 and e > 0 at which the rule starts to claim a direction.

    ``rounds`` are (round, order, ratio − 1) and ``aa`` the control's A/A deltas of the same aggregate.
    The observed per-round log ratios are centred (their mean removed: the spread without the effect
    seen), then a true effect e multiplies every round's ratio by 1 + e, which shifts every log ratio
    by log1p(e): the shift under which the pooled t-test's spread and the t-interval's width stay as
    observed. The rule claims slower exactly when e exceeds the slower bound (faster: below the faster
    bound), in closed form per part: (i) the interval (2–4 rounds: the range; ≥ 5: the 95 % t-interval)
    of all rounds and of each order wholly beyond ±floor, (ii) the pooled t-test's p below
    ``alpha`` (`significance.WORKLOAD_ALPHA`, or an adaptive look's share of it). The shapes-resolved part of `direction` is not modelled: it reads
    per-shape verdicts, not the aggregate's spread."""
    counts = {o: sum(1 for _, order, _ in rounds if order == o) for o in ORDERS}
    if floor is None or any(n < significance.MIN_ROUNDS_PER_ORDER for n in counts.values()):
        return None
    logs = [math.log1p(d) for _, _, d in rounds]
    mean = sum(logs) / len(logs)
    centred = [x - mean for x in logs]
    groups = [centred] + [[c for c, (_, o, _) in zip(centred, rounds) if o == order] for order in ORDERS]
    up = down = math.log1p(floor)          # the band is ±log(1 + floor) in log ratio (`judge`)
    slower = max(max(_beyond(g, up, +1) for g in groups), _t_shift(centred, aa, alpha))
    faster = max(max(_beyond(g, down, -1) for g in groups), _t_shift(centred, aa, alpha))
    return math.expm1(-faster), math.expm1(slower)


def _beyond(logs: list[float], edge: float, sign: int) -> float:
    """The log shift s past which the interval of ``logs`` shifted by sign·s lies wholly beyond sign·edge
    (in log space: `interval`'s range is the extreme ratios, its t-interval the mean ± half)."""
    n = len(logs)
    if n < 5:
        nearest = min(logs) if sign > 0 else max(logs)
        return edge - sign * nearest
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = _T95[max(k for k in _T95 if k <= n - 1)] * sd / math.sqrt(n)
    return edge - sign * mean + half


def _t_shift(centred: list[float], aa: list[float], alpha: float) -> float:
    """The log shift s past which `significance.pooled_t` of the shifted rounds is below ``alpha``:
    its residuals do not move with a shift, so only the mean does, and p < alpha is |s| / se > t*."""
    n = len(centred)
    ss = sum(x * x for x in centred) + sum(math.log1p(a) ** 2 for a in aa)
    df = (n - 1) + len(aa)
    if ss <= 0:
        return 0.0
    return significance.t_critical(alpha, df) * math.sqrt(ss / df / n)
