"""The names a verdict is written in, defined once: the six campaign classes and the screen's verdicts.

A receipt carries them (`campaign.contract.records.WorkloadVerdict`: ``class`` and ``screen``), the
classifier and the screen write them, the report reads them: a name changed here changes sealed bytes.
"""
from __future__ import annotations

from typing import Literal, get_args

# The six classes, in the order a report counts them (`campaign.judging.classrules` says what each means)
VerdictClass = Literal["G", "C", "B", "R", "F", "X"]
CLASSES: tuple[str, ...] = get_args(VerdictClass)
CLASS_NAMES = {"G": "gain", "C": "clean reduction", "B": "no measured change", "R": "regression",
               "F": "failure", "X": "inconclusive"}

# The screen's verdicts on round 1 (`campaign.judging.screening.verdict` says when each is given)
IR_CHANGED, NO_IR_DIFF, NO_TRITON, NO_ROWS, TIMEOUT = "IR_CHANGED", "NO_IR_DIFF", "NO_TRITON", "NO_ROWS", "TIMEOUT"
NO_COMPARABLE_IR = "NO_COMPARABLE_IR"
MISSING = "MISSING"          # the classifier's screen column: round 1 lacks the baseline or the candidate
RANGED = (IR_CHANGED, NO_IR_DIFF)     # the verdicts whose timing range means something

# What a workload's timing is (`campaign.contract.records.Timing.label`): a result where the IR changed;
# with the IR unchanged, the noise floor unless every round moved (`campaign.judging.classify.timing_label`)
RESULT, NOISE_FLOOR, TIMING_MOVED = "result", "noise floor (IR unchanged)", "IR unchanged; timing moved"
