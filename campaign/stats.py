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

A shape (or a workload) is faster/slower only when its interval clears the A/A
floor on one side, i.e. lies wholly outside [−floor, +floor] (which implies it
excludes zero). The floor is the largest |A/A delta| over rounds; without a
control it is unknown and the verdict is neutral, saying so. Shapes whose
per-round deltas take both signs are counted and named.

Timing regimes are never pooled: a row's regime is its timer plus ``+fallback``
when it carries BENCHMARK_DIRECT_NO_CUDAGRAPH (captured run, direct-timed row).
Pairs are formed only within one regime (fallback to fallback); a pair whose
sides were timed differently is dropped and counted. Repeated keys (the
comprehensive BLAS level yields each shape twice) get an occurrence number.

The workload aggregate is, per round, the geometric mean of the ratios over the
shapes paired in every round; its interval is made as above, and each run
order (baseline-first, candidate-first) is judged on its own, so a claim can
require the effect in both orders. An aggregate direction also needs its
shapes: more shapes resolved in that direction than against it, else neutral
(a geomean of shapes that flip sign is not a finding).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from campaign.artifacts import Row

FALLBACK_MARKER = "BENCHMARK_DIRECT_NO_CUDAGRAPH"
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


@dataclass(frozen=True)
class Timing:
    primary: Optional[RegimeTiming]              # the regime a verdict is drawn from
    others: tuple[RegimeTiming, ...]             # other regimes, reported beside it, never pooled
    mixed_pairs: int                             # pairs dropped: the two sides timed differently
    unpaired: int                                # rows with no partner in their round
    rounds: tuple[int, ...]
    orders: dict[int, str]


def key_name(key: Key) -> str:
    function, shape, dtype, occurrence = key
    dims = "x".join(str(d) for d in shape) or "scalar"
    return f"{function}[{dims},{dtype}]" + (f"#{occurrence + 1}" if occurrence else "")


def samples(rows: Iterable[Row]) -> dict[Key, Sample]:
    """Timed rows keyed by (function, shape, dtype, occurrence); failed and untimed rows are left out."""
    out: dict[Key, Sample] = {}
    seen: dict[tuple, int] = {}
    for row in rows:
        base = (row.function, tuple(row.shape), row.dtype)
        occurrence = seen.get(base, 0)
        seen[base] = occurrence + 1
        if row.status != "ok" or row.latency_ms is None or row.latency_ms <= 0 or row.timer == "none":
            continue
        fallback = any(m.split()[0] == FALLBACK_MARKER for m in row.markers)
        out[base + (occurrence,)] = Sample(row.latency_ms, row.timer + ("+fallback" if fallback else ""))
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


def _shape(key: Key, regime: str, paired: dict[int, tuple[float, float, Optional[float]]],
           has_control: bool) -> ShapeStat:
    rounds = sorted(paired)
    ratios = [paired[r][1] / paired[r][0] for r in rounds]
    aa = [(r, paired[r][2] / paired[r][0] - 1) for r in rounds if paired[r][2] is not None]
    floor = max(abs(d) for _, d in aa) if has_control and len(aa) == len(rounds) else None
    iv = interval(ratios)
    verdict, reason = judge(iv, floor, has_control)
    deltas = tuple((r, x - 1) for r, x in zip(rounds, ratios))
    flip = any(d > 0 for _, d in deltas) and any(d < 0 for _, d in deltas)
    spread = {"baseline": _spread([paired[r][0] for r in rounds]), "candidate": _spread([paired[r][1] for r in rounds])}
    if has_control:
        spread["control"] = _spread([paired[r][2] for r in rounds if paired[r][2] is not None])
    return ShapeStat(key, regime, deltas, tuple(aa), geomean(ratios) - 1, iv, floor, spread,
                     (max(ratios) - min(ratios)) if len(ratios) > 1 else None, flip, verdict, reason)


def _orders_verdict(by_order: dict[str, float], floor: Optional[float]) -> dict[str, str]:
    if floor is None:
        return {order: NEUTRAL for order in by_order}
    return {order: FASTER if d < -floor else SLOWER if d > floor else NEUTRAL for order, d in by_order.items()}


def _regime(regime: str, shapes: list[ShapeStat], orders: Mapping[int, str], has_control: bool,
            paired: dict[Key, dict[int, tuple[float, float, Optional[float]]]]) -> RegimeTiming:
    counts = {FASTER: 0, SLOWER: 0, NEUTRAL: 0, "sign_flipping": 0}
    for s in shapes:
        counts[s.verdict] += 1
        counts["sign_flipping"] += s.sign_flip
    flips = tuple(key_name(s.key) for s in shapes if s.sign_flip)
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
    floor = max(abs(d) for d in aa_round) if has_control and len(aa_round) == len(per_round) else None
    iv = interval([x for _, _, x in per_round])
    verdict, reason = judge(iv, floor, has_control)
    against = SLOWER if verdict == FASTER else FASTER
    if verdict != NEUTRAL and counts[verdict] <= counts[against]:
        # An aggregate is not a finding when no shape carries it (topk: shapes flipping sign).
        verdict, reason = NEUTRAL, (f"{reason}, but {counts[verdict]} shape(s) resolved {verdict} against "
                                    f"{counts[against]} {against} ({counts['sign_flipping']} sign-flipping)")
    by_order = {o: geomean(x for _, order, x in per_round if order == o) - 1
                for o in ORDERS if any(order == o for _, order, _ in per_round)}
    order_verdicts = _orders_verdict(by_order, floor)
    if verdict != NEUTRAL:
        if len(by_order) < 2:
            reason += f"; measured in {next(iter(by_order))} order only"
        elif any(v != verdict for v in order_verdicts.values()):
            reason += "; not " + verdict + " in " + ", ".join(o for o, v in order_verdicts.items() if v != verdict)
    rounds = tuple((r, o, x - 1) for r, o, x in per_round)
    return RegimeTiming(regime, tuple(shapes), rounds, geomean(x for _, _, x in per_round) - 1, iv, floor,
                        by_order, order_verdicts, verdict, reason, counts, flips, len(shapes) - len(common))


def timing(per_round: Mapping[int, Mapping[str, Mapping[Key, Sample]]], orders: Mapping[int, str],
           has_control: bool) -> Timing:
    """``per_round``: round -> cell name -> samples. ``orders``: round -> BASELINE_FIRST/CANDIDATE_FIRST."""
    paired: dict[tuple[str, Key], dict[int, tuple[float, float, Optional[float]]]] = {}
    mixed = unpaired = 0
    for r in sorted(per_round):
        cells = per_round[r]
        base, cand, ctrl = cells.get("baseline", {}), cells.get("candidate", {}), cells.get("control", {})
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
        regimes.setdefault(regime, []).append(_shape(key, regime, rounds, has_control))
    by_regime = {reg: _regime(reg, shapes, orders, has_control,
                              {k: v for (g, k), v in paired.items() if g == reg}) for reg, shapes in regimes.items()}
    primary_name = _primary(list(by_regime))
    primary = by_regime.get(primary_name) if primary_name else None
    others = tuple(by_regime[name] for name in sorted(by_regime) if name != primary_name)
    return Timing(primary, others, mixed, unpaired, tuple(sorted(per_round)), dict(orders))


def _primary(regimes: list[str]) -> Optional[str]:
    """The regime a verdict rests on: graph, then event, then direct; fallback rows only when nothing else."""
    rank = {"graph": 0, "event": 1, "direct": 2}
    clean = [r for r in regimes if "+fallback" not in r]
    pool = clean or regimes
    return min(pool, key=lambda r: (rank.get(r.split("+")[0], 9), r)) if pool else None


def _r(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 6)


def _iv(iv: Optional[Interval]) -> Optional[dict]:
    return None if iv is None else {"low": _r(iv.low), "high": _r(iv.high), "method": iv.method}


def shape_dict(s: ShapeStat) -> dict:
    return {"key": key_name(s.key), "regime": s.regime, "deltas": [[r, _r(d)] for r, d in s.deltas],
            "aa": [[r, _r(d)] for r, d in s.aa], "point": _r(s.point), "interval": _iv(s.interval),
            "floor": _r(s.floor), "side_spread": {k: _r(v) for k, v in s.side_spread.items()},
            "delta_spread": _r(s.delta_spread), "sign_flip": s.sign_flip, "verdict": s.verdict, "reason": s.reason}


def regime_dict(t: RegimeTiming) -> dict:
    return {"regime": t.regime, "fallback": "+fallback" in t.regime, "point": _r(t.point), "interval": _iv(t.interval),
            "floor": _r(t.floor), "by_order": {k: _r(v) for k, v in t.by_order.items()},
            "order_verdicts": dict(t.order_verdicts), "verdict": t.verdict, "reason": t.reason,
            "counts": dict(t.counts), "sign_flips": list(t.sign_flips), "dropped_shapes": t.dropped_shapes,
            "rounds": [[r, o, _r(d)] for r, o, d in t.rounds], "shapes": [shape_dict(s) for s in t.shapes]}


def timing_dict(t: Timing) -> dict:
    """The JSON form a receipt and a report carry (deltas as fractions, 6 decimals)."""
    return {"primary": regime_dict(t.primary) if t.primary else None,
            "others": [regime_dict(o) for o in t.others], "mixed_pairs": t.mixed_pairs, "unpaired": t.unpaired,
            "rounds": list(t.rounds), "orders": {str(r): o for r, o in sorted(t.orders.items())}}
