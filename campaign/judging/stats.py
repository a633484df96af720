"""Paired statistics over rounds: pure functions over rows, no IO.

Per shape (row key: function, shape, dtype) and round the paired delta is
candidate/baseline − 1 within that round, and the control's A/A delta is
control/baseline − 1 the same way. Two dispersions are kept apart because they
answer different questions: the *side spread* ((max − min)/median of one
side's latency across rounds: how noisy the machine was) and the spread of the
per-round *deltas* (whether the verdict holds).

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

The interval and the direction rule are `campaign.judging.direction`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from campaign.judging import significance
from campaign.contract.artifacts import FALLBACK_MARKER
from campaign.contract.cellfiles import Row
from campaign.judging.direction import (BASELINE_FIRST, FASTER, NEUTRAL, SLOWER, Interval, aa_floor, direction, geomean,
                                        interval, judge, orders_verdict, resolvable)

Key = tuple  # (function, shape, dtype, occurrence)


@dataclass(frozen=True)
class Sample:
    latency_ms: float
    regime: str


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
    resolvable: Optional[float] = None           # the smallest effect the rule would claim at this spread (`direction.resolvable`)


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
    candidate_missing: frozenset = frozenset()   # keys the reference timed in a round where the candidate did not

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


def _spread(values: list[float]) -> Optional[float]:
    if len(values) < 2:
        return None
    ordered = sorted(values)
    middle = ordered[len(ordered) // 2] if len(ordered) % 2 else (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
    return (ordered[-1] - ordered[0]) / middle


def row_states(rows: Iterable[Row]) -> dict[Key, str]:
    """Every row's status by key (ok, failed or compiled): failures are compared per shape."""
    return {key: row.status for key, row in keyed(rows)}


def _shape(key: Key, regime: str, paired: dict[int, tuple[float, float, Optional[float]]],
           has_control: bool, references: Mapping[int, str]) -> ShapeStat:
    rounds = sorted(paired)
    ratios = [paired[r][1] / paired[r][0] for r in rounds]
    aa = [(r, paired[r][2] / paired[r][0] - 1) for r in rounds if paired[r][2] is not None]
    floor = aa_floor([d for _, d in aa], sum(references.get(r, "baseline") == "baseline" for r in rounds), has_control)
    iv = interval(ratios)
    verdict, reason = judge(iv, floor, has_control)
    deltas = tuple((r, x - 1) for r, x in zip(rounds, ratios))
    flip = any(d > 0 for _, d in deltas) and any(d < 0 for _, d in deltas)
    spread = {"baseline": _spread([paired[r][0] for r in rounds]), "candidate": _spread([paired[r][1] for r in rounds])}
    if has_control:
        spread["control"] = _spread([paired[r][2] for r in rounds if paired[r][2] is not None])
    return ShapeStat(key, regime, deltas, tuple(aa), geomean(ratios) - 1, iv, floor, spread,
                     (max(ratios) - min(ratios)) if len(ratios) > 1 else None, flip, verdict, reason)


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
    floor = aa_floor(aa_round, sum(references.get(r, "baseline") == "baseline" for r, _, _ in per_round), has_control)
    iv = interval([x for _, _, x in per_round])
    leaning, reason = judge(iv, floor, has_control)
    p, df = significance.pooled_t([math.log(x) for _, _, x in per_round], [math.log1p(a) for a in aa_round])
    by_order, order_verdicts, per_order = orders_verdict(per_round, floor, has_control)
    verdict, reason = direction(leaning, reason, order_verdicts, per_order, p, counts)
    rounds = tuple((r, o, x - 1) for r, o, x in per_round)
    return RegimeTiming(regime, tuple(shapes), rounds, geomean(x for _, _, x in per_round) - 1, iv, floor,
                        by_order, order_verdicts, verdict, reason, counts, flips, len(shapes) - len(common),
                        p, df, per_order, leaning, max(shape_floors) if shape_floors else None,
                        resolvable(list(rounds), aa_round, floor))


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
    candidate_missing: set = set()
    for r in sorted(per_round):
        cells = per_round[r]
        ref = references.get(r, "baseline")
        base, cand = cells.get(ref, {}), cells.get("candidate", {})
        ctrl = cells.get("control", {}) if ref == "baseline" else {}
        timed_keys |= set(base) | set(cand)
        unpaired += len(set(base) ^ set(cand))
        candidate_missing |= set(base) - set(cand)
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
                  {r: ref for r, ref in references.items() if ref != "baseline"}, frozenset(timed_keys), covered,
                  frozenset(candidate_missing))


def primary_regime(regimes: list[str]) -> Optional[str]:
    """The regime a verdict rests on: graph, then event, then direct; fallback rows only when nothing else."""
    rank = {"graph": 0, "event": 1, "direct": 2}
    clean = [r for r in regimes if "+fallback" not in r]
    pool = clean or regimes
    return min(pool, key=lambda r: (rank.get(r.split("+")[0], 9), r)) if pool else None
