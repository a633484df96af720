"""The six campaign classes, one per workload, each with a one-line reason.

`classify` is pure over `campaign.evidence.RootEvidence`; `classify_root` is the
edge the seal and the report call. The facts each rule reads are gathered in
`campaign.workload` (IR and topology from cells that did not benchmark autotune
configs). Rules, first match wins:

1. X  evidence missing: a task that did not finish (skipped adaptive rounds
   excepted), a timeout (a cost problem, not a verdict), a failed preflight, an
   unreadable artifact.
2. F  the candidate (or control) crashes or fails rows where the baseline runs,
   or fails its correctness target where the baseline passes; X when the
   baseline itself crashes or fails (nothing to compare against).
3. F  the control's IR differs from the baseline's: the switch leaks.
4. X  a caliber mismatch among the workload's own cells (even when released),
   replay fallbacks (configs not pinned), no comparable IR (nothing reached
   Triton, or a cell's only run benchmarked configs), IR that differs between
   rounds of one cell, an unjoinable index.
5. R  scoped topology increased (IR evidence alone carries this claim).
6. X  correctness not executed. On a compile-only backend (cpu) nothing is run
   and nothing is timed, so no claim needing correctness or timing can stand:
   "compile-only: not timed, correctness not executed", the topology change
   still shown. Correctness is scoped to the workload's target (node ids or
   ``::function``); outcomes outside it are ignored and counted.
7. B  IR unchanged (fingerprints equal) and correct; its timing is the noise floor.
8. IR changed, correct, timed (the primary timing regime; fallback rows are
   never pooled with it):
   - reduced, or slower, with one run order only: X "no reversed-order evidence";
   - faster in one order and slower in the other: X "orders disagree";
   - slower beyond the A/A floor overall and in both orders: R;
   - reduced and faster beyond the floor overall and in both orders: G;
   - reduced otherwise: C (timing neutral, the reason says why);
   - not reduced: B (no measured change in topology; the timing is reported).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from campaign import stats
from campaign.artifacts import SCHEMA_VERSION
from campaign.evidence import RootEvidence, TaskEvidence, load_root
from campaign.workload import WorkloadFacts, screen_verdict, timed_out

CLASSES = ("G", "C", "B", "R", "F", "X")
CRASH_OK = (0, 1)        # pytest: 0 all passed, 1 some tests failed (judged by outcomes and rows)


def _ids(tasks: list[TaskEvidence]) -> str:
    shown = ", ".join(t.task.id for t in tasks[:3])
    return shown + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")


def _topo_text(w: WorkloadFacts) -> str:
    b, c = w.topo.get("baseline"), w.topo.get("candidate")
    return f"scoped topology {b['scoped']} -> {c['scoped']}" if b and c else "scoped topology unknown"


def _evidence_missing(w: WorkloadFacts) -> Optional[str]:
    timeouts = [t for t in w.tasks if timed_out(t)]
    if timeouts:
        return f"timeout in {_ids(timeouts)}: a cost problem, not a verdict"
    missing = [t for t in w.tasks if t.state == "missing"]
    if missing:
        return f"evidence missing: {_ids(missing)} did not finish"
    preflight = [t for t in w.done if not t.result.preflight.ok]
    if preflight:
        check = preflight[0].result.preflight.failed_check or "unnamed"
        return f"preflight failed in {_ids(preflight)} check={check}"
    broken = [t for t in w.tasks if t.problems]
    if broken:
        return f"unreadable artifact in {broken[0].task.id}: {broken[0].problems[0]}"
    absent = [c for c in w.cells if w.first.get(c) is None]
    if absent:
        return f"evidence missing: no finished {', '.join(absent)} cell"
    return None


def _failure(w: WorkloadFacts) -> Optional[tuple[str, str]]:
    base = w.by_cell["baseline"]
    crashed = {c: [t for t in ts if t.result.rc not in CRASH_OK] for c, ts in w.by_cell.items()}
    if crashed["baseline"]:
        t = crashed["baseline"][0]
        return "X", f"baseline crashes (rc {t.result.rc} {t.rc_name}) in {t.task.id}: nothing to compare against"
    base_failed_rows = sum(t.result.rows.failed for t in base)
    bc = w.correct["baseline"]
    for cell in ("candidate", "control"):
        if cell not in w.by_cell:
            continue
        if crashed[cell]:
            t = crashed[cell][0]
            return "F", f"{cell} crashes (rc {t.result.rc} {t.rc_name}) in {t.task.id} where baseline runs"
        failed_rows = sum(t.result.rows.failed for t in w.by_cell[cell])
        if failed_rows and not base_failed_rows:
            return "F", f"{cell} fails {failed_rows} benchmark rows that baseline runs"
        cc = w.correct[cell]
        bad = cc["failed"] + cc["error"]
        if bad and bc["state"] == "run" and not (bc["failed"] + bc["error"]):
            return "F", f"{cell} incorrect: {bad} correctness node(s) fail where baseline passes"
    if bc["failed"] + bc["error"]:
        return "X", f"baseline fails {bc['failed'] + bc['error']} node(s) of its correctness target: nothing to compare against"
    if w.control_matches() is False:
        return "F", "control IR differs from baseline IR: the switch leaks into its off state"
    return None


def _incomparable(w: WorkloadFacts) -> Optional[str]:
    if w.ev.caliber.workloads.get(w.name):
        released = " (released)" if w.ev.caliber_released else ""
        return f"caliber mismatch{released}: {w.ev.caliber.workloads[w.name][0].split('] ', 1)[-1]}"
    fallbacks = [t for t in w.done if t.fallbacks]
    if fallbacks:
        total = sum(t.fallbacks for t in fallbacks)
        return f"AUTOTUNE_REPLAY_FALLBACK x{total} in {_ids(fallbacks)}: configs not pinned"
    if w.tuned_only:
        return (f"no comparable IR in {' and '.join(w.tuned_only)}: its only cell benchmarked autotune configs, "
                "so its ir/ holds every config tried, and no replaying cell of it ran")
    if w.fp.get("baseline") is None or w.fp.get("candidate") is None:
        where = [c for c in ("baseline", "candidate") if w.fp.get(c) is None]
        return f"no comparable IR in {' and '.join(where)}: nothing reached the Triton compiler"
    if w.unstable:
        return f"IR of {', '.join(w.unstable)} differs between rounds"
    unjoinable = [(c, t.task.id) for c in w.cells for t in w.by_cell[c] if t.topology and t.topology.unjoinable]
    if unjoinable or any(w.topo[c] is None for c in w.cells):
        where = unjoinable[0][1] if unjoinable else "a cell without ir/"
        return f"unjoinable index in {where}: launch counts missing, topology not evidence"
    return None


def decide(w: WorkloadFacts) -> tuple[str, str]:
    reason = _evidence_missing(w)
    if reason:
        return "X", reason
    failure = _failure(w)
    if failure:
        return failure
    reason = _incomparable(w)
    if reason:
        return "X", reason
    b, c = w.topo["baseline"]["scoped"], w.topo["candidate"]["scoped"]
    if c > b:
        return "R", f"{_topo_text(w)}: increased"
    compile_only = w.ev.matrix.backend == "cpu" or any(not t.result.timed for t in w.done)
    not_run = [cell for cell in w.cells if w.correct[cell]["state"] != "run"]
    if compile_only and (not_run or w.ir_changed()):
        return "X", f"compile-only: not timed, correctness not executed ({_topo_text(w)}, IR {'changed' if w.ir_changed() else 'unchanged'})"
    if not_run:
        return "X", f"correctness not run in {', '.join(not_run)}: {w.correct[not_run[0]]['reason']}"
    empty = [cell for cell in w.cells if not w.correct[cell]["passed"]]
    if empty:
        return "X", f"no correctness evidence in {', '.join(empty)}: no node of the target passed"
    if not w.ir_changed():
        return "B", "IR unchanged on every cell; correct (its timing range is the noise floor)"
    return _timed(w, c < b)


def _timed(w: WorkloadFacts, reduced: bool) -> tuple[str, str]:
    timing = w.timing.primary if w.timing else None
    if timing is None or not timing.rounds:
        return "X", "IR changed but no timed rows paired: nothing to judge the change by"
    topo = _topo_text(w)
    where = f"geomean {stats.pct(timing.point, True)}, {timing.reason}"
    ov = timing.order_verdicts
    if len(ov) < 2:
        if reduced or stats.SLOWER in ov.values() or timing.verdict != stats.NEUTRAL:
            return "X", f"no reversed-order evidence: timed in {', '.join(ov)} order only ({topo})"
        return "B", f"{topo}: not reduced; correct; timed in {', '.join(ov)} order only"
    if stats.FASTER in ov.values() and stats.SLOWER in ov.values():
        return "X", f"orders disagree: " + ", ".join(f"{v} {o}" for o, v in ov.items()) + f" ({topo})"
    if timing.verdict == stats.SLOWER and all(v == stats.SLOWER for v in ov.values()):
        return "R", f"slower in both orders: {where} ({topo})"
    if reduced and timing.verdict == stats.FASTER and all(v == stats.FASTER for v in ov.values()):
        return "G", f"{topo}: reduced; correct; faster in both orders: {where}"
    if reduced:
        return "C", f"{topo}: reduced; correct; timing neutral: {where}"
    return "B", f"{topo}: not reduced; correct; timing {timing.verdict}: {where}"


def classify_workload(name: str, tasks: list[TaskEvidence], ev: RootEvidence) -> dict:
    w = WorkloadFacts(name, tasks, ev)
    klass, reason = decide(w)
    rounds = sorted({t.task.round for t in w.tasks})
    timing = stats.timing_dict(w.timing) if w.timing and w.timing.primary else None
    if timing is not None:
        timing["label"] = "noise floor (IR unchanged)" if w.ir_changed() is False else "result"
    return {
        "class": klass, "reason": reason, "screen": screen_verdict(w),
        "ir": {"stage": ev.manifest.switch.ir_stage, "fingerprints": dict(w.fp), "changed": w.ir_changed(),
               "control_matches": w.control_matches(),
               "files": {c: (t.ir_files if t else 0) for c, t in w.ir_task.items()},
               "from": {c: (t.task.id if t else None) for c, t in w.ir_task.items()}},
        "topology": {"floor": ev.floor, "cells": dict(w.topo)},
        "correctness": w.correct, "markers": w.markers,
        "rounds": {"planned": rounds, "done": sorted({t.task.round for t in w.done}),
                   "skipped": [t.task.id for t in w.tasks if t.state == "skipped"],
                   "missing": [t.task.id for t in w.tasks if t.state == "missing"]},
        "timing": timing, "caliber": list(ev.caliber.workloads.get(name, ())),
    }


def classify(ev: RootEvidence) -> dict:
    """The verdicts of a root: what the seal writes into the receipt and the report renders."""
    names = list(dict.fromkeys(t.workload for t in ev.matrix.tasks))
    workloads = {n: classify_workload(n, [t for t in ev.tasks.values() if t.task.workload == n], ev) for n in names}
    counts = {k: sum(1 for v in workloads.values() if v["class"] == k) for k in CLASSES}
    switch = ev.manifest.switch
    return {
        "schema_version": SCHEMA_VERSION, "campaign": ev.matrix.campaign, "backend": ev.matrix.backend,
        "switch": ev.matrix.switch, "cells": list(ev.matrix.cells),
        "production_default_policy": ev.manifest.production_default_policy,
        "rule": {"measured_launch_floor": ev.floor, "ir_stage": switch.ir_stage,
                 "strip_annotations": list(switch.strip_annotations),
                 "interval": "1 round: none; 2-4 rounds: range of per-round deltas; >=5: 95% t-interval of log ratios",
                 "significance": "interval wholly outside the control's A/A floor, in both run orders"},
        "caliber": ev.caliber.as_dict(ev.caliber_released), "counts": counts, "workloads": workloads,
    }


def classify_root(root: Path, floor: Optional[int] = None, allow_caliber_mismatch: bool = False) -> dict:
    return classify(load_root(Path(root), floor, allow_caliber_mismatch))
