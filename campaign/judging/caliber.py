"""The caliber guard: every setting that changes what a number means, compared
before a single latency is read.

This module compares ``CALIBER_FIELDS`` (`campaign.contract.rootrecords`), the one definition of the caliber; the
run-identity plugin writes exactly these keys, the screen and the report read
them back through here. ``run_identity.json`` (one per cell) is a flat object::

    {"schema_version": 1, "task_id": "mm/r1/baseline",
     "backend": "cuda", "device_name": "NVIDIA H200", "device_uuid": "GPU-…",
     "driver": "570.124.06", "runtime": "12.8", "torch": "2.11.0+cu130",
     "triton": "3.6.0", "flag_gems": "5.0.2",
     "timer": {"kind": "graph", "warmup_ms": 25.0, "rep_ms": 100.0,
               "return_mode": "median", "direct_repeat": null, "l2_flush": false,
               "max_noise_pct": 0.5, "min_samples": 10, "timeout_s": 15.0},
     "bench_level": "core", "shape_mode": "project", "tuner_cache": "isolated",
     "direct_repeat": 1, "autotune_policy": "measured", "autotune_from": null,
     "autotune_mode": "record", "autotune_source": null, "tuning": "pinned"}

``runtime`` (the device runtime's version) is ``cuda`` in roots sealed before a second vendor's
runtime was recorded (`campaign.contract.rootrecords.SEALED_AS`); it is read under its new name, so
an old root and a new one compare field for field.

``autotune_from`` is the receipt digest of the sealed root whose recorded configs every
cell replays (`campaign.planning.pinning`), null where the root recorded its own: configs
pinned from elsewhere are a different caliber from configs tuned here. Roots sealed before
it existed have no such key; their tables leave the row out rather than show it missing.

The noise target (``timer.max_noise_pct``, ``min_samples``, ``timeout_s``; null where none) is
caliber: a row sampled until its spread is 0.5 % is a different number from ten fixed replays.
Roots sealed before it existed have none of the three keys; their tables leave the rows out.

``tuning`` is ``per_side`` where every timed cell tuned for itself (`campaign.contract.fields.TUNING_MODES`)
and ``pinned`` where round 1's baseline recorded and the other cells replayed; a root sealed before the
mode existed was pinned and is read so (`campaign.contract.rootrecords.ABSENT_MEANS`). A cell of one
beside a cell of the other is a finding (exit 4): their numbers answer different questions.

``autotune_mode``/``autotune_source`` are not caliber fields: they legitimately
differ between cells and are judged on their own. Record pinning replays is the
normal shape; two recorders in one workload is the record-vs-record trap
(router_gemm -8.2%) and is refused by name; a shared tuner cache warns, because
the pinned configs then depend on what else ran on the machine (mm "945
variants -> 33"): relative conclusions hold, absolute latencies do not.

A screen's IR pass (round 0, ``Task.timed`` False) times nothing and tunes nothing, so its cells
hold timer "none" and policy first-config by construction (`campaign.plugins.run_identity`):
``TIMING_FIELDS`` are compared among timed cells and among IR-pass cells, never between the two;
every other field (device, versions, bench level, tuner cache ...) across all of them, since
the IR pass's decision stands for round 1 only on the same device and versions.

`compare` is pure; `load_identities` (called by `campaign.judging.evidence.caliber_of`, the one
road a root's identities are read by) and `guard` are the IO edges.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Optional, TextIO

from campaign.contract import canonical
from campaign.contract.artifacts import IDENTITY_FILE
from campaign.contract.errors import EXIT_CALIBER, CampaignError
from campaign.contract.plans import Task
from campaign.contract.rootrecords import ABSENT_MEANS, CALIBER_FIELDS, SEALED_AS
from campaign.contract.runroot import RunRoot

# Fields added after roots were sealed without them: absent from every cell, the table omits them.
TIMER_FIELDS = ("kind", "warmup_ms", "rep_ms", "return_mode", "direct_repeat", "l2_flush",
                "max_noise_pct", "min_samples", "timeout_s")
RECORDED_SINCE = ("autotune_from", "timer.max_noise_pct", "timer.min_samples", "timer.timeout_s")
# Compared only within a workload: flag_gems is null by design where the workload's provider is not
# FlagGems; device_uuid differs by design between the cards of one run (a workload's cells all run on
# one card, `campaign.running.cards`), while device_name still holds the whole campaign to one model.
WORKLOAD_ONLY = ("flag_gems", "device_uuid")
# What an untimed cell differs in by construction: no timer, no repeat count, no tuning.
TIMING_FIELDS = tuple(f"timer.{sub}" for sub in TIMER_FIELDS) + ("direct_repeat", "autotune_policy")
MISSING = "<missing>"
PREFIX = "!!! [caliber]"
WARN_PREFIX = "warning [caliber]"


def flatten(identity: Mapping) -> dict[str, object]:
    """Caliber field -> value, the timer spelled out as ``timer.<name>``; absent keys are MISSING."""
    out: dict[str, object] = {}
    for name in CALIBER_FIELDS:
        if name == "timer":
            timer = identity.get("timer")
            timer = timer if isinstance(timer, Mapping) else {}
            for sub in TIMER_FIELDS:
                out[f"timer.{sub}"] = timer.get(sub, MISSING)
        else:
            out[name] = identity.get(name, identity.get(SEALED_AS.get(name), ABSENT_MEANS.get(name, MISSING)))
    return out


def _show(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True)
class Finding:
    """One refusal: ``!!! [caliber] <field>: <a> vs <b>`` with the cells that show it."""

    field: str
    a: str
    b: str
    tasks: tuple[str, str]
    cells: int = 1
    note: str = ""

    def line(self) -> str:
        where = f"{self.tasks[0]} vs {self.tasks[1]}"
        if self.cells > 1:
            where += f"; {self.cells} cells"
        note = f": {self.note}" if self.note else ""
        return f"{PREFIX} {self.field}: {self.a} vs {self.b} ({where}){note}"


@dataclass(frozen=True)
class CaliberCheck:
    findings: tuple[Finding, ...]             # refusals (exit 4 unless released)
    warnings: tuple[str, ...]                 # printed, never refusing
    table: dict[str, str]                     # field -> value, or "a | b" where cells differ
    workloads: dict[str, tuple[str, ...]]     # workload -> its own refusals, as lines
    ir_pass: dict[str, str] = field(default_factory=dict)   # the IR-pass (untimed) cells' own table; empty: none took part

    @property
    def ok(self) -> bool:
        return not self.findings

    def lines(self) -> list[str]:
        return [finding.line() for finding in self.findings] + list(self.warnings)

    def as_dict(self, released: bool) -> dict:
        return {"fields": dict(self.table), "findings": [f.line() for f in self.findings],
                "warnings": list(self.warnings), "released": bool(released and self.findings)}


def _differences(tasks: list[Task], identities: Mapping[str, Optional[Mapping]],
                 skip: tuple[str, ...] = ()) -> list[Finding]:
    """Each field whose value differs from the first cell's, once per (field, a, b): ``TIMING_FIELDS``
    within the timed cells and within the untimed ones, every other field across all of them. A cell
    without an identity is its workload's finding (`_absent`), never a difference of all of them."""
    found: dict[tuple[str, str, str], Finding] = {}
    _collect(found, [(t.id, identities[t.id]) for t in tasks], skip + TIMING_FIELDS, False)
    for timed in (True, False):
        scope = [(t.id, identities[t.id]) for t in tasks if t.timed is timed and identities[t.id] is not None]
        _collect(found, scope, tuple(name for name in flatten({}) if name not in TIMING_FIELDS) + skip, False)
    return list(found.values())


def _collect(found: dict, pairs: list[tuple[str, Optional[Mapping]]], skip: tuple[str, ...], missing: bool) -> None:
    """Count into ``found`` each field not in ``skip`` that differs from the first present cell's;
    ``missing``: a cell without an identity is a finding of its own (counted in one scope only)."""
    present = [(task_id, identity) for task_id, identity in pairs if identity is not None]
    if not present:
        return   # no cell wrote an identity: nothing to compare (`compare` says why)
    reference_id, reference = present[0]
    for task_id, identity in pairs:
        if identity is None:
            if missing:
                _count(found, ("run_identity.json", "present" if present else "missing", "missing"),
                       (reference_id, task_id))
            continue
        ref_flat, flat = flatten(reference), flatten(identity)
        for name, value in flat.items():
            if value != ref_flat[name] and name not in skip:
                _count(found, (name, _show(ref_flat[name]), _show(value)), (reference_id, task_id))


def _absent(members: list[Task], identities: Mapping[str, Optional[Mapping]], reference: Optional[str]) -> list[Finding]:
    """A workload's cells that ran and wrote no run_identity.json (a worker killed before it wrote one),
    against ``reference``, the first cell of the run that wrote one: that workload's latencies are not
    read (it is X); the other workloads' caliber still holds (None: no cell wrote one, `compare` says so)."""
    absent = [t.id for t in members if identities[t.id] is None]
    if not absent or reference is None:
        return []
    return [Finding("run_identity.json", "present", "missing", (reference, absent[0]), len(absent))]


def _count(found: dict, key: tuple[str, str, str], tasks: tuple[str, str]) -> None:
    if key in found:
        old = found[key]
        found[key] = Finding(old.field, old.a, old.b, old.tasks, old.cells + 1, old.note)
    else:
        found[key] = Finding(*key, tasks=tasks)


def _autotune(tasks: list[Task], identities: Mapping[str, Optional[Mapping]]) -> list[Finding]:
    """Record pinning replays is normal; two recorders or a replay of the wrong source is refused. Where
    the matrix planned every cell to record (``tuning: per_side``), the recorders are the plan, not the trap."""
    findings = []
    # a screen's untimed IR pass records each side's first config on purpose: it tunes nothing
    recorders = [t.id for t in tasks if t.timed and (identities.get(t.id) or {}).get("autotune_mode") == "record"]
    unplanned = [t.id for t in tasks if t.id in recorders and t.autotune.mode != "record"]
    if len(recorders) > 1 and unplanned:
        findings.append(Finding("autotune_mode", "record", "record", (recorders[0], recorders[1]), len(recorders) - 1,
                                "both sides tuned on their own, so configs and IR differ "
                                "for reasons unrelated to the switch"))
    for task in tasks:
        identity = identities.get(task.id)
        if identity is None:
            continue
        mode, source = identity.get("autotune_mode", MISSING), identity.get("autotune_source")
        if mode != task.autotune.mode:
            if mode == "record" and len(recorders) > 1:
                continue
            findings.append(Finding("autotune_mode", task.autotune.mode, _show(mode), ("matrix", task.id),
                                    note="the cell did not tune as the matrix planned"))
        elif mode == "replay" and source != task.autotune.source:
            findings.append(Finding("autotune_source", _show(task.autotune.source), _show(source), ("matrix", task.id),
                                    note="replayed a recording other than the workload's own"))
    return findings


def compare(tasks: Iterable[Task], identities: Mapping[str, Optional[Mapping]],
            preflight_failed: frozenset[str] = frozenset()) -> CaliberCheck:
    """Judge the identities of every participating task (those present as keys); ``preflight_failed``:
    the task ids whose cell failed preflight, which writes no identity (named when none was written)."""
    taking_part = sorted((t for t in tasks if t.id in identities), key=lambda t: t.order)
    by_workload: dict[str, list[Task]] = {}
    for task in taking_part:
        by_workload.setdefault(task.workload, []).append(task)
    findings = _differences(taking_part, identities, WORKLOAD_ONLY)
    per_workload: dict[str, tuple[str, ...]] = {}
    reference = next((t.id for t in taking_part if identities[t.id] is not None), None)
    for workload, members in by_workload.items():
        own = _absent(members, identities, reference) + _differences(members, identities) + _autotune(members, identities)
        per_workload[workload] = tuple(f.line() for f in own)
        findings += [f for f in own if f.field.startswith("autotune") or f.field in WORKLOAD_ONLY]
    warnings = []
    shared = [t.id for t in taking_part if (identities[t.id] or {}).get("tuner_cache") == "shared"]
    if shared:
        warnings.append(f"{WARN_PREFIX} tuner_cache: shared in {len(shared)} cells ({shared[0]} …): configs depend on "
                        "what else ran on the machine; relative conclusions hold, absolute latencies are not quotable")
    if taking_part and not any(identities[t.id] for t in taking_part):
        why = ("every cell failed preflight" if all(t.id in preflight_failed for t in taking_part)
               else "no cell that ran wrote run_identity.json")
        warnings.append(f"{WARN_PREFIX} no caliber to compare: {why} ({len(taking_part)} cells; each cell's run.log "
                        "says why)")
    untimed = [t for t in taking_part if not t.timed]
    return CaliberCheck(tuple(findings), tuple(warnings), _table(taking_part, identities), per_workload,
                        _table(untimed, identities))


def _table(tasks: list[Task], identities: Mapping[str, Optional[Mapping]]) -> dict[str, str]:
    values: dict[str, list[str]] = {}
    for task in tasks:
        identity = identities[task.id]
        flat = flatten(identity) if identity is not None else {}
        for name in flatten({}):
            shown = _show(flat.get(name, MISSING))
            values.setdefault(name, [])
            if shown not in values[name]:
                values[name].append(shown)
    return {name: " | ".join(found) for name, found in values.items()
            if not (name in RECORDED_SINCE and found == [MISSING])}


def load_identities(root: RunRoot | Path, tasks: Iterable[Task]) -> dict[str, Optional[dict]]:
    """Task id -> its run_identity.json (None where missing or unreadable)."""
    root = RunRoot.of(root)
    out: dict[str, Optional[dict]] = {}
    for task in tasks:
        path = root.cell(task.id) / IDENTITY_FILE
        try:
            data = canonical.read_json(path)
        except (OSError, ValueError):
            data = None
        out[task.id] = data if isinstance(data, dict) else None
    return out


def guard(check: CaliberCheck, allow_mismatch: bool, stream: TextIO) -> None:
    """Print every finding and warning; refuse (exit 4) on a finding unless released."""
    for line in check.lines():
        print(line, file=stream)
    if check.findings and not allow_mismatch:
        raise CampaignError([f"refused: {len(check.findings)} caliber finding(s) above; "
                             "--allow-caliber-mismatch releases (the findings are still printed)"], EXIT_CALIBER)
