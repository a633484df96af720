"""The facts of one workload, gathered once from its tasks' evidence: what the classifier's
rules (`campaign.judging.classify`) judge.

IR and topology come only from cells that did not benchmark autotune configs: a recording
cell holds every config's variants (`campaign.judging.irevidence.holds_tuning_variants`).
Correctness is scoped to the workload's target; the screen column is the one screen
verdict (`campaign.judging.screening.verdict`) over round 1's pair.

A screen's IR pass (round 0: untimed, no correctness) is no timing round: the rounds the
rules count are 1 and up. Only where none of them ran (the runner skipped round 1 because
the IR pass found the IR unchanged or not comparable) does the IR pass's pair stand in,
for IR and topology alone; its correctness was never run, which the rules then say.
"""
from __future__ import annotations

from typing import Optional

from campaign.contract import clockreasons, verdictnames
from campaign.contract.cellfiles import Outcomes
from campaign.contract.fields import BASELINE, CANDIDATE, CONTROL
from campaign.contract.plans import IR_ROUND, Targets
from campaign.contract.records import SideNoise
from campaign.judging import direction, irevidence, screening, screenroot, stats, throttle
from campaign.judging.evidence import RootEvidence, TaskEvidence


def in_target(node: str, targets: Targets) -> bool:
    """Whether a correctness node belongs to the workload's correctness target."""
    if targets.correctness_node_ids:
        return any(node == n or node.endswith("/" + n) or n.endswith("/" + node) for n in targets.correctness_node_ids)
    if "::" in targets.correctness:
        function = targets.correctness.split("::", 1)[1]
        return node.split("::")[-1].split("[")[0] == function
    return True


def scope_outcomes(outcomes: Outcomes, targets: Targets) -> tuple[dict[str, int], int]:
    """Outcome counts inside the workload's correctness target, and how many fell outside it."""
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    outside = 0
    for item in outcomes.outcomes:
        if in_target(item.node, targets):
            counts[item.outcome] += 1
        else:
            outside += 1
    return counts, outside


def _correctness(tasks: list[TaskEvidence]) -> dict:
    state, reason, total, outside = "not_run", None, {"passed": 0, "failed": 0, "error": 0, "skipped": 0}, 0
    for t in tasks:
        if t.outcomes is None:
            reason = reason or "no outcomes.json"
            continue
        if t.outcomes.state == "not_run":
            reason = reason or t.outcomes.reason or "not run"
            continue
        state = "run"
        counts, out = scope_outcomes(t.outcomes, t.task.targets)
        outside += out
        for k, v in counts.items():
            total[k] += v
    if state != "run" and reason is None:
        reason = "the cell did not finish"
    return {"state": state, "reason": None if state == "run" else reason, **total, "outside_target": outside}


def failing_nodes(tasks: list[TaskEvidence]) -> frozenset[str]:
    """The target's nodes that failed or errored in any run task of one cell: correctness is
    compared per node, so a baseline failing one node never hides a candidate failing another."""
    return frozenset(item.node for t in tasks if t.outcomes is not None and t.outcomes.state == "run"
                     for item in t.outcomes.outcomes
                     if item.outcome in ("failed", "error") and in_target(item.node, t.task.targets))


def _cell_summary(tasks: list[TaskEvidence]) -> dict:
    markers: dict[str, int] = {}
    for t in tasks:
        for name, count in (t.result.markers if t.result else {}).items():
            markers[name] = markers.get(name, 0) + count
    return markers


def _topology(t: Optional[TaskEvidence]) -> Optional[dict]:
    if t is None or t.topology is None:
        return None
    topo = t.topology
    return {"scoped": topo.scoped, "unscoped": topo.unscoped, "excluded": list(topo.excluded),
            "unjoinable": list(topo.unjoinable), "task": t.task.id}


def noise(by_cell: dict[str, list[TaskEvidence]]) -> dict[str, SideNoise]:
    """Per side, its ok rows sampled to the manifest's noise target and those the time cap stopped
    above it, named by key and round; sides with no such row are left out."""
    out = {}
    for cell, tasks in by_cell.items():
        sampled = [(t.task.round, key, row) for t in tasks for key, row in stats.keyed(t.rows or ())
                   if row.status == "ok" and row.samples is not None]
        if sampled:
            capped = tuple(f"{stats.key_name(key)} r{r}" for r, key, row in sampled if row.noise_capped)
            out[cell] = SideNoise(sampled=len(sampled), capped=len(capped), capped_rows=capped)
    return out


def timed_out(t: TaskEvidence) -> bool:
    return t.rc_name in screening.TIMEOUT_NAMES or (t.result is not None and t.result.rc in screening.TIMEOUT_RCS)


def screen_verdict(w: "WorkloadFacts") -> str:
    """What the screen would say of round 1: its own sides (`campaign.judging.screenroot.side`) judged by
    its own rule (`campaign.judging.screening.verdict`), from the evidence the classifier read."""
    sides = {}
    for cell in w.cells:
        t = next((t for t in w.tasks if t.task.round == 1 and t.task.cell == cell), None)
        if t is None or t.state != "done":   # skipped, or not run yet: no side to judge (MISSING, never NO_ROWS)
            continue
        sides[cell] = screenroot.side(t)
    if not sides and w.ir_pass:          # round 1 skipped: the IR pass decided, as screen.tsv says
        sides = {t.task.cell: screenroot.side(t) for t in w.ir_pass if t.state != "skipped"}
    if BASELINE not in sides or CANDIDATE not in sides:
        return verdictnames.MISSING
    first = w.tasks[0].task
    facts = screening.Facts(workload=w.name, op=first.op, backend=w.ev.matrix.backend,
                            ir_stage=w.ev.manifest.switch.ir_stage, dtypes=first.dtypes, dtypes_own=True,
                            sides=sides, caliber={})
    return screening.verdict(facts).name


def _warm_isolated(t: TaskEvidence) -> Optional[str]:
    """A cell labelled isolated whose tuner cache was not empty at start: another run's winners
    were handed to it, which is what isolation exists to prevent. A later workload of a batch
    finds the earlier ones' files in the folder; it is fresh only when FlagGems' tuner store,
    where the winners live, was counted empty at its start (emptied by the batch). A cell whose
    identity lacks the count is unknown, never clean: nothing shows it started empty."""
    identity = t.identity or {}
    if identity.get("tuner_cache") != "isolated":
        return None
    at_start = identity.get("tuner_cache_at_start")
    if at_start is None:
        return (f"{t.task.id}: tuner cache at start unknown (its run identity has no tuner_cache_at_start) "
                "though labelled isolated")
    store = identity.get("tuner_store_at_start")
    if not at_start.get("files"):
        return None
    if store is not None and store.get("rows") == 0:
        return None
    held = f"; {store['rows']} row(s) in its tuner store" if store else ""
    return f"{t.task.id} started on a warm tuner cache ({at_start['files']} file(s){held}) though labelled isolated"


class WorkloadFacts:
    """The facts of one workload, gathered once; `decide` applies the rules."""

    def __init__(self, name: str, tasks: list[TaskEvidence], ev: RootEvidence):
        self.name, self.ev = name, ev
        ordered = sorted(tasks, key=lambda t: t.task.order)
        self.ir_pass = [t for t in ordered if t.task.round == IR_ROUND]
        self.tasks = [t for t in ordered if t.task.round != IR_ROUND]
        self.cells = ev.matrix.cells
        self.done = [t for t in self.tasks if t.state == "done"]
        if not self.done and self.ir_pass:
            # the IR pass stands in only where no timed round ran (see the module docstring)
            self.tasks = ordered
            self.done = [t for t in self.tasks if t.state == "done"]
            self.cells = tuple(c for c in self.cells if any(t.task.cell == c for t in self.ir_pass))
        self.by_cell = {c: [t for t in self.done if t.task.cell == c] for c in self.cells}
        self.first = {c: (ts[0] if ts else None) for c, ts in self.by_cell.items()}
        # IR and topology come only from cells that did not benchmark autotune configs: a
        # recording cell holds every config's variants (irevidence.holds_tuning_variants)
        comparable = {c: [t for t in ts if not t.tuned] for c, ts in self.by_cell.items()}
        self.tuned_only = [c for c in self.cells if self.by_cell[c] and not comparable[c]]
        self.ir_task = {c: (ts[0] if ts else None) for c, ts in comparable.items()}
        prints = {c: sorted({t.fingerprint or "" for t in ts}) for c, ts in comparable.items()}
        self.unstable = [c for c, fps in prints.items() if len(fps) > 1]
        self.fp = {c: (t.fingerprint if t else None) for c, t in self.ir_task.items()}
        self.topo = {c: _topology(t) for c, t in self.ir_task.items()}
        # When the baseline only ever recorded (adaptive rounds skipped its replaying rounds), the
        # control stands in for it: it replays like the candidate and differs from it only by the
        # switch. Whether the control itself leaks is then checked against the recording cell:
        # each control variant must be among the variants the recording cell compiled.
        self.ir_ref = BASELINE
        if BASELINE in self.tuned_only and self.ir_task.get(CONTROL) is not None:
            self.ir_ref = CONTROL
            self.tuned_only = [c for c in self.tuned_only if c != BASELINE]
        self.correct = {c: _correctness(ts) for c, ts in self.by_cell.items()}
        self.failing_nodes = {c: failing_nodes(ts) for c, ts in self.by_cell.items()}
        self.markers = {c: _cell_summary(ts) for c, ts in self.by_cell.items()}
        self.row_failures = self._row_failures()
        self.taints = [m for m in (_warm_isolated(t) for t in self.done) if m]
        self.taints += [f"harness file {f} changed during the run" for f in ev.harness_drift]
        self.timing = self._timing(lambda t: stats.samples(t.rows))
        # the same pairing in cycles (time x the window's SM clock): what a direction under the power cap
        # is checked against (`campaign.judging.classrules`)
        self.cycles = self._timing(lambda t: throttle.cycles(t.rows, t.throttle))
        self.clocks = throttle.summary(self.done)
        self.noise = noise(self.by_cell)
        # per side: "cell N of M timed row(s) (reasons)", environmental throttles that re-timing did not
        # clear, and clock facts (the power cap, a low clock) that send a direction to the cycles check
        self.environmental = [f"{cell} {side.environmental_rows} of {side.rows} timed row(s) "
                              f"({', '.join(r for r in side.reasons if r not in clockreasons.CLOCK_FACTS)})"
                              for cell, side in self.clocks.items() if side.environmental_rows]
        self.capped = [f"{cell} {side.capped_rows} of {side.rows} timed row(s) "
                       f"({', '.join(r for r in side.reasons if r in clockreasons.CLOCK_FACTS)})"
                       for cell, side in self.clocks.items() if side.capped_rows]

    def _row_failures(self) -> dict[str, list]:
        """Per cell, the row keys it failed; for candidate and control only those the baseline ran
        (ok) somewhere, for the baseline every failed key: compared per shape, never as totals."""
        states = {c: {} for c in self.cells}
        for t in self.done:
            for key, state in stats.row_states(t.rows or ()).items():
                states[t.task.cell].setdefault(key, set()).add(state)
        base = states.get(BASELINE, {})
        out = {BASELINE: sorted((k for k, s in base.items() if "failed" in s), key=repr)}
        for cell in (CANDIDATE, CONTROL):
            if cell in states:
                out[cell] = sorted((k for k, s in states[cell].items() if "failed" in s and "ok" in base.get(k, ())),
                                   key=repr)
        return out

    def _timing(self, samples) -> Optional[stats.Timing]:
        """``samples``: a task's evidence -> its timed samples by key (times, or cycles)."""
        per_round: dict[int, dict] = {}
        orders: dict[int, str] = {}
        references: dict[int, str] = {}
        for t in self.done:
            if t.rows is None:
                return None
            per_round.setdefault(t.task.round, {})[t.task.cell] = samples(t)
            if t.task.cell == BASELINE and t.tuned and CONTROL in self.cells:
                # its timings come from a process that benchmarked configs first: compare the
                # candidate with the control there, both replaying (measured on the H200: mm's
                # identical control read -11.4 % against the recording baseline)
                references[t.task.round] = CONTROL
        for r, cells in per_round.items():
            ids = {t.task.cell: t.task.order for t in self.tasks if t.task.round == r}
            ref = references.get(r, BASELINE)
            if ref in cells and CANDIDATE in cells:
                orders[r] = direction.BASELINE_FIRST if ids[BASELINE] < ids[CANDIDATE] else direction.CANDIDATE_FIRST
        per_round = {r: c for r, c in per_round.items() if r in orders}
        if not per_round:
            return None
        return stats.timing(per_round, orders, CONTROL in self.cells,
                            {r: c for r, c in references.items() if r in per_round}, self.ev.matrix.stopping)

    def ir_decision(self) -> irevidence.IrChange:
        """`irevidence.ir_change` over the first comparable cells: the baseline counts as tuned
        when it only recorded (the control then stands in, or nothing does)."""
        baseline_tuned = self.ir_ref == CONTROL or BASELINE in self.tuned_only
        return irevidence.ir_change(baseline_tuned, self.cells, {c: t.ir if t else None for c, t in self.ir_task.items()})

    def ir_changed(self) -> Optional[bool]:
        return self.ir_decision().changed

    def ref_topology(self) -> Optional[dict]:
        return self.topo.get(self.ir_ref)

    def control_matches(self) -> Optional[bool]:
        if CONTROL not in self.cells or self.ir_task.get(CONTROL) is None:
            return None
        if self.ir_ref == CONTROL:
            recorded = {v for t in self.by_cell[BASELINE] for v in t.variants}
            return True if set(self.ir_task[CONTROL].variants) <= recorded else None
        if self.fp.get(BASELINE) is None or self.fp.get(CONTROL) is None:
            return None
        # the same rule as the switch's change: an unpaired specialisation is not a leak
        return irevidence.same_code(self.ir_task[BASELINE].ir, self.ir_task[CONTROL].ir,
                                    (BASELINE, CONTROL)) is not None
