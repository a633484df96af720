"""The IR diff of every workload whose IR changed, read from a root: the pair of cells the one IR
rule compared (`campaign.judging.workload.WorkloadFacts.ir_decision`: baseline and candidate, or
the control standing in for a recording baseline, from the IR pass where round 1 was not run),
their variants paired and diffed (`campaign.judging.irdiff`) and the autotune configs each side ran.

Files are read through `campaign.judging.evidence` only; a workload whose IR did not change (or
is not comparable) has no diff, so a 21-workload screen shows only what moved.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from campaign.contract.cellfiles import AutotuneFile
from campaign.contract.runroot import RunRoot
from campaign.judging import choices, evidence
from campaign.judging.irdiff import Pair, pair_variants
from campaign.judging.workload import WorkloadFacts


@dataclass(frozen=True)
class WorkloadDiff:
    workload: str
    stage: str                                  # the manifest's IR stage: what the rule judged and paired at
    names: tuple[str, str]                      # the cells compared
    tasks: tuple[str, str]                      # the tasks their IR came from
    pairs: tuple[Pair, ...]
    configs: tuple[tuple[str, ...], tuple[str, ...]]   # per side: the autotune configs it ran, one line each

    @property
    def changed(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.paired and not p.equal)

    @property
    def equal(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.equal)

    @property
    def unpaired(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if not p.paired)

    def stages(self) -> tuple[str, ...]:
        """Every stage some changed pair captured on both sides, in the compiler's order."""
        return tuple(dict.fromkeys(s for p in self.changed for s in p.stages()))


def config_line(entry) -> str:
    return f"{entry.kernel} {entry.key}: {choices.config_text(entry.config)}".rstrip()


def config_lines(files: dict[str, Optional[AutotuneFile]]) -> tuple[str, ...]:
    """One line per config a side ran, by file: recorded or replayed entries, then the fallbacks it tuned."""
    out = []
    for name, record in files.items():
        if record is None:
            out.append(f"{name}: unreadable")
            continue
        out.append(f"{name}: {record.mode}, policy {record.policy}, {len(record.entries)} entr"
                   f"{'y' if len(record.entries) == 1 else 'ies'}, {record.tuning_runs} tuning run(s)")
        out += [f"  {line}" for line in dict.fromkeys(config_line(e) for e in record.entries)]
        out += [f"  fallback (tuned here): {line}" for line in dict.fromkeys(config_line(e) for e in record.fallbacks)]
    return tuple(out) or ("no autotune record",)


def workload_diff(root: RunRoot, ev: evidence.RootEvidence, name: str) -> Optional[WorkloadDiff]:
    """The workload's diff where the one IR rule says its IR changed; None otherwise."""
    facts = WorkloadFacts(name, [t for t in ev.tasks.values() if t.task.workload == name], ev)
    decision = facts.ir_decision()
    if decision.changed is not True:
        return None
    sides = [facts.ir_task[cell] for cell in decision.pair]
    left, right = (evidence.cell_variant_texts(root, t.task, ev.manifest) for t in sides)
    stage = ev.manifest.switch.ir_stage
    return WorkloadDiff(name, stage, decision.pair, tuple(t.task.id for t in sides),
                        pair_variants(left, right, stage, decision.pair),
                        tuple(config_lines(evidence.cell_autotune_files(root, t.task)) for t in sides))


def gather(root: RunRoot | Path, ev: evidence.RootEvidence) -> dict[str, WorkloadDiff]:
    """Every changed workload's diff, in the manifest's order."""
    root = RunRoot.of(root)
    names = dict.fromkeys(t.workload for t in ev.matrix.tasks)
    diffs = {name: workload_diff(root, ev, name) for name in names}
    return {name: d for name, d in diffs.items() if d is not None}
