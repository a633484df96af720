"""Adaptive rounds: whether a task's round is worth timing, decided from the root's own cells.

Rounds after the first measure a workload only when round 1's baseline and candidate
generated different IR, while the matrix's frozen ``later_only_if_ir_changed`` says so
(the manifest copy is not read for the policy: a resume follows what was prepared). Equal
fingerprints: the switch changed no code, the rounds would measure noise
(SWITCH_NO_IR_DIFF). A side without IR files is no comparable IR -- never "identical" --
and is skipped under that name (NO_COMPARABLE_IR): more rounds cannot supply IR the first
did not. In a root with an IR pass (a screen's round 0), round 1 itself is timed only when
round 0's pair differs, by the same rule, unless the matrix says ``time_unchanged``. On a
backend that compiles only (the offline screen), round 1 does not run where round 0's pair differs
either (IR_PASS_DECIDES; unchanged and not comparable are skipped under their own names, as on a
card): it would record autotune configs nothing benchmarks and time nothing, so it could only
compile again what round 0 compiled (every config of every key); the IR pass's pair is the evidence
and the card times what changed (`--emit-manifest`). ``time_unchanged`` (asked for) runs every round
1 there too.

Under the matrix's ``stopping`` (``rounds.stop: decided``), a round after ``min`` runs only while
the workload's answer is undecided on the rounds before its pair (`campaign.judging.stopping`:
the rule is the judge's, fed by the same evidence the classifier reads); a skipped round's row
says why (DECIDED at round k, or UNDECIDABLE), which is how the root freezes it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from campaign.contract import status
from campaign.contract.fields import BASELINE
from campaign.contract.manifest import Manifest
from campaign.contract.plans import IR_ROUND, Matrix, Task
from campaign.contract.platforms import platform
from campaign.contract.runroot import RunRoot
from campaign.contract.status import StatusRow
from campaign.contract.verdictnames import IR_PASS_DECIDES, NO_COMPARABLE_IR, SWITCH_NO_IR_DIFF, SkipReason
from campaign.judging import evidence, irevidence, stopping
from campaign.judging.workload import WorkloadFacts

Skip = Optional[tuple[SkipReason, str]]  # (marker, why) when a round is not worth running; None: run it


class Rounds:
    """One root's skip decisions, each workload's verdict judged once per deciding round."""

    def __init__(self, root: RunRoot | Path, matrix: Matrix, manifest: Manifest, note: Callable[[str], None]):
        self.root: RunRoot = RunRoot.of(root)
        self.matrix, self.manifest, self.note = matrix, manifest, note
        self._verdicts: dict[tuple[str, int], Skip] = {}

    def skip(self, task: Task, latest: dict[str, StatusRow]) -> Skip:
        matrix = self.matrix
        if task.round == 1:
            if matrix.time_unchanged or not any(t.workload == task.workload and t.round == IR_ROUND
                                                for t in matrix.tasks):
                return None
            decided_by = IR_ROUND
        elif task.round > 1 and matrix.later_only_if_ir_changed:
            decided_by = 1
        else:
            return self.stop(task, latest)
        key = (task.workload, decided_by)
        if key not in self._verdicts:
            self._verdicts[key] = self.verdict(task.workload, latest, decided_by)
        if self._verdicts[key] is None and decided_by == IR_ROUND and not platform(matrix.backend).executes:
            return (IR_PASS_DECIDES, f"{matrix.backend} compiles only: round 1 would time nothing and compile "
                    "again what the IR pass (round 0) compiled; the IR pass's pair is the evidence")
        return self._verdicts[key] or self.stop(task, latest)

    def stop(self, task: Task, latest: dict[str, StatusRow]) -> Skip:
        """Adaptive rounds: a round after ``min`` runs only while its workload is undecided on the rounds
        before its pair (`campaign.judging.stopping.decide`), judged once per workload and pair."""
        stops = self.matrix.stopping
        if stops is None or task.round <= stops.min:
            return None
        start = stopping.pair_start(task.round, stops)
        key = (task.workload, -start)
        if key not in self._verdicts:
            self._verdicts[key] = self.decided(task.workload, start, latest)
        return self._verdicts[key]

    def decided(self, workload: str, start: int, latest: dict[str, StatusRow]) -> Skip:
        stops = self.matrix.stopping
        earlier = [t for t in self.matrix.tasks if t.workload == workload and t.timed and t.round < start]
        unsettled = [t.id for t in earlier if t.id not in latest]
        if unsettled:
            self.note(f"{workload}: {unsettled[0]} has not finished; round {start} runs")
            return None
        ev = evidence.load_rounds(self.root, self.manifest, self.matrix, workload, start, latest)
        facts = WorkloadFacts(workload, list(ev.tasks.values()), ev)
        taken = max((t.task.round for t in facts.done), default=0)
        decision = stopping.decide(facts.timing, taken, stops)
        if decision.more:
            return None
        return (decision.state, f"{decision.why}; rounds {start}-{stops.max} not run")

    def verdict(self, workload: str, latest: dict[str, StatusRow], decided_by: int = 1) -> Skip:
        # the deciding round's cells read through evidence and judged by irevidence.ir_change, as
        # the screen and the classifier judge them
        first = {t.cell: t for t in self.matrix.tasks if t.workload == workload and t.round == decided_by}
        tuned = evidence.cell_tuned(self.root, first[BASELINE], self.manifest)
        cells = irevidence.comparable_pair(tuned, self.matrix.cells)
        name = "the IR pass (round 0)" if decided_by == IR_ROUND else f"round {decided_by}"
        if cells is None:
            self.note(f"{workload}: {name} baseline benchmarked autotune configs and there is no control: "
                      "no replaying cell to compare the candidate with; later rounds run")
            return None
        for cell in cells:
            if first[cell].id not in latest:
                self.note(f"{workload}: {name} {cell} has not finished; later rounds run")
                return None
        prints = {cell: evidence.cell_ir(self.root, first[cell], self.manifest) for cell in cells}
        change = irevidence.ir_change(tuned, self.matrix.cells, prints)
        stage = self.manifest.switch.ir_stage
        untimed = "; not timed: IR unchanged" if decided_by == IR_ROUND else ""
        if change.missing:
            return (NO_COMPARABLE_IR, f"{name} {' and '.join(change.missing)} has no *.{stage} file: "
                    "no comparable IR (this does not mean the switch is inert)")
        if change.state == irevidence.EQUAL:
            return (SWITCH_NO_IR_DIFF, f"{name} {cells[0]} and {cells[1]} {stage} fingerprints are "
                    f"{change.equal_text}: the switch changed no generated code{untimed}")
        return None


def skipped_row(task: Task, marker: str, why: str) -> StatusRow:
    return StatusRow(task_id=task.id, round=task.round, workload=task.workload, cell=task.cell,
                     rc=None, rc_name=status.SKIPPED, note=f"{marker}: {why}")
