"""The shards of one set (`campaign prepare --shards`), read as one answer by `campaign report`.

Every sealed shard is verified first (`campaign.sealing.verification.require_verified`: exit 5, as for one
root), then the roots given are held to one set, every problem named in one refusal: each root a shard
(prepare.json's ``shard``), all of one set id, no shard given twice, none missing, every one sealed, and
each shard's workloads those its record names, none in two shards (a cell run twice). `merged` makes one
`Verdicts` of the shards' own: every workload's verdict as its shard sealed it, the class counts over
the whole set, the caliber table over every shard (a field not allowed to differ between the cards
of one run, `campaign.judging.caliber.WORKLOAD_ONLY` aside, that differs between shards is a finding).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Optional, Sequence

from campaign.contract.errors import EXIT_CALIBER, EXIT_REFUSED, REPORT_REFUSED, CampaignError
from campaign.contract.records import CaliberTable, Verdicts
from campaign.contract.rootrecords import Shard
from campaign.contract.runroot import RunRoot
from campaign.contract.verdictnames import CLASSES
from campaign.judging.caliber import MISSING, WORKLOAD_ONLY
from campaign.sealing import receipt
from campaign.sealing.verification import Verification

PREFIX = REPORT_REFUSED
ACROSS = "!!! [caliber] between shards:"
ONE_VALUE = ("campaign", "backend", "switch", "cells", "production_default_policy", "rule")


@dataclass(frozen=True)
class Member:
    root: RunRoot                               # read once: the gate, the set's checks and the report share it
    shard: Shard
    verified: Optional[Verification] = None     # the verify gate's answer, once `gather` took it

    @property
    def label(self) -> str:
        return f"shard {self.shard.index} of {self.shard.of}"


def set_of(root: Path) -> Optional[str]:
    """The set id of a prepared root made by `campaign prepare --shards` (one of a set, even a set of one);
    None for any other root. A prepare.json that cannot be read is left to the one root's report or
    comparison, which names it (its verify gate first)."""
    found = RunRoot.of(root)
    try:
        shard = found.prepare.shard if found.prepared else None
    except CampaignError:
        return None
    return shard.set_id if shard is not None else None


def is_shard(root: Path) -> bool:
    return set_of(root) is not None


def gather(roots: Sequence[Path], allow_schema: Collection[int] = (), prefix: str = PREFIX,
           sealed_only: bool = True) -> list[Member]:
    """The shards given, in shard order, each sealed one verified; refused unless they are one whole set
    (``prefix``: the refusing command's, `campaign report`'s, `campaign compare`'s or `campaign screen`'s),
    every one sealed unless ``sealed_only`` is off (a screen's set resumed, its unsealed shards to run)."""
    # the verify gate first, once a shard: a hand-edited prepare.json is a digest difference
    members = [dataclasses.replace(m, verified=receipt.require_verified(m.root, prefix, allow_schema))
               if m.root.sealed else m for m in (_member(Path(root), prefix) for root in roots)]
    problems = _set_problems(members, sealed_only) or _shard_problems(members)
    if problems:
        raise CampaignError([f"{prefix} check={check}: {detail}" for check, detail in problems], EXIT_REFUSED)
    return sorted(members, key=lambda m: m.shard.index)


def _member(path: Path, prefix: str) -> Member:
    root = RunRoot(path)
    shard = root.prepare.shard
    if shard is None:
        raise CampaignError(f"{prefix} check=shard: {root} was not prepared as a shard (no shard in its "
                            "prepare.json): report a whole root on its own", EXIT_REFUSED)
    return Member(root, shard)


def _set_problems(members: list[Member], sealed_only: bool = True) -> list[tuple[str, str]]:
    ids = sorted({m.shard.set_id for m in members})
    if len(ids) > 1:
        return [("shard_set", "the roots are shards of " + str(len(ids)) + " sets, not one: " + "; ".join(
            f"set {set_id[:12]}: " + ", ".join(str(m.root) for m in members if m.shard.set_id == set_id)
            for set_id in ids))]
    problems = []
    seen: dict[int, RunRoot] = {}
    for member in members:
        before = seen.setdefault(member.shard.index, member.root)
        if before is not member.root:
            same = before.path.resolve() == member.root.path.resolve()
            problems.append(("shard_twice", f"{member.label} given twice: {before}" + ("" if same else
                             f" and {member.root} (two roots of one shard: it was prepared or run twice)")))
    of = members[0].shard.of
    problems += [("shard_missing", f"shard {index} of {of} not given ({', '.join(members[0].shard.workloads[index - 1])})")
                 for index in range(1, of + 1) if index not in seen]
    problems += [("shard_unsealed", f"{m.label} not sealed: {m.root}; `{_runs(m.root)}` runs and seals it")
                 for m in members if sealed_only and not m.root.sealed]
    return problems


def _runs(root: RunRoot) -> str:
    return f"campaign screen --resume {root}" if root.mode == "screen" else f"campaign run {root}"


def _shard_problems(members: list[Member]) -> list[tuple[str, str]]:
    """Each shard's own workloads against its record: what it was prepared with is what the set says it holds."""
    problems = []
    held: dict[str, Member] = {}
    for member in members:
        names = sorted({task.workload for task in member.root.matrix.tasks})
        listed = sorted(member.shard.workloads[member.shard.index - 1])
        if names != listed:
            problems.append(("shard_workloads", f"{member.label} ({member.root}) holds {', '.join(names)}, "
                             f"its record names {', '.join(listed)}"))
        for name in names:
            other = held.setdefault(name, member)
            if other is not member:
                problems.append(("shard_overlap", f"{name} is in {other.label} ({other.root}) and {member.label} "
                                 f"({member.root}): its cells ran twice"))
    return problems


def merged(members: Sequence[Member], verdicts: Sequence[Verdicts],
           allow_caliber_mismatch: bool, prefix: str = PREFIX) -> tuple[Verdicts, dict[str, str]]:
    """One Verdicts over the set, and workload -> the shard whose verdict it is ("k/N"); a caliber field
    that differs between shards refuses (exit 4) unless released."""
    first = verdicts[0]
    for member, own in zip(members[1:], verdicts[1:]):
        differ = [key for key in ONE_VALUE if getattr(own, key) != getattr(first, key)]
        if differ:
            raise CampaignError(f"{prefix} check=shard_set: {member.label} ({member.root}) differs from shard "
                                f"{members[0].shard.index} in {', '.join(differ)}: not one campaign", EXIT_REFUSED)
    workloads, origin = {}, {}
    for member, own in zip(members, verdicts):
        for name, verdict in own.workloads.items():
            workloads[name] = verdict
            origin[name] = f"{member.shard.index}/{member.shard.of}"
    counts = {klass: sum(own.counts[klass] for own in verdicts) for klass in CLASSES}
    drift = tuple(sorted({line for own in verdicts for line in own.harness_drift}))
    table = _caliber(members, verdicts)
    across = [line for line in table.findings if line.startswith(ACROSS)]
    if across and not allow_caliber_mismatch:
        raise CampaignError(across + [f"refused: {len(across)} caliber finding(s) between shards; "
                                      "--allow-caliber-mismatch releases (the findings are still printed)"], EXIT_CALIBER)
    one = first.model_copy(update={"caliber": table.model_copy(update={"released": table.released or bool(across)}),
                                   "counts": counts,
                                   "workloads": workloads, "harness_drift": drift})
    return Verdicts.model_validate(one.dump()), origin


def _caliber(members: Sequence[Member], verdicts: Sequence[Verdicts]) -> CaliberTable:
    fields: dict[str, list[str]] = {}
    for own in verdicts:
        for name, value in own.caliber.fields.items():
            shown = fields.setdefault(name, [])
            shown += [part for part in value.split(" | ") if part not in shown]
    across = [f"{ACROSS} {name} differs between shards: " + "; ".join(
        f"{m.label}: {own.caliber.fields.get(name, MISSING)}" for m, own in zip(members, verdicts))
        for name in fields if name not in WORKLOAD_ONLY and len({own.caliber.fields.get(name) for own in verdicts}) > 1]
    own_lines = [f"{m.label}: {line}" for m, own in zip(members, verdicts) for line in own.caliber.findings]
    return CaliberTable(fields={name: " | ".join(values) for name, values in fields.items()},
                        findings=tuple(own_lines + across),
                        warnings=tuple(f"{m.label}: {line}" for m, own in zip(members, verdicts)
                                       for line in own.caliber.warnings),
                        released=any(own.caliber.released for own in verdicts))
