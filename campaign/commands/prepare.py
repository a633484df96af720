"""`campaign prepare MANIFEST`: validate, resolve every target, freeze a run root.

The root gets the manifest byte for byte, matrix.json and prepare.json (digests
of the manifest, the inventory and every harness file, taken before anything
runs): `campaign.flows.freeze`. A refusal prints ``PREPARE_REFUSED check=<name>: ...``,
exits 2 and leaves nothing behind. The line before last is the exact next command
(`campaign run ROOT`); the last stdout line is the run root's path.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from campaign.contract.errors import EXIT_OK
from campaign.flows import freeze

EXAMPLE = "examples:\n  campaign prepare manifests/demo.yaml\n  campaign prepare my.yaml --runs-dir /data/runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", type=Path, help="the campaign manifest (YAML)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), metavar="DIR",
                        help="where run roots are made (default: runs/)")


def main(args: argparse.Namespace) -> int:
    checked = freeze.check(args.manifest)
    root = freeze.freeze(checked, args.runs_dir)
    tasks = checked.matrix.tasks
    for note in checked.notes:
        print(f"note: {note}")
    print(f"prepared {checked.manifest.campaign}: {len(checked.resolved)} workloads, "
          f"{len(tasks)} tasks ({checked.matrix.rounds} rounds x {len(checked.matrix.cells)} cells)")
    print(f"next: campaign run {root}")
    print(root)
    return EXIT_OK
