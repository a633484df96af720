"""The report flow: a root verified where it is sealed, its caliber held before any latency is
read, its verdicts derived now and set against the sealed ones (`campaign report`, whose command
reads the arguments, checks the signature and writes what this returns).

On a sealed root the root is verified first (`campaign.sealing.verification.require_verified`, the gate
verify's own refusals go through: exit 5, naming what failed, nothing rendered; an older receipt only with
``--allow-schema N``), and the verdicts shown are the sealed ones from receipt.json, re-derived beside
them: a workload whose class or reason moved since the seal is named in a labelled section, and the
receipt stays the record. An unsealed complete root is derived live and labelled "not sealed".
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Optional

from campaign.contract.errors import REPORT_REFUSED
from campaign.contract.records import Verdicts
from campaign.contract.runroot import RunRoot
from campaign.judging import caliber
from campaign.judging.classify import classify
from campaign.judging.evidence import RootEvidence, caliber_of, load_root
from campaign.reporting import cardsection, report, speedup
from campaign.sealing import receipt
from campaign.sealing.verification import Verification

PREFIX = REPORT_REFUSED
NOT_SEALED = ("> **Not sealed.** These verdicts are derived now from the root's files; no receipt records them, "
              "so nothing here has been verified.\n\n")


def verified(root: RunRoot, allow_schema: Collection[int]) -> Optional[Verification]:
    """The sealed root's verification (refused, exit 5, when it does not verify); None unsealed."""
    return receipt.require_verified(root, PREFIX, allow_schema) if root.sealed else None


@dataclass(frozen=True)
class Derived:
    """What the report shows: the verdicts, the banner above them, the sections beside them."""
    verdicts: Verdicts
    banner: str
    beside: tuple[str, ...]
    logs: dict[str, dict[str, report.LogLine]]
    ir_pass: dict[str, str]
    evidence: RootEvidence


def derive(run_root: RunRoot | Path, sealed: Optional[Verification], allow_caliber_mismatch: bool) -> Derived:
    root = RunRoot.of(run_root)     # read once: the caliber, the verdicts and the sections share its records
    check = check_caliber(root, allow_caliber_mismatch)
    if allow_caliber_mismatch:
        print("warning: --allow-caliber-mismatch: the caliber guard is released; latencies measured under "
              "different calibers mean different things (any re-derived workload they touch is X)", file=sys.stderr)
    # re-derived from the same evidence the seal judged, a harness changed during the run included
    drift = tuple(sealed.receipt.harness_changed_since_prepare) if sealed and sealed.receipt else ()
    # one read of the root serves the verdicts and the speedup section
    ev = load_root(root, allow_caliber_mismatch=allow_caliber_mismatch, harness_drift=drift)
    verdicts, banner = _shown(root, sealed, Verdicts.read(classify(ev)), allow_caliber_mismatch)
    for note in sealed.notes if sealed else ():
        print(f"note: {note}", file=sys.stderr)
    beside = tuple(speedup.section(ev)) + tuple(cardsection.section(root))
    return Derived(verdicts, banner, beside, report.log_lines(ev.tasks.values()), check.ir_pass, ev)


def check_caliber(root: RunRoot, allow: bool) -> caliber.CaliberCheck:
    """The guard, before any latency is read: over every cell that ran, a screen's IR pass included
    (its timing fields held among its own cells, `campaign.judging.caliber.TIMING_FIELDS`)."""
    _, matrix = root.frame()
    check, _ = caliber_of(root, matrix.tasks)
    caliber.guard(check, allow, sys.stderr)
    return check


def _shown(root: RunRoot, verified, derived: Verdicts, released: bool) -> tuple[Verdicts, str]:
    """The verdicts shown and the banner above them: the sealed ones where the receipt holds them."""
    if verified is None:
        print(f"note: {root} is not sealed: verdicts derived now, not a sealed record", file=sys.stderr)
        return derived, NOT_SEALED
    if verified.receipt.verdicts is None:
        why = verified.receipt.verdicts_note
        print(f"note: the receipt holds no verdicts ({why}): these are derived now", file=sys.stderr)
        return derived, f"> **Derived now, not sealed.** The seal recorded no verdicts: {why}.\n\n"
    verdicts = verified.receipt.verdicts
    changes = class_changes(verdicts, derived)
    if changes:
        print("warning: classes moved since the seal (re-derived now); the sealed verdicts are shown and are "
              "the record: " + "; ".join(changes), file=sys.stderr)
    elif verdicts.dump() != derived.dump():
        print("note: the classifier's output changed since the seal; every class and reason is the sealed one",
              file=sys.stderr)
    return verdicts, _changes_note(changes, released)


def class_changes(sealed: Verdicts, derived: Verdicts) -> list[str]:
    """'workload: A -> B (reason)' for every workload whose class or reason is not the sealed one."""
    out = []
    old, new = sealed.workloads, derived.workloads
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if (a and (a.klass, a.reason)) != (b and (b.klass, b.reason)):
            out.append(f"{name}: {a.klass if a else '-'} -> {b.klass if b else '-'} ({b.reason if b else 'absent now'})")
    return out


def _changes_note(changes: list[str], released: bool) -> str:
    if not changes:
        return ""
    how = " with the caliber guard released" if released else ""
    lines = [f"> **Classes moved since the seal.** Re-derived now under today's classifier{how}: not the "
             "record. Every class below is the sealed one from receipt.json. Sealed -> re-derived:", ">"]
    lines += [f"> - {change}" for change in changes]
    return "\n".join(lines) + "\n\n"
