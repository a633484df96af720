"""A screen's table: one workload's row (`row`: its verdict, per-side columns, caliber, range, weight
and note) and screen.tsv's format (`render`, `parse`). The verdict and the range are
`campaign.judging.screening`'s.
"""
from __future__ import annotations

from typing import Optional, get_args

from campaign.contract import errorlines
from campaign.contract.fields import CELL_NAMES
from campaign.contract.platforms import platform
from campaign.contract.verdictnames import IR_CHANGED, NEEDS_CARD, NO_IR_DIFF, ScreenVerdict
from campaign.judging import caliber, irevidence
from campaign.judging.screening import COVERAGE, Facts, Verdict, compiles_only_note, ir_pass_note, ir_pass_skipped, verdict
from campaign.judging.screenrange import IR_PASS_RANGE, Range, shape_range

PER_SIDE = ("fingerprint", "scoped", "unscoped", "elapsed", "rc")
COLUMNS = (("workload", "op", "verdict", "dtypes")
           + tuple(f"{what}_{cell}" for what in PER_SIDE for cell in CELL_NAMES)
           + tuple(caliber.flatten({})) + ("range", "range_label", "range_vs", "range_regime", "range_left_out",
                                            "aa_range", "aa_label", "weight_s", "note"))

def weight(f: Facts) -> Optional[float]:
    """Seconds the screen's cells of this workload took: one round of a campaign."""
    spent = [s.elapsed_s for s in f.sides.values() if s.elapsed_s is not None]
    return round(sum(spent), 3) if spent else None


def ir_pass_notes(f: Facts, v: Verdict) -> list[str]:
    """What the IR pass adds to the note: why nothing was timed, or that round 1 disagreed with it."""
    coverage = f.ir_pass_coverage or irevidence.EVERY_CONFIG
    if f.ir_pass_only:
        if v.name == NO_IR_DIFF:
            return [ir_pass_note(coverage)]
        if not platform(f.backend).executes:   # round 1 never runs offline (IR_PASS_DECIDES), whatever round 0 found
            return [compiles_only_note(f.backend, coverage)]
        return [ir_pass_skipped(coverage)]
    said = {irevidence.DIFFER: IR_CHANGED, irevidence.EQUAL: NO_IR_DIFF}.get(f.ir_pass_change or "")
    if said and v.name in (IR_CHANGED, NO_IR_DIFF) and said != v.name:
        return [f"the IR pass ({COVERAGE[coverage]}) said {said}: it disagreed, round 1's verdict stands"]
    return []


def row(f: Facts) -> dict[str, str]:
    v = verdict(f)
    timing = ((Range(label=IR_PASS_RANGE) if v.name == NO_IR_DIFF else shape_range(f, v) if v.name == IR_CHANGED
               else Range()) if f.ir_pass_only else shape_range(f, v))
    out = {"workload": f.workload, "op": f.op, "verdict": v.name, "dtypes": ",".join(f.dtypes)}
    for cell in CELL_NAMES:
        side = f.sides.get(cell)
        values = (side.fingerprint, side.scoped, side.unscoped, side.elapsed_s, side.rc) if side else (None,) * 5
        out.update({f"{what}_{cell}": _text(value) for what, value in zip(PER_SIDE, values)})
    out.update({name: _text(f.caliber.get(name)) for name in caliber.flatten({})})
    notes = [v.note, *errorlines.by_cells({c: s.error_line for c, s in f.sides.items()}), *ir_pass_notes(f, v),
             *(f"caliber: {line}" for line in f.caliber_findings), *f.problems]
    # weight_s is one timed round's seconds: an untimed IR pass predicts no campaign's cost
    out.update({"range": timing.span, "range_label": timing.label, "range_vs": timing.vs,
                "range_regime": timing.regime, "range_left_out": _text(timing.left_out), "aa_range": timing.aa,
                "aa_label": timing.aa_label, "weight_s": "" if f.ir_pass_only else _text(weight(f)),
                "note": "; ".join(notes)})
    return out


def _text(value: object) -> str:
    if value is None:
        return ""
    return " ".join(str(value).replace("\r", " ").replace("\n", " | ").split("\t"))


def summary(rows: list[dict[str, str]]) -> str:
    """``screened 12: IR_CHANGED 3, NO_IR_DIFF 8; NEEDS_CARD 1 (offline IR not evidence, emitted for the card)``:
    the verdicts in vocabulary order, NEEDS_CARD counted apart (it is no IR verdict)."""
    counts = {name: sum(r["verdict"] == name for r in rows) for name in get_args(ScreenVerdict)}
    shown = ", ".join(f"{name} {n}" for name, n in counts.items() if n and name != NEEDS_CARD) or "none"
    card = (f"; {NEEDS_CARD} {counts[NEEDS_CARD]} (offline IR not evidence, emitted for the card)"
            if counts[NEEDS_CARD] else "")
    return f"screened {len(rows)}: {shown}{card}"


def render(rows: list[dict[str, str]]) -> str:
    """screen.tsv: a header, then one line per workload in matrix order."""
    return "".join("\t".join(line) + "\n" for line in [COLUMNS] + [[r[c] for c in COLUMNS] for r in rows])


def parse(text: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    if not lines:
        return []
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:] if line]
