"""The JSON form of `campaign.judging.stats` results that a receipt and a report carry.

Deltas are fractions rounded to 6 decimals; a p-value keeps 3 significant digits. The form is
part of the sealed verdicts: a change here changes receipts, so golden files pin it.
"""
from __future__ import annotations

from typing import Optional

from campaign.judging.direction import Interval
from campaign.judging.stats import RegimeTiming, ShapeStat, Timing, key_name


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
            "p_value": None if t.p_value is None else float(f"{t.p_value:.3g}"), "df": t.df,
            "rounds_per_order": dict(t.rounds_per_order), "leaning": t.leaning,
            "shape_floor_max": _r(t.shape_floor_max), "resolvable": _r(t.resolvable),
            "rounds": [[r, o, _r(d)] for r, o, d in t.rounds], "shapes": [shape_dict(s) for s in t.shapes]}


def timing_dict(t: Timing) -> dict:
    return {"primary": regime_dict(t.primary) if t.primary else None,
            "others": [regime_dict(o) for o in t.others], "mixed_pairs": t.mixed_pairs, "unpaired": t.unpaired,
            "rounds": list(t.rounds), "orders": {str(r): o for r, o in sorted(t.orders.items())},
            "references": {str(r): c for r, c in sorted(t.references.items())}, "coverage": _r(t.coverage())}
