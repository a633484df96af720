"""The class rules of one workload: `decide` gives its class, the reason and whether a timing
direction carries it. Pure over `campaign.judging.workload.WorkloadFacts` (IR and topology from
cells that did not benchmark autotune configs); `campaign.judging.classify` runs it per workload
and then the campaign-wide pass.

Rules, first match wins:

1. X  not run: a task that did not finish (skipped adaptive rounds excepted), a timeout (a cost problem,
   not a verdict), a failed preflight, a worker that crashed (the harness failed, not the switch), an
   unreadable artifact.
2. F  the candidate (or control) crashes, fails a benchmark row the baseline runs (per shape, never as
   totals), or fails its correctness target where the baseline passes; X when the baseline itself crashes
   or fails its target. A row only the baseline fails is that shape's X, counted against coverage.
3. F  the control's IR differs from the baseline's: the switch leaks.
4. X  a caliber mismatch among the workload's own cells (even when released), replay fallbacks (configs
   not pinned), no comparable IR (nothing reached Triton, or a cell's only run benchmarked configs and no
   control replays for it), IR that differs between rounds of one cell, an unjoinable index. When the
   baseline only recorded, the control stands in for its IR, provided each control variant is among the
   variants the recording cell compiled.
5. R  compile-only (or untimed) and scoped topology increased: IR evidence alone carries this claim.
   Compile-only otherwise: X "compile-only: not timed, correctness not executed", the topology shown.
6. X  correctness not executed. Correctness is scoped to the workload's target.
7. IR unchanged: B, its timing the noise floor (never read faster or slower in either order); X "IR equal
   at <stage> but timing moved" where it moved anyway: by the full rule below, or leaning one way beyond the
   floor in every round of two or more, or shapes moved in opposite directions; it names the stages to try
   (under an environmental throttle, or a clock difference that explains an established move, X saying so).
8. IR changed, correct, timed (the primary regime; fallback rows never pooled). The fingerprint decides
   that the code changed, the timing decides the direction, the topology (convert_layout count over scoped
   variants) explains what kind of change it was; the classes are symmetric in timing (swapping the sides
   turns G into R):
   - an environmental throttle re-timing did not clear (`campaign.judging.throttle`): X;
   - pairs dropped (sides timed differently) or coverage under 90 %: X;
   - fewer than two rounds in either run order: X "direction not established";
   - faster in one order and slower in the other: X "orders disagree";
   - shapes moved in opposite directions: X "shapes disagree", naming them (`campaign.judging.shaperule`:
     a shape moved by its own interval and floor, by at least the manifest's ``min_effect_pct``);
   - faster by `campaign.judging.significance`'s rule: G; slower: R, whatever the topology did (the reason
     names it, and where it disagrees), "k of n shapes"; a geomean under ``min_effect_pct`` is no claim;
   - a direction on a side at a clock fact (the power cap, a low clock) stands only when the delta in
     cycles (time x the window's SM clock) gives the same direction by the same rule; otherwise X "the
     clock difference explains the gap", both figures;
   - timing neutral: topology reduced C, increased R (IR evidence alone), else B; "no change beyond ±x %"
     only where it holds for every shape.
9. No G or R (nor timing claim) stands on a cell whose isolation failed (a warm tuner cache labelled isolated) or a harness changed in the run.
"""
from __future__ import annotations

from typing import Optional

from campaign.contract import platforms
from campaign.contract.errors import WorkerExit
from campaign.contract.fields import BASELINE, CANDIDATE, CONTROL, stages_below
from campaign.contract.records import Timing
from campaign.contract.verdictnames import CLEAN_REDUCTION, FAILURE, GAIN, INCONCLUSIVE, NO_CHANGE, REGRESSION
from campaign.judging import direction, shaperule, significance, stats
from campaign.judging.clockrule import clock_check
from campaign.judging.evidence import TaskEvidence
from campaign.judging.workload import WorkloadFacts, timed_out

CRASH_OK = (WorkerExit.OK, WorkerExit.TESTS_FAILED)   # pytest's 0 passed, 1 tests failed; never the worker's crash
COVERAGE_MIN = 0.9       # at least this share of the timed shapes paired in every round, else X


def _ids(tasks: list[TaskEvidence]) -> str:
    shown = ", ".join(t.task.id for t in tasks[:3])
    return shown + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")


def _keys(keys: list) -> str:
    shown = ", ".join(stats.key_name(k) for k in keys[:3])
    return shown + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")


def _nodes(nodes: list[str]) -> str:
    """Correctness nodes by file and test (their folder is the workload's target's)."""
    shown = ", ".join(n.rsplit("/", 1)[-1] for n in nodes[:3])
    return shown + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")


def _topo_text(w: WorkloadFacts) -> str:
    b, c = w.ref_topology(), w.topo.get(CANDIDATE)
    ref = "" if w.ir_ref == BASELINE else f" ({w.ir_ref} standing in for the recording baseline)"
    return f"scoped topology {b['scoped']} -> {c['scoped']}{ref}" if b and c else "scoped topology unknown"


def _evidence_missing(w: WorkloadFacts) -> Optional[str]:
    timeouts = [t for t in w.tasks if timed_out(t)]
    if timeouts:
        return f"timeout in {_ids(timeouts)}: a cost problem, not a verdict"
    missing = [t for t in w.tasks if t.state == "missing"]
    if missing:
        why = sorted({t.row.rc_name if t.row is not None else "never started" for t in missing})
        return f"not run: {_ids(missing)} did not finish ({', '.join(why)}; `campaign run` resumes an unsealed root)"
    preflight = [t for t in w.done if not t.result.preflight.ok]
    if preflight:
        check = preflight[0].result.preflight.failed_check or "unnamed"
        return f"preflight failed in {_ids(preflight)} check={check}"
    if crashed := [t for t in w.done if t.result.rc == WorkerExit.CRASH]:
        return f"worker crashed in {_ids(crashed)} (rc {crashed[0].result.rc} {crashed[0].rc_name}): the harness failed, not the switch"
    broken = [t for t in w.tasks if t.problems]
    if broken:
        return f"unreadable artifact in {broken[0].task.id}: {broken[0].problems[0]}"
    absent = [c for c in w.cells if w.first.get(c) is None]
    if absent:
        return f"evidence missing: no finished {', '.join(absent)} cell"
    return None


def _failure(w: WorkloadFacts) -> Optional[tuple[str, str]]:
    crashed = {c: [t for t in ts if t.result.rc not in CRASH_OK] for c, ts in w.by_cell.items()}
    if crashed[BASELINE]:
        t = crashed[BASELINE][0]
        return INCONCLUSIVE, f"baseline crashes (rc {t.result.rc} {t.rc_name}) in {t.task.id}: nothing to compare against"
    bc = w.correct[BASELINE]
    for cell in (CANDIDATE, CONTROL):
        if cell not in w.by_cell:
            continue
        if crashed[cell]:
            t = crashed[cell][0]
            return FAILURE, f"{cell} crashes (rc {t.result.rc} {t.rc_name}) in {t.task.id} where baseline runs"
        failed = w.row_failures.get(cell, [])
        if failed:
            return FAILURE, f"{cell} fails {len(failed)} benchmark row(s) that baseline runs: {_keys(failed)}"
        # per node: a baseline failing node A never hides the candidate failing node B
        own = sorted(w.failing_nodes[cell] - w.failing_nodes[BASELINE])
        if own and bc["state"] == "run":
            return FAILURE, f"{cell} incorrect: {len(own)} correctness node(s) fail where baseline passes: {_nodes(own)}"
    if w.failing_nodes[BASELINE]:
        failed = sorted(w.failing_nodes[BASELINE])
        return INCONCLUSIVE, f"baseline fails {len(failed)} node(s) of its correctness target: {_nodes(failed)}: nothing to compare against"
    if w.control_matches() is False:
        return FAILURE, "control IR differs from baseline IR: the switch leaks into its off state"
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
    if w.fp.get(w.ir_ref) is None or w.fp.get(CANDIDATE) is None:
        where = [c for c in (w.ir_ref, CANDIDATE) if w.fp.get(c) is None]
        return f"no comparable IR in {' and '.join(where)}: nothing reached the Triton compiler"
    if w.ir_ref == CONTROL and w.control_matches() is None:
        return ("control not checkable: the baseline only recorded, and the control's variants are not among "
                "the variants it compiled")
    if w.unstable:
        return f"IR of {', '.join(w.unstable)} differs between rounds"
    unscoped = [c for c in (w.ir_ref, CANDIDATE)
                if w.topo.get(c) and w.ir_task[c].ir_files and len(w.topo[c]["excluded"]) >= w.ir_task[c].ir_files]
    if unscoped:
        return (f"floor {w.ev.floor} excludes every launched variant: nothing to judge "
                f"({' and '.join(unscoped)} scope none)")
    used = [c for c in w.cells if w.ir_task.get(c) is not None]
    unjoinable = [(c, t.task.id) for c in used for t in w.by_cell[c] if not t.tuned and t.topology and t.topology.unjoinable]
    if unjoinable or any(w.topo[c] is None for c in used):
        where = unjoinable[0][1] if unjoinable else "a cell without ir/"
        return f"unjoinable index in {where}: launch counts missing, topology not evidence"
    return None


def _lower_stages(stage: str, backend: str) -> str:
    return ", ".join(stages_below(stage, backend)) or "none lower: the switch acts outside the compiler's output"


def decide(w: WorkloadFacts) -> tuple[str, str, bool]:  # noqa: C901 (the rules in their documented order, first match wins)
    """(class, reason, rests_on_timing): the last says whether a timing direction carries the
    class, so the campaign-wide correction (`holm_pass`) knows which claims it may take back."""
    reason = _evidence_missing(w)
    if reason:
        return INCONCLUSIVE, reason, False
    failure = _failure(w)
    if failure:
        return failure + (False,)
    reason = _incomparable(w)
    if reason:
        return INCONCLUSIVE, reason, False
    b, c = w.ref_topology()["scoped"], w.topo[CANDIDATE]["scoped"]
    compile_only = not platforms.platform(w.ev.matrix.backend).executes or any(not t.result.timed for t in w.done)
    not_run = [cell for cell in w.cells if w.correct[cell]["state"] != "run"]
    if compile_only and c > b:
        return _untainted(w, REGRESSION, f"{_topo_text(w)}: increased (IR evidence alone: not timed)", False)
    if compile_only and (not_run or w.ir_changed()):
        return INCONCLUSIVE, f"compile-only: not timed, correctness not executed ({_topo_text(w)}, IR {'changed' if w.ir_changed() else 'unchanged'})", False
    if not_run:
        return INCONCLUSIVE, f"correctness not run in {', '.join(not_run)}: {w.correct[not_run[0]]['reason']}", False
    empty = [cell for cell in w.cells if not w.correct[cell]["passed"]]
    if empty:
        return INCONCLUSIVE, f"no correctness evidence in {', '.join(empty)}: no node of the target passed", False
    if not w.ir_changed():
        return _ir_equal(w)
    if w.environmental:
        return INCONCLUSIVE, (f"environmental throttle while timed, not cleared by re-timing: {'; '.join(w.environmental)} "
                              f"({_topo_text(w)})"), False
    klass, reason, on_timing = timing_class(w.timing, (b, c), _topo_text(w), tuple(w.row_failures.get(BASELINE, ())),
                                            shaperule.min_effect(w.ev.manifest))
    if on_timing and w.capped:
        klass, reason, on_timing = clock_check(klass, reason, w.timing, w.cycles, w.capped)
    return _untainted(w, klass, reason, on_timing)


def _ir_equal(w: WorkloadFacts) -> tuple[str, str, bool]:
    stage = w.ev.manifest.switch.ir_stage
    timing = w.timing.primary if w.timing else None
    anyway = shaperule.moved_anyway(timing, shaperule.min_effect(w.ev.manifest)) if timing is not None else None
    if timing is None or (timing.verdict == direction.NEUTRAL and not anyway):
        bound = shaperule.bound(timing) if timing is not None and timing.resolvable is not None else ""
        return NO_CHANGE, f"IR unchanged at {stage} on every cell; correct (its timing range is the noise floor{bound})", False
    established = timing.verdict != direction.NEUTRAL
    moved = f"{timing.verdict}, geomean {direction.pct(timing.point, True)}, {timing.reason}" if established else anyway
    if w.environmental:
        return INCONCLUSIVE, (f"IR equal at {stage}, timing moved under an environmental throttle not cleared by re-timing: "
                     f"{'; '.join(w.environmental)} ({moved})"), False
    klass, reason, on_timing = INCONCLUSIVE, (f"IR equal at {stage} but timing moved: {moved}; the switch acts below "
                                     f"{stage} (try {_lower_stages(stage, w.ev.matrix.backend)})"), established
    if w.capped and established:
        klass, reason, on_timing = clock_check(klass, reason, w.timing, w.cycles, w.capped)
    return _untainted(w, klass, reason, on_timing)


def _untainted(w: WorkloadFacts, klass: str, reason: str, on_timing: bool) -> tuple[str, str, bool]:
    """A G or R (or a timing claim) never stands on a cell whose isolation or harness failed."""
    if w.taints and (klass in (GAIN, REGRESSION) or on_timing):
        return INCONCLUSIVE, f"would be {klass} ({reason}), but {w.taints[0]}" + (
            f" (+{len(w.taints) - 1} more)" if len(w.taints) > 1 else ""), False
    return klass, reason, on_timing


def _coverage_problem(t: Timing, baseline_failed: tuple) -> Optional[str]:
    if t.mixed_pairs:
        return (f"{t.mixed_pairs} pair(s) dropped: baseline and candidate were timed differently "
                "(one side fell back from capture): the switch changed how rows are measured")
    coverage = stats.coverage(t, baseline_failed)
    if coverage is not None and coverage < COVERAGE_MIN:
        missing = sorted(t.candidate_missing, key=repr)
        return (f"coverage {coverage:.0%} < {COVERAGE_MIN:.0%}: too few shapes paired in every round"
                + (f" (candidate lacks {len(missing)} shape(s) the baseline timed: {_keys(missing)})" if missing else "")
                + (f" ({len(baseline_failed)} shape(s) X: baseline fails them)" if baseline_failed else ""))
    return None


def _topology_note(verdict: str, scoped: tuple[int, int]) -> str:
    """What the topology says beside a timing direction; where it disagrees, the reason says so."""
    b, c = scoped
    if b == c:
        return ""
    went = "reduced" if c < b else "increased"
    disagrees = (verdict == direction.FASTER and c > b) or (verdict == direction.SLOWER and c < b)
    return f"; topology {went} but {verdict}: the timing decides" if disagrees else ""


def timing_class(t: Optional[Timing], scoped: tuple[int, int], topo: str,
                 baseline_failed: tuple = (), min_effect: float = 0.0) -> tuple[str, str, bool]:
    """The class of an IR-changed, correct, timed workload from its timing and its scoped topology
    (reference, candidate); ``min_effect``: the manifest's min_effect_pct as a fraction. Pure: the
    false-claim simulation calls it with the timing `stats.timing` made. Symmetric: mirrored timing
    and topology give the mirrored class."""
    timing = t.primary if t else None
    if timing is None or not timing.rounds:
        return INCONCLUSIVE, "IR changed but no timed rows paired: nothing to judge the change by", False
    problem = _coverage_problem(t, baseline_failed)
    if problem:
        return INCONCLUSIVE, f"{problem} ({topo})", False
    where = f"geomean {direction.pct(timing.point, True)}, {timing.reason}"
    ov = timing.order_verdicts
    short = [o for o in direction.ORDERS if timing.rounds_per_order.get(o, 0) < significance.MIN_ROUNDS_PER_ORDER]
    if short:
        have = ", ".join(f"{timing.rounds_per_order.get(o, 0)} {o}" for o in direction.ORDERS)
        return INCONCLUSIVE, (f"direction not established: {have} round(s); a timing claim needs >= "
                              f"{significance.MIN_ROUNDS_PER_ORDER} rounds in each order ({topo})"), False
    if direction.FASTER in ov.values() and direction.SLOWER in ov.values():
        return INCONCLUSIVE, "orders disagree: " + ", ".join(f"{v} {o}" for o, v in ov.items()) + f" ({topo})", False
    split = shaperule.disagree(timing, min_effect)
    if split:
        return INCONCLUSIVE, f"{split}: no one direction to claim; {where} ({topo})", False
    small = shaperule.below_effect(timing, min_effect) if timing.verdict != direction.NEUTRAL else None
    if timing.verdict in (direction.FASTER, direction.SLOWER) and not small:
        klass = GAIN if timing.verdict == direction.FASTER else REGRESSION
        return klass, (f"{timing.verdict} in both orders: {where} ({topo}){_topology_note(timing.verdict, scoped)}; "
                       f"{shaperule.carried(timing, timing.verdict, min_effect)}; correct"), True
    klass, bound = topology_class(scoped), (f"; {small}" if small else shaperule.bound(timing))
    if klass == CLEAN_REDUCTION:
        return CLEAN_REDUCTION, f"{topo}: reduced; correct; timing neutral: {where}{bound}", False
    if klass == REGRESSION:
        return REGRESSION, f"{topo}: increased (IR evidence alone); correct; timing neutral: {where}{bound}", False
    return NO_CHANGE, f"{topo}: not reduced; correct; timing {timing.verdict}: {where}{bound}", False


def topology_class(scoped: tuple[int, int]) -> str:
    """The class of a changed, correct workload whose timing claims nothing, from its scoped topology
    (reference, candidate): reduced C, increased R (IR evidence alone), else B. Holm's take-back
    (`campaign.judging.classify.holm_pass`) falls to it too."""
    b, c = scoped
    return CLEAN_REDUCTION if c < b else REGRESSION if c > b else NO_CHANGE
