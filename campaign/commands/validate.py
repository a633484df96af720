"""`campaign validate MANIFEST... [--format text|json]`: every check prepare runs; writes nothing.

For editors, pre-commit hooks and the CI of manifest repositories. Every manifest is
checked; the exit is the worst one's. ``--format json`` prints
`campaign.contract.outputs.ValidateOutput` (schemas/validate.schema.json), refusals included.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK, CampaignError
from campaign.contract.outputs import OUTPUT_VERSION, ManifestCheck, ValidateOutput
from campaign.flows.freeze import check

EXAMPLE = "example:\n  campaign validate manifests/*.yaml --format json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", type=Path, nargs="+", help="manifest(s) to check")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text lines (default) or JSON (schemas/validate.schema.json)")


def _check(path: Path) -> ManifestCheck:
    try:
        checked = check(path)
    except CampaignError as exc:
        return ManifestCheck(path=str(path), ok=False, exit_code=exc.exit_code, errors=tuple(exc.lines))
    return ManifestCheck(path=str(path), ok=True, exit_code=EXIT_OK, workloads=len(checked.resolved),
                         tasks=len(checked.matrix.tasks), notes=tuple(checked.notes))


def main(args: argparse.Namespace) -> int:
    """Every manifest is checked, so one bad file in a pre-commit run does not hide the next."""
    found = [_check(path) for path in args.manifest]
    if args.format == "json":
        out = ValidateOutput(schema_version=OUTPUT_VERSION, ok=all(c.ok for c in found), manifests=tuple(found))
        sys.stdout.write(canonical.dumps(out.model_dump(mode="json")))
    for c in found if args.format == "text" else ():
        if not c.ok:
            print("\n".join(c.errors), file=sys.stderr)
            continue
        print(f"{c.path}: ok ({c.workloads} workloads, {c.tasks} tasks)")
        for note in c.notes:
            print(f"{c.path}: note: {note}")
    return max((c.exit_code for c in found), default=EXIT_OK)
