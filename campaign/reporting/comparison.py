"""Sealed roots side by side: their verdicts as sealed, what differs between them, and how each
workload's geomean moved from root to root (`campaign.contract.comparison.Comparison`).

Pure over the receipts the caller read and verified (`campaign.flows.compare`): nothing is
re-judged. What a root's numbers mean is its caliber (`campaign.judging.caliber`) and the rule
it was judged by; a comparison across another Triton build, day or card is the point, so every
such difference is named per root rather than refused. A geomean is taken only where the report
prints one (`campaign.reporting.workloadtext.ranged_timing`), and its label travels with it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

from campaign.contract.comparison import (
    COMPARISON_VERSION,
    DISJOINT,
    NO_INTERVAL,
    OVERLAP,
    Change,
    Comparison,
    Difference,
    Entry,
    RootColumn,
    ShardRoot,
    WorkloadRow,
)
from campaign.contract.receiptmodel import Receipt, ReceiptV1
from campaign.contract.records import Verdicts, WorkloadVerdict
from campaign.judging import caliber
from campaign.reporting.workloadtext import ranged_timing

DIGEST_SHOWN = 12     # a digest is named by its first characters, as the report names fingerprints


@dataclass(frozen=True)
class SealedRoot:
    """One root as the caller verified it: its receipt holds verdicts."""

    root: str
    mode: str
    receipt_sha256: str
    receipt: Union[Receipt, ReceiptV1]
    manifest: Mapping[str, Any]                  # the root's manifest.yaml as its model dumps it, defaults spelt out
    shards: tuple[ShardRoot, ...] = ()           # a shard set read as one root: each shard's root and receipt

    @property
    def verdicts(self) -> Verdicts:
        assert self.receipt.verdicts is not None, "the caller refuses a receipt without verdicts"
        return self.receipt.verdicts


def caliber_table(sealed: SealedRoot) -> dict[str, str]:
    """The root's caliber as judged at its seal; where no timed cell took part (a screen whose round 1
    was skipped everywhere), the first cell's run identity as the receipt holds it."""
    fields = dict(sealed.verdicts.caliber.fields)
    identity = sealed.receipt.run_identity
    if not fields and identity is not None:
        # spelt as the judged table spells a value (`campaign.judging.caliber.compare`)
        fields = {name: value if isinstance(value, str) else json.dumps(value)
                  for name, value in caliber.flatten(identity.dump()).items()}
    return fields


def _short(digest: Optional[str]) -> Optional[str]:
    return digest[:DIGEST_SHOWN] if digest else digest


# Compared field -> how a root spells it; the caliber's own fields follow these (`caliber_table`).
FIELDS: dict[str, Callable[[SealedRoot], Optional[str]]] = {
    "campaign": lambda s: s.verdicts.campaign,
    "mode": lambda s: s.mode,
    "backend": lambda s: s.verdicts.backend,
    "switch": lambda s: s.verdicts.switch,
    "cells": lambda s: ", ".join(s.verdicts.cells),
    "manifest_sha256": lambda s: _short(s.receipt.manifest_sha256),
    "harness_digest": lambda s: _short(s.receipt.harness_digest),
    "tool_version": lambda s: s.receipt.tool_version,
    "rule.ir_stage": lambda s: s.verdicts.rule.ir_stage,
    "rule.measured_launch_floor": lambda s: str(s.verdicts.rule.measured_launch_floor),
    "rule.strip_annotations": lambda s: ", ".join(s.verdicts.rule.strip_annotations) or "none",
    "rule.interval": lambda s: s.verdicts.rule.interval,
    "rule.significance": lambda s: s.verdicts.rule.significance,
}


def compared_fields(roots: list[SealedRoot]) -> dict[str, tuple[Optional[str], ...]]:
    """Every compared field -> its value in each root (None: the root did not record it)."""
    tables = [caliber_table(s) for s in roots]
    out = {name: tuple(spell(s) for s in roots) for name, spell in FIELDS.items()}
    names = list(dict.fromkeys(name for table in tables for name in table))
    out.update({name: tuple(table.get(name) for table in tables) for name in names})
    return out


def manifest_paths(data: Mapping[str, Any], prefix: str = "manifest") -> dict[str, str]:
    """``manifest.<key>.<key>`` -> its value as JSON; a workload is keyed by its name
    (``manifest.workloads.<name>.<key>``), so reordering the list changes nothing."""
    out: dict[str, str] = {}
    for key, value in data.items():
        path = f"{prefix}.{key}"
        if key == "workloads" and prefix == "manifest":
            for workload in value:
                out.update(manifest_paths(workload, f"{path}.{workload['name']}"))
        elif isinstance(value, Mapping) and value:
            out.update(manifest_paths(value, path))
        else:
            out[path] = value if isinstance(value, str) else json.dumps(value)
    return out


def manifest_differences(roots: list[SealedRoot]) -> dict[str, tuple[Optional[str], ...]]:
    """The manifest keys whose values differ, a workload's only where every root holds it (one
    held by some roots only is listed as such); the campaign's name is compared on its own."""
    tables = [manifest_paths(s.manifest) for s in roots]
    names = [name for name in dict.fromkeys(n for table in tables for n in table)
             if name != "manifest.campaign"
             and not (name.startswith("manifest.workloads.") and not all(name in t for t in tables))]
    values = {name: tuple(table.get(name) for table in tables) for name in names}
    return {name: vals for name, vals in values.items() if len(set(vals)) > 1}


def entry(w: WorkloadVerdict) -> Entry:
    p = ranged_timing(w)
    iv = p.interval if p is not None else None
    return Entry.model_validate({
        "class": w.klass, "screen": w.screen, "label": w.timing.label if w.timing is not None else "",
        "point": p.point if p is not None else None, "low": iv.low if iv else None, "high": iv.high if iv else None,
        "method": iv.method if iv else None, "floor": p.floor if p is not None else None, "reason": w.reason})


def change(before: Optional[Entry], after: Optional[Entry], against: int) -> Optional[Change]:
    """``after``'s geomean against ``before``'s (column ``against``); None where either root lacks the workload."""
    if before is None or after is None:
        return None
    points = None
    if before.point is not None and after.point is not None:
        points = round((after.point - before.point) * 100, 4)
    if None in (before.low, before.high, after.low, after.high):
        intervals = NO_INTERVAL
    else:
        intervals = OVERLAP if after.low <= before.high and before.low <= after.high else DISJOINT
    moved = f"{before.klass} -> {after.klass}" if before.klass != after.klass else None
    return Change(against=against, points=points, intervals=intervals, class_moved=moved)


def _rows(roots: list[SealedRoot]) -> tuple[WorkloadRow, ...]:
    names = list(dict.fromkeys(name for s in roots for name in s.verdicts.workloads))
    out = []
    for name in names:
        entries = tuple(entry(s.verdicts.workloads[name]) if name in s.verdicts.workloads else None for s in roots)
        vs_first = (None,) + tuple(change(entries[0], e, 1) for e in entries[1:])
        vs_previous = (None,) + tuple(change(entries[k - 1], entries[k], k) for k in range(1, len(entries)))
        out.append(WorkloadRow(workload=name, entries=entries, vs_first=vs_first, vs_previous=vs_previous))
    return tuple(out)


def compare(roots: list[SealedRoot]) -> Comparison:
    values = compared_fields(roots)
    differing = {name: vals for name, vals in values.items() if len(set(vals)) > 1}
    differing.update(manifest_differences(roots))     # named where they differ, never listed as the same
    columns = []
    for k, s in enumerate(roots):
        v = s.verdicts
        columns.append(RootColumn(
            index=k + 1, root=s.root, campaign=v.campaign, mode=s.mode, sealed_utc=s.receipt.sealed_utc,
            tool_version=s.receipt.tool_version, receipt_sha256=s.receipt_sha256, shards=s.shards, backend=v.backend,
            switch=v.switch, cells=v.cells, caliber=caliber_table(s), caliber_findings=len(v.caliber.findings),
            differs_from_first=tuple(name for name, vals in differing.items() if vals[k] != vals[0])))
    rows = _rows(roots)
    partial = {r.workload: tuple(k + 1 for k, e in enumerate(r.entries) if e is not None)
               for r in rows if None in r.entries}
    return Comparison(
        schema_version=COMPARISON_VERSION, roots=tuple(columns),
        differences=tuple(Difference(field=name, values=vals) for name, vals in differing.items()),
        same={name: vals[0] for name, vals in values.items() if name not in differing and vals[0] is not None},
        workloads=rows, not_in_every_root=partial)
