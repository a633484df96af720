"""The names a verdict is written in, defined once: the six campaign classes and the screen's verdicts.

A receipt carries them (`campaign.contract.records.WorkloadVerdict`: ``class`` and ``screen``), the
classifier and the screen write them, the report reads them: a name changed here changes sealed bytes.
"""
from __future__ import annotations

from typing import Final, Literal, get_args

# The six classes, in the order a report counts them (`campaign.judging.classrules` says what each means)
VerdictClass = Literal["G", "C", "B", "R", "F", "X"]
CLASSES: tuple[VerdictClass, ...] = get_args(VerdictClass)
# each letter by its name: a rule returns INCONCLUSIVE, never a bare "X" (`tests/structure/test_vocabulary.py`)
GAIN: Final = "G"
CLEAN_REDUCTION: Final = "C"
NO_CHANGE: Final = "B"
REGRESSION: Final = "R"
FAILURE: Final = "F"
INCONCLUSIVE: Final = "X"
CLASS_NAMES: dict[VerdictClass, str] = {GAIN: "gain", CLEAN_REDUCTION: "clean reduction", NO_CHANGE: "no measured change",
                                        REGRESSION: "regression", FAILURE: "failure", INCONCLUSIVE: "inconclusive"}

# The screen's verdicts on round 1 (`campaign.judging.screening.verdict` says when each is given)
ScreenVerdict = Literal["IR_CHANGED", "NO_IR_DIFF", "NO_TRITON", "NO_ROWS", "TIMEOUT", "KILLED", "NO_COMPARABLE_IR",
                        "NEEDS_CARD", "MISSING"]
IR_CHANGED: Final = "IR_CHANGED"
NO_IR_DIFF: Final = "NO_IR_DIFF"
NO_TRITON: Final = "NO_TRITON"
NO_ROWS: Final = "NO_ROWS"
TIMEOUT: Final = "TIMEOUT"
# a cell died by a signal from outside the runner, retried and killed again: the host, not the switch
KILLED: Final = "KILLED"
NO_COMPARABLE_IR: Final = "NO_COMPARABLE_IR"
# an offline cell proved its own IR untrustworthy (host reads of kernel results, a torch fallback): the card decides
NEEDS_CARD: Final = "NEEDS_CARD"
EMITTED = (IR_CHANGED, NEEDS_CARD)     # the screen verdicts `--emit-manifest` sends to the card
MISSING: Final = "MISSING"   # the classifier's screen column: round 1 lacks the baseline or the candidate

# Why adaptive rounds skip a task (`campaign.running.rounds`): the marker its status row's note starts with
SkipReason = Literal["SWITCH_NO_IR_DIFF", "NO_COMPARABLE_IR", "IR_PASS_DECIDES"]
SWITCH_NO_IR_DIFF: Final = "SWITCH_NO_IR_DIFF"
# a compile-only screen's round 1 would time nothing: the IR pass is its evidence, the card times what changed
IR_PASS_DECIDES: Final = "IR_PASS_DECIDES"
SKIP_REASONS: tuple[SkipReason, ...] = get_args(SkipReason)
RANGED = (IR_CHANGED, NO_IR_DIFF)     # the verdicts whose timing range means something

# What a workload's timing is (`campaign.contract.records.Timing.label`): a result where the IR changed;
# with the IR unchanged, the noise floor unless every round moved (`campaign.judging.classify.timing_label`)
RESULT, NOISE_FLOOR, TIMING_MOVED = "result", "noise floor (IR unchanged)", "IR unchanged; timing moved"
