"""`campaign report ROOT [--format md|json] [--plot FILE] [--allow-caliber-mismatch]`.

Works on a sealed root and on an unsealed complete one. The caliber of every
cell that ran is compared before any latency is read (exit 4 on a mismatch
unless released; the findings are printed either way). On a sealed root the
verdicts are re-derived and checked against the receipt's: a difference is
named (the harness changed since the seal), the receipt stays the record.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign import caliber, report
from campaign.artifacts import RECEIPT_FILE, RESULT_FILE, cell_dir_name
from campaign.canonical import read_json
from campaign.classify import classify_root
from campaign.evidence import load_frame


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, help="run root (sealed, or unsealed and complete)")
    parser.add_argument("--format", choices=("md", "json"), default="md", help="markdown for a PR (default) or JSON")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="also write a forest plot (needs the 'plot' extra)")
    parser.add_argument("--allow-caliber-mismatch", action="store_true",
                        help="report despite a caliber mismatch (still printed; affected workloads are X)")


def check_caliber(root: Path, allow: bool) -> caliber.CaliberCheck:
    """The guard, before any latency is read."""
    _, matrix = load_frame(root)
    ran = [t for t in matrix.tasks if (root / cell_dir_name(t.id) / RESULT_FILE).is_file()]
    check = caliber.compare(matrix.tasks, caliber.load_identities(root, ran))
    caliber.guard(check, allow, sys.stderr)
    return check


def main(args: argparse.Namespace) -> int:
    root = Path(args.root)
    check_caliber(root, args.allow_caliber_mismatch)
    verdicts = classify_root(root, allow_caliber_mismatch=args.allow_caliber_mismatch)
    receipt_path = root / RECEIPT_FILE
    changes: list[str] = []
    if receipt_path.is_file() and not args.allow_caliber_mismatch:
        sealed = read_json(receipt_path).get("verdicts")
        changes = class_changes(sealed, verdicts) if sealed is not None else []
        if changes:
            print("warning: verdicts re-derived now differ from the receipt's (the classifier changed since the "
                  "seal); the receipt is the record: " + "; ".join(changes), file=sys.stderr)
        elif sealed is not None and sealed != verdicts:
            print("note: the classifier's output changed since the seal; every class and reason is the sealed one",
                  file=sys.stderr)
    if args.plot is not None:
        report.forest_plot(verdicts, args.plot)
    if args.format == "json":
        sys.stdout.write(report.json_text(verdicts))
    else:
        sys.stdout.write(_changes_note(changes) + report.markdown(verdicts))
    return 0


def class_changes(sealed: dict, derived: dict) -> list[str]:
    """'workload: A -> B (reason)' for every workload whose class or reason is not the sealed one."""
    out = []
    old, new = sealed.get("workloads", {}), derived.get("workloads", {})
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name, {}), new.get(name, {})
        if (a.get("class"), a.get("reason")) != (b.get("class"), b.get("reason")):
            out.append(f"{name}: {a.get('class', '-')} -> {b.get('class', '-')} ({b.get('reason', 'absent now')})")
    return out


def _changes_note(changes: list[str]) -> str:
    if not changes:
        return ""
    lines = ["> **Re-derived, not sealed.** The classifier changed after this root was sealed; the receipt's",
             "> verdicts are the record. Classes that differ now (sealed -> re-derived):", ">"]
    lines += [f"> - {change}" for change in changes]
    return "\n".join(lines) + "\n\n"
