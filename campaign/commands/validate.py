"""`campaign validate MANIFEST`: every check prepare runs; writes nothing.

For editors, pre-commit hooks and the CI of manifest repositories.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.contract.errors import EXIT_OK, CampaignError
from campaign.flows.freeze import check


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", type=Path, nargs="+", help="manifest(s) to check")


def main(args: argparse.Namespace) -> int:
    """Every manifest is checked, so one bad file in a pre-commit run does not hide the next."""
    worst = EXIT_OK
    for path in args.manifest:
        try:
            checked = check(path)
        except CampaignError as exc:
            print("\n".join(exc.lines), file=sys.stderr)
            worst = max(worst, exc.exit_code)
            continue
        print(f"{path}: ok ({len(checked.resolved)} workloads, {len(checked.matrix.tasks)} tasks)")
        for note in checked.notes:
            print(f"{path}: note: {note}")
    return worst
