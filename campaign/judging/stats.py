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

The interval and the direction rule are `campaign.judging.direction`. The results are the
records a receipt seals (`campaign.contract.records.Timing`), at full precision: the rules decide
on these values, and only the sealed JSON is rounded.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from campaign.contract.artifacts import FALLBACK_MARKER
from campaign.contract.cellfiles import Row
from campaign.contract.fields import BASELINE, CANDIDATE, CONTROL
from campaign.contract.plans import Stopping
from campaign.contract.records import Key, RegimeTiming, ShapeCounts, ShapeTiming, Timing
from campaign.contract.verdictnames import RESULT
from campaign.judging import significance, stopping
from campaign.judging.direction import (
    BASELINE_FIRST,
    FASTER,
    NEUTRAL,
    SLOWER,
    aa_floor,
    direction,
    floor_note,
    geomean,
    interval,
    judge,
    orders_verdict,
    resolvable,
)

Paired = dict[int, tuple[float, float, Optional[float]]]    # round -> (reference, candidate, control) latency


@dataclass(frozen=True)
class Sample:
    latency_ms: float
    regime: str


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


def _shape(key: Key, regime: str, paired: Paired, has_control: bool, references: Mapping[int, str]) -> ShapeTiming:
    rounds = sorted(paired)
    ratios = [paired[r][1] / paired[r][0] for r in rounds]
    aa = [(r, paired[r][2] / paired[r][0] - 1) for r in rounds if paired[r][2] is not None]
    floor = aa_floor([d for _, d in aa], sum(references.get(r, BASELINE) == BASELINE for r in rounds), has_control)
    iv = interval(ratios)
    verdict, reason = judge(iv, floor, has_control, floor_note(len(aa)))
    deltas = tuple((r, x - 1) for r, x in zip(rounds, ratios))
    spread = {BASELINE: _spread([paired[r][0] for r in rounds]), CANDIDATE: _spread([paired[r][1] for r in rounds])}
    if has_control:
        spread[CONTROL] = _spread([paired[r][2] for r in rounds if paired[r][2] is not None])
    return ShapeTiming(key=key_name(key), regime=regime, deltas=deltas, aa=tuple(aa), point=geomean(ratios) - 1,
                       interval=iv, floor=floor, side_spread=spread,
                       delta_spread=(max(ratios) - min(ratios)) if len(ratios) > 1 else None,
                       sign_flip=any(d > 0 for _, d in deltas) and any(d < 0 for _, d in deltas),
                       verdict=verdict, reason=reason)


def _counts(shapes: Iterable[ShapeTiming]) -> dict[str, int]:
    counts = {FASTER: 0, SLOWER: 0, NEUTRAL: 0, "sign_flipping": 0}
    for s in shapes:
        counts[s.verdict] += 1
        counts["sign_flipping"] += s.sign_flip
    return counts


def _regime(regime: str, paired: Mapping[Key, Paired], orders: Mapping[int, str], has_control: bool,
            references: Mapping[int, str], part: float) -> RegimeTiming:
    shapes = {key: _shape(key, regime, rounds, has_control, references) for key, rounds in paired.items()}
    counts = _counts(shapes.values())
    all_rounds = sorted({r for rounds in paired.values() for r in rounds})
    common = [k for k, rounds in paired.items() if len(rounds) == len(all_rounds)]
    per_round, aa_round = [], []
    for r in all_rounds if common else []:
        per_round.append((r, orders.get(r, BASELINE_FIRST), geomean(paired[k][r][1] / paired[k][r][0] for k in common)))
        if has_control and all(paired[k][r][2] is not None for k in common):
            aa_round.append(geomean(paired[k][r][2] / paired[k][r][0] for k in common) - 1)
    fixed = dict(regime=regime, fallback="+fallback" in regime, shapes=tuple(shapes.values()),
                 counts=ShapeCounts(**counts), sign_flips=tuple(s.key for s in shapes.values() if s.sign_flip),
                 dropped_shapes=len(shapes) - len(common))
    if not per_round:
        return RegimeTiming(**fixed, rounds=(), point=None, interval=None, floor=None, by_order={}, order_verdicts={},
                            verdict=NEUTRAL, reason="no shape paired in every round", p_value=None, df=None,
                            rounds_per_order={}, leaning=NEUTRAL, shape_floor_max=None, resolvable=None)
    floor = aa_floor(aa_round, sum(references.get(r, BASELINE) == BASELINE for r, _, _ in per_round), has_control)
    iv = interval([x for _, _, x in per_round])
    leaning, reason = judge(iv, floor, has_control, floor_note(len(aa_round)))
    nominal, df = significance.pooled_t([math.log(x) for _, _, x in per_round], [math.log1p(a) for a in aa_round])
    p = stopping.adjusted_p(nominal, part)
    by_order, order_verdicts, per_order = orders_verdict(per_round, floor, has_control)
    verdict, reason = direction(leaning, reason, order_verdicts, per_order, p, counts)
    sequential = {}
    if part < 1:        # adaptive rounds: the look's share of the level (`campaign.judging.stopping`)
        sequential = {"alpha_share": part}
        if nominal is not None:
            reason += f" (sequential looks: nominal p {nominal:.2g} / alpha share {part:.3f})"
    rounds = tuple((r, o, x - 1) for r, o, x in per_round)
    return RegimeTiming(**fixed, rounds=rounds, point=geomean(x for _, _, x in per_round) - 1, interval=iv, floor=floor,
                        by_order=by_order, order_verdicts=order_verdicts, verdict=verdict, reason=reason, p_value=p,
                        df=df, rounds_per_order=per_order, leaning=leaning, shape_floor_max=_largest(shapes.values()),
                        resolvable=resolvable(list(rounds), aa_round, floor, significance.WORKLOAD_ALPHA * part),
                        **sequential)


def _largest(shapes: Iterable[ShapeTiming]) -> Optional[float]:
    """The largest per-shape A/A floor (per-shape noise, never averaged)."""
    return max((s.floor for s in shapes if s.floor is not None), default=None)


def timing(per_round: Mapping[int, Mapping[str, Mapping[Key, Sample]]], orders: Mapping[int, str],
           has_control: bool, references: Optional[Mapping[int, str]] = None,
           stops: Optional[Stopping] = None) -> Timing:
    """``per_round``: round -> cell name -> samples. ``orders``: round -> BASELINE_FIRST/CANDIDATE_FIRST.
    ``references``: round -> the cell the candidate is compared with (`BASELINE` unless named;
    `CONTROL` where the round's baseline benchmarked autotune configs, so its timings are not
    comparable with replaying cells). A round taken against the control has no A/A. ``stops``: the
    matrix's adaptive rounds, whose look at this many rounds spends its share of the level
    (`campaign.judging.stopping.share`); None: fixed rounds, the whole level."""
    references = dict(references or {})
    paired: dict[tuple[str, Key], Paired] = {}
    mixed = unpaired = 0
    timed_keys: set = set()
    candidate_missing: set = set()
    for r in sorted(per_round):
        cells = per_round[r]
        ref = references.get(r, BASELINE)
        base, cand = cells.get(ref, {}), cells.get(CANDIDATE, {})
        ctrl = cells.get(CONTROL, {}) if ref == BASELINE else {}
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
    regimes: dict[str, dict[Key, Paired]] = {}
    for (regime, key), rounds in sorted(paired.items(), key=lambda item: repr(item[0])):
        regimes.setdefault(regime, {})[key] = rounds
    part = stopping.share(len(per_round), stops)
    by_regime = {reg: _regime(reg, keys, orders, has_control, references, part) for reg, keys in regimes.items()}
    primary_name = primary_regime(list(by_regime))
    covered = frozenset(k for (_, k), rounds in paired.items() if len(rounds) == len(per_round))
    return Timing(primary=by_regime.get(primary_name) if primary_name else None,
                  others=tuple(by_regime[name] for name in sorted(by_regime) if name != primary_name),
                  mixed_pairs=mixed, unpaired=unpaired, rounds=tuple(sorted(per_round)),
                  orders={str(r): o for r, o in sorted(orders.items())},
                  label=RESULT,     # the classifier relabels identical code's timing (`classify.timing_label`)
                  references={str(r): ref for r, ref in sorted(references.items()) if ref != BASELINE},
                  coverage=len(covered) / len(timed_keys) if timed_keys else None,
                  timed_keys=frozenset(timed_keys), covered_keys=covered, candidate_missing=frozenset(candidate_missing))


def coverage(t: Timing, also_expected: Iterable[Key] = ()) -> Optional[float]:
    """Share of the keys (timed, plus ``also_expected``: e.g. rows the baseline failed) paired in every round."""
    universe = t.timed_keys | set(also_expected)
    return len(t.covered_keys) / len(universe) if universe else None


def primary_regime(regimes: list[str]) -> Optional[str]:
    """The regime a verdict rests on: graph, then event, then direct; fallback rows only when nothing else."""
    rank = {"graph": 0, "event": 1, "direct": 2}
    clean = [r for r in regimes if "+fallback" not in r]
    pool = clean or regimes
    return min(pool, key=lambda r: (rank.get(r.split("+")[0], 9), r)) if pool else None
