"""`campaign validate MANIFEST`: every check prepare runs; writes nothing.

For editors, pre-commit hooks and the CI of manifest repositories.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from campaign.commands.prepare import check


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", type=Path, nargs="+", help="manifest(s) to check")


def main(args: argparse.Namespace) -> int:
    for path in args.manifest:
        checked = check(path)
        print(f"{path}: ok ({len(checked.resolved)} workloads, {len(checked.matrix.tasks)} tasks)")
    return 0
