"""`campaign reaccount [ROOT] --floor N [--out DIR]`: re-derive verdicts under a new launch floor.

ROOT defaults to the newest sealed root under ./runs. The derived receipt,
matrix and report go to DIR (default ``<root>.reaccount-floor<N>`` beside the
root), never inside the sealed root. Exit 2: no campaign receipt; 5: the root
does not verify; 1: the output folder is refused (named check).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from campaign.commands import add_schema_arguments
from campaign.contract.errors import EXIT_OK
from campaign.contract.runroot import RunRoot
from campaign.reaccount.derive import newest_sealed, reaccount

EXAMPLE = "example:\n  campaign reaccount runs/demo-20261201T120000Z --floor 3"


def _floor(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("the launch floor is a count: 0 or more")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, nargs="?", help="sealed root (default: newest under runs/)")
    parser.add_argument("--floor", type=_floor, required=True, metavar="N",
                        help="count only variants launched more than N times")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where the derived files go (outside the root)")
    add_schema_arguments(parser)


def main(args: argparse.Namespace) -> int:
    root = args.root if args.root is not None else newest_sealed(Path("runs"))
    out, derived = reaccount(RunRoot(root), args.floor, args.out, args.allow_schema)
    rule = derived["rule"]
    print(f"reaccounted {root} at launch floor {rule['derived']} (sealed at {rule['sealed']}) -> {out}")
    for change in derived["changes"]:
        print(f"  {change['workload']}: {change['before']} -> {change['after']}: {change['why']}")
    if not derived["changes"]:
        print("  no class changed")
    for task_id, files in derived["excluded"].items():
        kernels = sorted({name.split("-", 1)[-1] for name in files})
        print(f"  excluded by the floor: {task_id}: {len(files)} file(s) of {', '.join(kernels)}")
    if derived["excluded"]:
        print(f"  (every excluded file is named in {out}/receipt.json under \"excluded\")")
    return EXIT_OK
