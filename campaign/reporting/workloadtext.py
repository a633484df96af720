"""How one workload's verdict reads in the report: its row of the workloads table and its
detail section (IR, topology, correctness, timing, clocks, markers).

Pure over the verdict, like `campaign.reporting.report`, which lays these out in the document.
"""
from __future__ import annotations

from typing import Mapping, Optional

from campaign.contract.errorlines import LogLine, by_cells
from campaign.contract.fields import BASELINE, CANDIDATE, stages_below
from campaign.contract.plans import IR_ROUND
from campaign.contract.records import Interval, RegimeTiming, WorkloadVerdict
from campaign.contract.verdictnames import CLASS_NAMES, RANGED, TIMING_MOVED
from campaign.judging.direction import FASTER, NEUTRAL, SLOWER, floor_note, floor_words, moved
from campaign.judging.irpairing import EXCEPTION
from campaign.judging.significance import MIN_ROUNDS_PER_ORDER


def pct(value: Optional[float], signed: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.2f}%" if signed else f"{abs(value) * 100:.2f}%"


def _mhz(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.0f} MHz"


def interval_text(iv: Optional[Interval]) -> str:
    if iv is None:
        return "no interval (single round)"
    return f"{pct(iv.low)} … {pct(iv.high)} ({iv.method})"


def _topology(w: WorkloadVerdict, scoped: bool) -> str:
    cells = w.topology.cells
    b, c = cells.get(w.ir.reference), cells.get(CANDIDATE)
    if not (b and c):
        return "n/a"
    return f"{b.scoped} → {c.scoped}" if scoped else f"{b.unscoped} → {c.unscoped}"


def _markers(w: WorkloadVerdict) -> str:
    totals: dict[str, int] = {}
    for counts in w.markers.values():
        for name, n in counts.items():
            totals[name] = totals.get(name, 0) + n
    shown = [f"{name} {n}" for name, n in sorted(totals.items()) if n]
    return ", ".join(shown) or "none"


def ranged_timing(w: WorkloadVerdict) -> Optional[RegimeTiming]:
    t = w.timing
    return t.primary if t is not None and t.primary is not None and w.screen in RANGED else None


def _moved(w: WorkloadVerdict) -> Optional[str]:
    """With the IR unchanged, how the timing moved beyond the A/A floor anyway ("not established: 3 rounds",
    "faster in both orders": `campaign.judging.classify.timing_label`); None where it did not."""
    label = w.timing.label if w.timing is not None else ""
    if not label.startswith(TIMING_MOVED):
        return None
    return label[len(TIMING_MOVED):].strip().removeprefix("(").removesuffix(")")


def _delta_label(w: WorkloadVerdict) -> str:
    if w.timing.label.startswith("noise"):
        return " (noise floor)"
    how = _moved(w)
    return f" (IR unchanged; timing moved, {how})" if how else ""


def order_text(p: RegimeTiming, order: str) -> str:
    """One run order's verdict: plain faster/slower only where the workload's direction is established;
    otherwise what the order leans to (an order with too few rounds for a verdict of its own leans
    where its one delta lies against the floor), neutral, or the noise floor."""
    verdict = p.order_verdicts[order]
    if verdict == NEUTRAL and p.rounds_per_order.get(order, 0) < MIN_ROUNDS_PER_ORDER:
        deltas = [d for _, o, d in p.rounds if o == order]
        lean = moved(deltas, None, p.floor) if len(deltas) == 1 else NEUTRAL
        return f"leaning {lean}, {len(deltas)} round" if lean != NEUTRAL else verdict
    established = p.verdict in (FASTER, SLOWER)
    return f"leaning {verdict}" if verdict in (FASTER, SLOWER) and not established else verdict


def table_row(name: str, w: WorkloadVerdict, with_cycles: bool = False) -> str:
    p = ranged_timing(w)
    if p is None:
        delta = iv = floor = counts = "—"
    else:
        label = _delta_label(w)
        delta, iv = pct(p.point) + label, interval_text(p.interval)
        floor = pct(p.floor, signed=False) if p.floor is not None else "unknown (no control)"
        k = p.counts
        counts = f"{k.faster}/{k.slower}/{k.neutral}/{k.sign_flipping}"
    cycles = f" {pct(w.cycles.point) if w.cycles is not None and p is not None else '—'} |" if with_cycles else ""
    return (f"| {name} | {w.klass} | {w.screen} | {_topology(w, True)} | {_topology(w, False)} "
            f"| {delta} |{cycles} {iv} | {floor} | {counts} | {_markers(w)} |")


def _past_largest(p: RegimeTiming, references: Mapping[str, str]) -> int:
    """How many A/A rounds the floor was taken from, where that is more than 4 (the floor is then not the
    largest |A/A|); else 0. A known floor has an A/A in every round taken against the baseline."""
    n = sum(str(r) not in references for r, _, _ in p.rounds)
    return n if floor_note(n) else 0


def _floor_text(p: RegimeTiming, references: Mapping[str, str], scope: str) -> str:
    """A known floor as printed: its figure, then its scope and, past 4 rounds, which |A/A| it is."""
    n = _past_largest(p, references)
    said = ([scope] if scope else []) + ([floor_words(n)] if n else [])
    return pct(p.floor, signed=False) + (f" ({'; '.join(said)})" if said else "")


def _timing_lines(w: WorkloadVerdict, p: RegimeTiming, backend: str) -> list[str]:
    t = w.timing
    out = []
    orders = ", ".join(f"{o} {pct(d)} over {p.rounds_per_order.get(o, '?')} round(s) ({order_text(p, o)})"
                       for o, d in p.by_order.items())
    floor = _floor_text(p, t.references, "workload") if p.floor is not None else "unknown (no control) (workload)"
    shape_floor = (f", per-shape floors up to {pct(p.shape_floor_max, False)}"
                   if p.shape_floor_max is not None else "")
    p_text = f"; pooled t-test p = {p.p_value:.2g} ({p.df} df)" if p.p_value is not None else ""
    out.append(f"- timing [{p.regime}, {t.label}]: geomean {pct(p.point)}, {interval_text(p.interval)}; "
               f"A/A floor {floor}{shape_floor}; {orders}{p_text}; {p.verdict}: {p.reason}"
               + _resolvable_text(p))
    c = w.cycles
    if c is not None and c.point is not None:
        c_floor = _floor_text(c, t.references, "") if c.floor is not None else "unknown"
        out.append(f"- cycles (each row's time x the SM clock of its window; the gap confirmed under the clock): "
                   f"geomean {pct(c.point)}, {interval_text(c.interval)}; A/A floor {c_floor}; {c.verdict}: {c.reason}")
    how = _moved(w)
    if how:
        below = stages_below(w.ir.stage, backend)
        where = (f"set the IR stage to {' or '.join(below)}" if below
                 else "no stage is lower: it acts outside the compiler's output")
        lean = moved([d for _, _, d in p.rounds], p.interval, p.floor)
        way = how if p.verdict != NEUTRAL or lean == NEUTRAL else f"leaning {lean} ({how})"
        out.append(f"- the IR is unchanged at {w.ir.stage} but the timing moved {pct(p.point)} beyond the "
                   f"±{pct(p.floor, False)} A/A floor, {way}: not the noise floor. The switch acts below "
                   f"{w.ir.stage}: {where}")
    if t.references:
        out.append("- rounds taken against the control (their baseline benchmarked configs, so its timings are "
                   "not comparable): " + ", ".join(f"round {r}" for r in t.references))
    if t.coverage is not None and t.coverage < 1:
        out.append(f"- coverage: {pct(t.coverage, False)} of the timed shapes paired in every round")
    out += shape_lines(p)
    spreads = [s.side_spread.get(BASELINE) for s in p.shapes if s.side_spread.get(BASELINE) is not None]
    deltas = [s.delta_spread for s in p.shapes if s.delta_spread is not None]
    if spreads:
        out.append(f"- dispersion: baseline side spread up to {pct(max(spreads), False)} (machine noise); "
                   f"per-round delta spread up to {pct(max(deltas), False)} (verdict stability)")
    for other in t.others:
        out.append(f"- other timing regime [{other.regime}] (never pooled): geomean {pct(other.point)}, "
                   f"{interval_text(other.interval)}, {len(other.shapes)} shape(s)")
    if t.mixed_pairs:
        out.append(f"- {t.mixed_pairs} pair(s) dropped: the two sides were timed differently")
    return out


def shape_lines(p: RegimeTiming) -> list[str]:
    """The shapes' counts, then each shape that moved (resolved by its own interval and floor) with its
    delta and interval; the sign-flipping ones (noise) only named after them."""
    k = p.counts
    out = [f"- shapes: {k.faster} faster, {k.slower} slower, {k.neutral} neutral, "
           f"{k.sign_flipping} sign-flipping" + (f" ({', '.join(p.sign_flips)})" if p.sign_flips else "")]
    return out + [f"- shape moved: {s.key} {s.verdict} {pct(s.point)}, {interval_text(s.interval)}, beyond its "
                  f"±{pct(s.floor, False)} A/A floor" for s in p.shapes if s.verdict in (FASTER, SLOWER)]


def _resolvable_text(p: RegimeTiming) -> str:
    """The smallest effect the rule would have claimed at this spread (`campaign.judging.direction.resolvable`);
    nothing for verdicts sealed before it was computed."""
    if "resolvable" not in p.model_fields_set:
        return ""
    if p.resolvable is None:
        return ("; resolvable at this floor and rounds: none (a direction needs an A/A floor and "
                f">= {MIN_ROUNDS_PER_ORDER} rounds in each order)")
    return f"; resolvable at this floor and rounds: ±{pct(p.resolvable, False)}"


def ir_pass_cells(sources: dict[str, Optional[str]]) -> list[str]:
    """The cells whose IR came from a screen's IR pass (task ids ``<workload>/r0/<cell>``)."""
    return [c for c, task in sources.items() if task and task.split("/")[-2] == f"r{IR_ROUND}"]


def diff_line(name: str, w: WorkloadVerdict, page: Optional[str]) -> list[str]:
    """Where the IR diff of a changed workload is: a link into the page (``page``: its path, "" on the
    page itself), or the command that writes it."""
    if w.ir.changed is not True:
        return []
    if page is None:
        return ["- IR diff: `campaign report <root> --html <dir>` writes the page with this workload's variants "
                "paired and diffed side by side at every captured stage"]
    return [f"- IR diff: [{name}: variants paired, side by side, every captured stage]({page}#diff-{name})"]


def details(name: str, w: WorkloadVerdict, backend: str, logs: Optional[Mapping[str, LogLine]] = None,
            page: Optional[str] = None) -> list[str]:
    """``logs``: cell -> its last error line, where it ran no row or left no IR (beside the reason's words);
    ``page``: where `campaign report --html` wrote the page (`diff_line`)."""
    out = [f"### {name} — {w.klass} ({CLASS_NAMES[w.klass]})", "", w.reason, ""]
    out += [f"- {line}" for line in by_cells(logs or {})]
    by_ir_pass = ir_pass_cells(w.ir.sources)
    out.append(_ir_line(w, by_ir_pass))
    out += diff_line(name, w, page)
    for taint in w.taints:
        out.append(f"- **not isolated**: {taint}")
    failed = {c: keys for c, keys in w.rows_failed.items() if keys}
    if failed:
        out.append("- rows failed (per shape): " + "; ".join(
            f"{c} {len(keys)} ({', '.join(keys[:3])}{' …' if len(keys) > 3 else ''})" for c, keys in failed.items()))
    cells = w.topology.cells
    excluded = sorted({f for c in cells.values() if c for f in c.excluded})
    unjoinable = sorted({f for c in cells.values() if c for f in c.unjoinable})
    out.append(f"- topology at launch floor {w.topology.floor}: scoped {_topology(w, True)}, "
               f"unscoped {_topology(w, False)}; excluded by the floor: {', '.join(excluded) or 'none'}"
               + (f"; unjoinable: {', '.join(unjoinable)}" if unjoinable else ""))
    corr = []
    for cell, c in w.correctness.items():
        if c.state != "run":
            corr.append(f"{cell} not run ({c.reason})")
        else:
            corr.append(f"{cell} {c.passed} passed / {c.failed + c.error} failed")
    outside = max((c.outside_target for c in w.correctness.values()), default=0)
    out.append("- correctness (scoped to the target): " + "; ".join(corr)
               + (f"; {outside} outcome(s) outside the target ignored" if outside else ""))
    p = ranged_timing(w)
    if p is None:
        out.append(f"- timing: no range printed ({w.screen}" + ("" if w.timing else ", nothing timed") + ")")
    else:
        out += _timing_lines(w, p, backend)
    out += _clock_lines(w) + chosen_lines(w)
    out.append(f"- markers: {_markers(w)}")
    out += _rounds_lines(w, by_ir_pass)
    out.append("")
    return out


def _ir_line(w: WorkloadVerdict, by_ir_pass: list[str]) -> str:
    """The fingerprints per cell, the unpaired variants and what the control was compared with."""
    ir = w.ir
    fps = {c: (fp[:12] if fp else "none") for c, fp in ir.fingerprints.items()}
    control = {True: "control IR equals baseline", False: "control IR DIFFERS from baseline (leak)",
               None: "control not compared"}[ir.control_matches]
    if ir.reference != BASELINE:
        control = ("the baseline only recorded (its ir/ holds every config tried): the control stands in for it"
                   + ("; every control variant is among the recording cell's" if ir.control_matches else ""))
    if by_ir_pass:
        control = (f"from the IR pass (round {IR_ROUND}: {', '.join(by_ir_pass)}, each on its first autotune "
                    "config, untimed, no correctness): round 1 was not timed")
    unpaired = f"; {EXCEPTION}: {'; '.join(ir.unpaired)}" if ir.unpaired else ""
    return f"- IR ({ir.stage}): " + ", ".join(f"{c} {fp}" for c, fp in fps.items()) + f"{unpaired}; {control}"


def chosen_lines(w: WorkloadVerdict) -> list[str]:
    """Under per_side tuning, each key whose winners differ between the sides: the config each side chose."""
    if not w.chosen:
        return []
    return [f"- autotune, each side tuned for itself: {len(w.chosen)} key(s) chose differently"] + [
        f"  - {c.kernel} {c.key}: " + "; ".join(f"{cell} {' / '.join(shown) or 'none'}" for cell, shown in c.cells.items())
        for c in w.chosen]


def _clock_lines(w: WorkloadVerdict) -> list[str]:
    """The SM clock inside the timing windows and the noise target, per side, where recorded."""
    out: list[str] = []
    if w.clocks:
        out.append("- SM clock inside the timing windows, per side: " + "; ".join(
            f"{c} median {_mhz(k.sm_clock_median_mhz)}, min {_mhz(k.sm_clock_min_mhz)}, "
            f"{k.throttled_rows} throttled / {k.unsampled_rows} unsampled of {k.rows} row(s)"
            + (f" ({', '.join(f'{r} {n}' for r, n in k.reasons.items())})" if k.reasons else "")
            + (f"; {k.capped_rows} at a clock fact (power cap or low clock), {k.environmental_rows} environmental, "
               f"{k.retimed_rows} re-timed" if "capped_rows" in k.model_fields_set else "")
            for c, k in w.clocks.items()))
    if w.noise:
        out.append("- noise target (rows sampled until their relative spread reached it, or the time cap), per side: "
                   + "; ".join(f"{c} {n.sampled - n.capped} of {n.sampled} row(s) reached it"
                               + (f", {n.capped} NOISE CAPPED ({', '.join(n.capped_rows[:3])}"
                                  f"{' …' if n.capped > 3 else ''})" if n.capped else "")
                               for c, n in w.noise.items()))
    return out


def _rounds_lines(w: WorkloadVerdict, by_ir_pass: bool) -> list[str]:
    """How many rounds a workload took and why it stopped (adaptive rounds), and what was skipped."""
    out = []
    if w.rounds.stopped is not None:
        out.append(f"- rounds: {w.rounds.taken} taken; {w.rounds.stopped}")
    if w.rounds.skipped:
        why = "the IR pass decided round 1 was not worth timing" if by_ir_pass else "adaptive rounds"
        out.append(f"- skipped by {why}: {len(w.rounds.skipped)} task(s)")
    return out
