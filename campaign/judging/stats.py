"""Paired statistics over rounds: pure functions over rows, no IO.

Per shape (row key: function, shape, dtype) and round the paired delta is
candidate/baseline − 1 within that round, and the control's A/A delta is
control/baseline − 1 the same way. Two dispersions are kept apart because they
answer different questions: the *side spread* ((max − min)/median of one
side's latency across rounds: how noisy the machine was) and the spread of the
per-round *deltas* (whether the verdict holds).

Intervals say how they were made:

- 1 round: none ("single round: no interval"); a direction is never claimed.
- 2–4 rounds: the min–max range of the per-round deltas, "range of N rounds".
  No distribution is assumed; with two points a t-interval would be a costume.
- ≥ 5 rounds: a 95 % Student-t interval over log ratios, "95% t-interval of N
  rounds (log ratios)".

A shape is faster/slower only when its interval clears its own A/A floor, i.e. lies
wholly outside [−floor, +floor] (which implies it excludes zero). A shape's floor is
the largest |A/A delta| of that shape over rounds: per-shape noise is never averaged
into a workload floor. Without a control the floor is unknown and the verdict is
neutral, saying so. Shapes whose per-round deltas take both signs are counted and named.

A round whose baseline benchmarked autotune configs (round 1's recording cell) is not
comparable with replaying cells: the caller names the control as that round's reference
(``references``), the candidate is compared with it, and the round has no A/A.

Timing regimes are never pooled: a row's regime is its timer plus ``+fallback``
when it carries BENCHMARK_DIRECT_NO_CUDAGRAPH (captured run, direct-timed row).
Pairs are formed only within one regime (fallback to fallback); a pair whose
sides were timed differently is dropped and counted (the classifier makes that X),
and `Timing.coverage` says what share of the timed shapes was paired in every round.
Repeated keys (the comprehensive BLAS level yields each shape twice) get an
occurrence number.

The workload aggregate is, per round, the geometric mean of the ratios over the
shapes paired in every round; its floor is the largest |A/A| of the same aggregate.
A workload direction follows `campaign.judging.significance`: at least two rounds in each
run order, the interval beyond the floor overall and in each order, a pooled t-test
at 0.1 %, and more shapes resolved in that direction than against it (a geomean of
shapes that flip sign is not a finding). `leaning` keeps what the interval alone said.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from campaign.judging import significance
from campaign.contract.artifacts import FALLBACK_MARKER, Row

BASELINE_FIRST = "baseline-first"
CANDIDATE_FIRST = "candidate-first"
ORDERS = (BASELINE_FIRST, CANDIDATE_FIRST)
FASTER, SLOWER, NEUTRAL = "faster", "slower", "neutral"

# Two-sided 95 % Student-t quantiles; above 30 degrees of freedom the 30 value (conservative).
_T95 = {4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179,
        13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
        25: 2.060, 30: 2.042}

Key = tuple  # (function, shape, dtype, occurrence)


@dataclass(frozen=True)
class Sample:
    latency_ms: float
    regime: str


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str


@dataclass(frozen=True)
class ShapeStat:
    key: Key
    regime: str
    deltas: tuple[tuple[int, float], ...]        # (round, candidate/baseline − 1)
    aa: tuple[tuple[int, float], ...]            # (round, control/baseline − 1)
    point: float                                 # geometric-mean ratio − 1 over rounds
    interval: Optional[Interval]
    floor: Optional[float]
    side_spread: dict[str, Optional[float]]
    delta_spread: Optional[float]
    sign_flip: bool
    verdict: str
    reason: str


@dataclass(frozen=True)
class RegimeTiming:
    regime: str
    shapes: tuple[ShapeStat, ...]
    rounds: tuple[tuple[int, str, float], ...]   # (round, order, geomean ratio − 1)
    point: Optional[float]
    interval: Optional[Interval]
    floor: Optional[float]
    by_order: dict[str, float]
    order_verdicts: dict[str, str]
    verdict: str
    reason: str
    counts: dict[str, int]
    sign_flips: tuple[str, ...]
    dropped_shapes: int                          # paired in some rounds only: left out of the aggregate
    p_value: Optional[float] = None              # pooled t-test of the per-round log ratios (significance.pooled_t)
    df: Optional[int] = None
    rounds_per_order: dict[str, int] = field(default_factory=dict)
    leaning: str = NEUTRAL                       # the interval against the floor alone, before orders and p
    shape_floor_max: Optional[float] = None      # the largest per-shape A/A floor (per-shape noise, never averaged)


@dataclass(frozen=True)
class Timing:
    primary: Optional[RegimeTiming]              # the regime a verdict is drawn from
    others: tuple[RegimeTiming, ...]             # other regimes, reported beside it, never pooled
    mixed_pairs: int                             # pairs dropped: the two sides timed differently
    unpaired: int                                # rows with no partner in their round
    rounds: tuple[int, ...]
    orders: dict[int, str]
    references: dict[int, str] = field(default_factory=dict)   # round -> the cell a delta is taken against
    timed_keys: frozenset = frozenset()          # every key timed on either side in any round
    covered_keys: frozenset = frozenset()        # keys paired in every round, in one consistent regime

    def coverage(self, also_expected: Iterable[Key] = ()) -> Optional[float]:
        """Share of the keys (timed, plus ``also_expected``: e.g. rows the baseline failed) paired in every round."""
        universe = self.timed_keys | set(also_expected)
        return len(self.covered_keys) / len(universe) if universe else None


def key_name(key: Key) -> str:
    function, shape, dtype, occurrence = key
    dims = "x".join(str(d) for d in shape) or "scalar"
    return f"{function}[{dims},{dtype}]" + (f"#{occurrence + 1}" if occurrence else "")


def keyed(rows: Iterable[Row]) -> list[tuple[Key, Row]]:
    """Every row with its key (function, shape, dtype, occurrence): the one keying of rows that
    pairing, per-shape failures and throttle flags share."""
    seen: dict[tuple, int] = {}
    out = []
    for row in rows:
        if row.role == "reference":     # another implementation's time (FlagGems' torch side): never paired
            continue
        base = (row.function, tuple(row.shape), row.dtype)
        occurrence = seen.get(base, 0)
        seen[base] = occurrence + 1
        out.append((base + (occurrence,), row))
    return out


def samples(rows: Iterable[Row]) -> dict[Key, Sample]:
    """Timed rows by key; failed and untimed rows are left out."""
    out: dict[Key, Sample] = {}
    for key, row in keyed(rows):
        if row.status != "ok" or row.latency_ms is None or row.latency_ms <= 0 or row.timer == "none":
            continue
        fallback = any(m.split()[0] == FALLBACK_MARKER for m in row.markers)
        out[key] = Sample(row.latency_ms, row.timer + ("+fallback" if fallback else ""))
    return out


def interval(ratios: list[float]) -> Optional[Interval]:
    """Interval of per-round deltas (ratio − 1), labelled with how it was made."""
    n = len(ratios)
    if n < 2:
        return None
    if n < 5:
        return Interval(min(ratios) - 1, max(ratios) - 1, f"range of {n} rounds")
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    t = _T95[max(k for k in _T95 if k <= n - 1)]
    half = t * sd / math.sqrt(n)
    return Interval(math.exp(mean - half) - 1, math.exp(mean + half) - 1, f"95% t-interval of {n} rounds (log ratios)")


def geomean(ratios: Iterable[float]) -> float:
    ratios = list(ratios)
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def judge(iv: Optional[Interval], floor: Optional[float], has_control: bool) -> tuple[str, str]:
    """faster/slower only when the interval lies wholly outside [−floor, +floor]."""
    if not has_control:
        return NEUTRAL, "no control cell: A/A floor unknown, no direction claimed"
    if iv is None:
        return NEUTRAL, "one round: no interval, no direction claimed"
    if floor is None:
        return NEUTRAL, "control missing in a round: A/A floor unknown"
    if iv.low <= 0 <= iv.high:
        return NEUTRAL, f"{iv.method} spans zero"
    if iv.high < -floor:
        return FASTER, f"{iv.method} below −{pct(floor)} A/A floor"
    if iv.low > floor:
        return SLOWER, f"{iv.method} above +{pct(floor)} A/A floor"
    return NEUTRAL, f"{iv.method} excludes zero but not the ±{pct(floor)} A/A floor"


def pct(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.2f}%" if signed else f"{abs(value) * 100:.2f}%"


def _spread(values: list[float]) -> Optional[float]:
    if len(values) < 2:
        return None
    ordered = sorted(values)
    middle = ordered[len(ordered) // 2] if len(ordered) % 2 else (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
    return (ordered[-1] - ordered[0]) / middle


def row_states(rows: Iterable[Row]) -> dict[Key, str]:
    """Every row's status by key (ok, failed or compiled): failures are compared per shape."""
    return {key: row.status for key, row in keyed(rows)}


def _floor(aa: list[float], needed: int, has_control: bool) -> Optional[float]:
    """The largest |A/A| over the rounds that have one; unknown unless every round taken against
    the baseline has its control (rounds taken against the control carry no A/A by construction)."""
    if not has_control or not aa or len(aa) < needed:
        return None
    return max(abs(d) for d in aa)


def _shape(key: Key, regime: str, paired: dict[int, tuple[float, float, Optional[float]]],
           has_control: bool, references: Mapping[int, str]) -> ShapeStat:
    rounds = sorted(paired)
    ratios = [paired[r][1] / paired[r][0] for r in rounds]
    aa = [(r, paired[r][2] / paired[r][0] - 1) for r in rounds if paired[r][2] is not None]
    floor = _floor([d for _, d in aa], sum(references.get(r, "baseline") == "baseline" for r in rounds), has_control)
    iv = interval(ratios)
    verdict, reason = judge(iv, floor, has_control)
    deltas = tuple((r, x - 1) for r, x in zip(rounds, ratios))
    flip = any(d > 0 for _, d in deltas) and any(d < 0 for _, d in deltas)
    spread = {"baseline": _spread([paired[r][0] for r in rounds]), "candidate": _spread([paired[r][1] for r in rounds])}
    if has_control:
        spread["control"] = _spread([paired[r][2] for r in rounds if paired[r][2] is not None])
    return ShapeStat(key, regime, deltas, tuple(aa), geomean(ratios) - 1, iv, floor, spread,
                     (max(ratios) - min(ratios)) if len(ratios) > 1 else None, flip, verdict, reason)


def _orders_verdict(per_round: list[tuple[int, str, float]], floor: Optional[float],
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


def _direction(leaning: str, reason: str, order_verdicts: dict[str, str], counts: dict[str, int],
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
    if shape_counts[leaning] <= shape_counts[opposite]:
        # An aggregate is not a finding when no shape carries it (topk: shapes flipping sign).
        return NEUTRAL, (f"{reason}, but {shape_counts[leaning]} shape(s) resolved {leaning} against "
                         f"{shape_counts[opposite]} {opposite} ({shape_counts['sign_flipping']} sign-flipping)")
    return leaning, f"{reason}, in both orders; pooled t-test p = {_p(p)}"


def _p(p: Optional[float]) -> str:
    return "n/a" if p is None else f"{p:.2g}"


def _regime(regime: str, shapes: list[ShapeStat], orders: Mapping[int, str], has_control: bool,
            paired: dict[Key, dict[int, tuple[float, float, Optional[float]]]],
            references: Mapping[int, str]) -> RegimeTiming:
    counts = {FASTER: 0, SLOWER: 0, NEUTRAL: 0, "sign_flipping": 0}
    for s in shapes:
        counts[s.verdict] += 1
        counts["sign_flipping"] += s.sign_flip
    flips = tuple(key_name(s.key) for s in shapes if s.sign_flip)
    shape_floors = [s.floor for s in shapes if s.floor is not None]
    all_rounds = sorted({r for s in shapes for r, _ in s.deltas})
    common = [s.key for s in shapes if len(s.deltas) == len(all_rounds)]
    per_round, aa_round = [], []
    for r in all_rounds if common else []:
        per_round.append((r, orders.get(r, BASELINE_FIRST), geomean(paired[k][r][1] / paired[k][r][0] for k in common)))
        if has_control and all(paired[k][r][2] is not None for k in common):
            aa_round.append(geomean(paired[k][r][2] / paired[k][r][0] for k in common) - 1)
    if not per_round:
        return RegimeTiming(regime, tuple(shapes), (), None, None, None, {}, {}, NEUTRAL,
                            "no shape paired in every round", counts, flips, len(shapes))
    floor = _floor(aa_round, sum(references.get(r, "baseline") == "baseline" for r, _, _ in per_round), has_control)
    iv = interval([x for _, _, x in per_round])
    leaning, reason = judge(iv, floor, has_control)
    p, df = significance.pooled_t([math.log(x) for _, _, x in per_round], [math.log1p(a) for a in aa_round])
    by_order, order_verdicts, per_order = _orders_verdict(per_round, floor, has_control)
    verdict, reason = _direction(leaning, reason, order_verdicts, per_order, p, counts)
    rounds = tuple((r, o, x - 1) for r, o, x in per_round)
    return RegimeTiming(regime, tuple(shapes), rounds, geomean(x for _, _, x in per_round) - 1, iv, floor,
                        by_order, order_verdicts, verdict, reason, counts, flips, len(shapes) - len(common),
                        p, df, per_order, leaning, max(shape_floors) if shape_floors else None)


def timing(per_round: Mapping[int, Mapping[str, Mapping[Key, Sample]]], orders: Mapping[int, str],
           has_control: bool, references: Optional[Mapping[int, str]] = None) -> Timing:
    """``per_round``: round -> cell name -> samples. ``orders``: round -> BASELINE_FIRST/CANDIDATE_FIRST.
    ``references``: round -> the cell the candidate is compared with ("baseline" unless named;
    "control" where the round's baseline benchmarked autotune configs, so its timings are not
    comparable with replaying cells). A round taken against the control has no A/A."""
    references = dict(references or {})
    paired: dict[tuple[str, Key], dict[int, tuple[float, float, Optional[float]]]] = {}
    mixed = unpaired = 0
    timed_keys: set = set()
    for r in sorted(per_round):
        cells = per_round[r]
        ref = references.get(r, "baseline")
        base, cand = cells.get(ref, {}), cells.get("candidate", {})
        ctrl = cells.get("control", {}) if ref == "baseline" else {}
        timed_keys |= set(base) | set(cand)
        unpaired += len(set(base) ^ set(cand))
        for key in sorted(set(base) & set(cand), key=repr):
            b, c = base[key], cand[key]
            if b.regime != c.regime:
                mixed += 1
                continue
            a = ctrl.get(key)
            aa = a.latency_ms if a is not None and a.regime == b.regime else None
            paired.setdefault((b.regime, key), {})[r] = (b.latency_ms, c.latency_ms, aa)
    regimes: dict[str, list[ShapeStat]] = {}
    for (regime, key), rounds in sorted(paired.items(), key=lambda item: repr(item[0])):
        regimes.setdefault(regime, []).append(_shape(key, regime, rounds, has_control, references))
    by_regime = {reg: _regime(reg, shapes, orders, has_control,
                              {k: v for (g, k), v in paired.items() if g == reg}, references)
                 for reg, shapes in regimes.items()}
    primary_name = primary_regime(list(by_regime))
    primary = by_regime.get(primary_name) if primary_name else None
    others = tuple(by_regime[name] for name in sorted(by_regime) if name != primary_name)
    every = len(per_round)
    covered = frozenset(k for (_, k), rounds in paired.items() if len(rounds) == every)
    return Timing(primary, others, mixed, unpaired, tuple(sorted(per_round)), dict(orders),
                  {r: ref for r, ref in references.items() if ref != "baseline"}, frozenset(timed_keys), covered)


def primary_regime(regimes: list[str]) -> Optional[str]:
    """The regime a verdict rests on: graph, then event, then direct; fallback rows only when nothing else."""
    rank = {"graph": 0, "event": 1, "direct": 2}
    clean = [r for r in regimes if "+fallback" not in r]
    pool = clean or regimes
    return min(pool, key=lambda r: (rank.get(r.split("+")[0], 9), r)) if pool else None
