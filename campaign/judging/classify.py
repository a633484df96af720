"""The six campaign classes, one per workload, each with a one-line reason.

`classify` is pure over `campaign.judging.evidence.RootEvidence`; `classify_root` is the
edge the seal and the report call. Each workload's class comes from the rules in
`campaign.judging.classrules` (its rules 1-9); this module adds what only the whole campaign
shows:

10. Campaign-wide, every timing claim must survive Holm's step-down over the
   workloads whose timing was tested (`holm_pass`); one that does not is taken
   back to its timing-neutral class (topology reduced C, increased R, else B;
   X "timing moved" on identical code B), saying so.

and the environment every cell saw (inherited code paths, a switch overriding a pin).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping, Optional

from campaign.contract.artifacts import SCHEMA_VERSION
from campaign.contract.fields import CANDIDATE, PER_SIDE
from campaign.contract.records import (
    Environment,
    IRJudgement,
    PinnedSwitch,
    RegimeTiming,
    Rounds,
    Rule,
    SideClocks,
    SideNoise,
    Timing,
    Topology,
    Verdicts,
    WorkloadVerdict,
)
from campaign.contract.runroot import RunRoot
from campaign.contract.verdictnames import CLASSES, NO_CHANGE, NOISE_FLOOR, RESULT, TIMING_MOVED
from campaign.judging import choices, direction, shaperule, significance, stats, stopping
from campaign.judging.classrules import decide, topology_class
from campaign.judging.evidence import RootEvidence, TaskEvidence, load_root
from campaign.judging.workload import WorkloadFacts, screen_verdict


def holm_pass(workloads: Mapping[str, WorkloadVerdict], claims: Mapping[str, Optional[float]]) -> dict[str, WorkloadVerdict]:
    """The verdicts with the timing claims that do not survive Holm's step-down over every workload
    whose timing was tested (`claims`: name -> p-value, None where nothing was tested) taken back."""
    tested = {n: p for n, p in claims.items() if p is not None}
    held = significance.holm(tested)
    out = dict(workloads)
    for name, w in workloads.items():
        ok, level = held.get(name, (False, significance.WORKLOAD_ALPHA))
        if not w.rests_on_timing or ok:
            continue
        fallback = _untimed_class(w)
        reason = (f"{w.reason}; not held after Holm over {len(tested)} timed workload(s): "
                  f"p = {tested.get(name):.2g} >= {level:.2g}, so {w.klass} -> {fallback}")
        out[name] = w.model_copy(update={"klass": fallback, "reason": reason, "rests_on_timing": False})
    return out


def _untimed_class(w: WorkloadVerdict) -> str:
    """The class a workload takes when its timing claim is taken back: identical code B; else what its
    topology gives with the timing neutral (`campaign.judging.classrules.topology_class`)."""
    ref, cand = w.topology.cells.get(w.ir.reference), w.topology.cells.get(CANDIDATE)
    if not w.ir.changed or not ref or not cand:
        return NO_CHANGE
    return topology_class((ref.scoped, cand.scoped))


def timing_label(identical: bool, p: RegimeTiming, min_effect: float = 0.0) -> str:
    """What a workload's timing is: a result (IR changed); with the IR unchanged, the noise floor
    unless every round moved beyond the A/A floor, which is said, established or not, or its shapes
    moved in opposite directions (`campaign.judging.shaperule`)."""
    if not identical:
        return RESULT
    if p.verdict != direction.NEUTRAL:
        return f"{TIMING_MOVED} ({p.verdict} in both orders)"
    if direction.moved([d for _, _, d in p.rounds], p.interval, p.floor) != direction.NEUTRAL:
        n = len(p.rounds)
        return f"{TIMING_MOVED} (not established: {n} round{'s' if n != 1 else ''})"
    if shaperule.disagree(p, min_effect):
        return f"{TIMING_MOVED} (shapes disagree)"
    return NOISE_FLOOR


def labelled(t: Timing, identical: bool, min_effect: float = 0.0) -> Timing:
    """The timing as a verdict states it: labelled (`timing_label`); identical code that did not move
    is never read as faster or slower, in either order."""
    label = timing_label(identical, t.primary, min_effect)
    if label != NOISE_FLOOR:
        return t.model_copy(update={"label": label})
    floor = {o: "noise floor" for o in t.primary.order_verdicts}
    return t.model_copy(update={"label": label, "primary": t.primary.model_copy(update={"order_verdicts": floor})})


def classify_workload(name: str, tasks: list[TaskEvidence], ev: RootEvidence) -> WorkloadVerdict:
    w = WorkloadFacts(name, tasks, ev)
    klass, reason, on_timing = decide(w)
    chosen = choices.differing(w.by_cell) if ev.manifest.defaults.tuning == PER_SIDE else ()
    reason += noise_note(w.noise, ev.manifest.timer) + choices.note(chosen, w.ir_changed(), klass)
    rounds = sorted({t.task.round for t in w.tasks})
    return WorkloadVerdict(
        **{"class": klass}, reason=reason, screen=screen_verdict(w), rests_on_timing=on_timing, ir=_ir(w),
        topology=Topology(floor=ev.floor, cells=dict(w.topo)), correctness=w.correct, markers=w.markers,
        rows_failed={c: tuple(stats.key_name(k) for k in keys) for c, keys in w.row_failures.items()},
        taints=tuple(w.taints), clocks={c: SideClocks(**dataclasses.asdict(side)) for c, side in w.clocks.items()},
        rounds=Rounds(planned=tuple(rounds), done=tuple(sorted({t.task.round for t in w.done})),
                      skipped=tuple(t.task.id for t in w.tasks if t.state == "skipped"),
                      missing=tuple(t.task.id for t in w.tasks if t.state == "missing"), **_stopped(w)),
        timing=(labelled(w.timing, w.ir_changed() is False, shaperule.min_effect(ev.manifest))
                if w.timing and w.timing.primary else None),
        caliber=tuple(ev.caliber.workloads.get(name, ())),
        # the same pairs in cycles (time x the window's SM clock): the gap confirmed under the clock
        cycles=w.cycles.primary if w.cycles and w.cycles.primary else None,
        **({"noise": w.noise} if w.noise else {}), **({"chosen": chosen} if chosen else {}))


def noise_note(noise: Mapping[str, SideNoise], timer) -> str:
    """What a reason adds where rows stopped at the noise target's time cap: they are noisy, and
    their deltas carry that noise into the interval; the class stands on it, said."""
    capped = {cell: side for cell, side in noise.items() if side.capped}
    if not capped:
        return ""
    return (f"; NOISE CAPPED: {sum(s.capped for s in capped.values())} timed row(s) stopped at the "
            f"{timer.timeout_s:g} s cap above the {timer.max_noise_pct:g}% noise target ("
            + ", ".join(f"{cell} {s.capped} of {s.sampled}: {', '.join(s.capped_rows[:2])}"
                        + (" …" if s.capped > 2 else "") for cell, s in capped.items()) + ")")


def _stopped(w: WorkloadFacts) -> dict:
    """Under adaptive rounds, the rounds a workload took and why it took no more: the reason the
    runner froze into the first round it skipped (status.tsv), else the rule on its final timing."""
    stops = w.ev.matrix.stopping
    if stops is None:
        return {}
    taken = max((t.task.round for t in w.done), default=0)
    skipped = [t for t in w.tasks if t.state == "skipped" and t.row is not None and t.row.note]
    if skipped:
        return {"taken": taken, "stopped": skipped[0].row.note}
    return {"taken": taken, "stopped": stopping.decide(w.timing, taken, stops).why}


def _ir(w: WorkloadFacts) -> IRJudgement:
    unpaired = w.ir_decision().unpaired
    return IRJudgement(
        stage=w.ev.manifest.switch.ir_stage, fingerprints=dict(w.fp), changed=w.ir_changed(),
        # only where the exception applied: every verdict before it keeps its bytes
        **({"unpaired": tuple(unpaired)} if unpaired else {}),
        control_matches=w.control_matches(), reference=w.ir_ref,
        files={c: (t.ir_files if t else 0) for c, t in w.ir_task.items()},
        **{"from": {c: (t.task.id if t else None) for c, t in w.ir_task.items()}})


def _environment(ev: RootEvidence) -> Environment:
    """What reached the cells besides the caliber: inherited code paths (an inherited PYTHONPATH
    runs its code in every worker) and a switch that overrides a variable the harness pins."""
    identities = [t.identity for t in ev.tasks.values() if t.identity]
    inherited = sorted({f"{k}={v}" for i in identities for k, v in (i.get("inherited_env") or {}).items()})
    name = ev.manifest.switch.name
    pins = sorted({i["pinned_env"][name] for i in identities if name in (i.get("pinned_env") or {})})
    # what each cell's workers recorded they were given (a cell's tasks share one env)
    cells_set = {t.task.cell: dict(sorted(t.identity.get("env", {}).items()))
                 for t in ev.tasks.values() if t.identity}
    return Environment(inherited=tuple(inherited),
                       switch_overrides_pin=PinnedSwitch(name=name, pinned=tuple(pins)) if pins else None,
                       cells_set={c: cells_set[c] for c in ev.matrix.cells if c in cells_set},
                       declared=dict(sorted(ev.manifest.switch.also.items())))


def classify(ev: RootEvidence) -> Verdicts:
    """The verdicts of a root as the seal writes them into the receipt and the report renders them:
    each workload's verdict at its sealed precision (`SealedRecord.sealed`), so the campaign-wide
    Holm pass reads the p-values a receipt holds, and a re-derivation from a receipt agrees."""
    names = list(dict.fromkeys(t.workload for t in ev.matrix.tasks))
    workloads = {n: classify_workload(n, [t for t in ev.tasks.values() if t.task.workload == n], ev).sealed()
                 for n in names}
    workloads = holm_pass(workloads, {n: (w.timing.primary.p_value if w.timing else None) for n, w in workloads.items()})
    switch = ev.manifest.switch
    return Verdicts(
        schema_version=SCHEMA_VERSION, campaign=ev.matrix.campaign, backend=ev.matrix.backend,
        switch=ev.matrix.switch, cells=tuple(ev.matrix.cells),
        production_default_policy=ev.manifest.production_default_policy,
        rule=Rule(measured_launch_floor=ev.floor, ir_stage=switch.ir_stage,
                  strip_annotations=tuple(switch.strip_annotations),
                  interval="1 round: none; 2-4 rounds: range of per-round deltas; >=5: 95% t-interval of log ratios",
                  significance=significance.RULE, min_effect_pct=ev.manifest.min_effect_pct),
        harness_drift=tuple(ev.harness_drift), environment=_environment(ev),
        caliber=ev.caliber.as_dict(ev.caliber_released),
        counts={k: sum(1 for v in workloads.values() if v.klass == k) for k in CLASSES}, workloads=workloads)


def classify_root(root: RunRoot | Path, floor: Optional[int] = None, allow_caliber_mismatch: bool = False,
                  harness_drift: tuple[str, ...] = ()) -> dict:
    """The verdicts of the root at ``root`` in their JSON form: what the seal writes into receipt.json."""
    return classify(load_root(root, floor, allow_caliber_mismatch, harness_drift)).dump()
