"""`campaign prepare MANIFEST`: validate, resolve every target, freeze a run root.

The root gets the manifest byte for byte, matrix.json and prepare.json (digests
of the manifest, the inventory and every harness file, taken before anything
runs): `campaign.flows.freeze`. A refusal prints ``PREPARE_REFUSED check=<name>: ...``,
exits 2 and leaves nothing behind. The line before last is the exact next command
(`campaign run ROOT`); the last stdout line is the run root's path. With ``--shards N`` or
``--shard-budget SECONDS`` it makes one root per shard (`campaign.planning.shards`), whole
workloads each, and its last N lines are their paths, shard 1 first.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from campaign.commands import positive
from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK
from campaign.flows import freeze
from campaign.planning import shards

EXAMPLE = ("examples:\n  campaign prepare manifests/demo.yaml\n  campaign prepare my.yaml --runs-dir /data/runs\n"
           "  campaign prepare changed.yaml --shard-budget 1500")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", type=Path, help="the campaign manifest (YAML)")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), metavar="DIR",
                        help="where run roots are made (default: runs/)")
    split = parser.add_mutually_exclusive_group()
    split.add_argument("--shards", type=positive(int), metavar="N",
                       help="N roots, each a disjoint set of whole workloads (LPT by weight_s), each run and "
                            "sealed on its own; `campaign report` reads them all as one answer")
    split.add_argument("--shard-budget", type=positive(float), metavar="SECONDS",
                       help="as --shards, the fewest roots whose predicted device seconds (weight_s x rounds) "
                            "each fit SECONDS: one GPU job's time, less its start-up")


def main(args: argparse.Namespace) -> int:
    checked = freeze.check(args.manifest)
    if args.shards is not None or args.shard_budget is not None:
        return _sharded(checked, args)
    root = freeze.freeze(checked, args.runs_dir)
    tasks = checked.matrix.tasks
    for note in checked.notes:
        print(f"note: {note}")
    print(f"prepared {checked.manifest.campaign}: {len(checked.resolved)} workloads, "
          f"{len(tasks)} tasks ({checked.matrix.rounds} rounds x {len(checked.matrix.cells)} cells)")
    print(f"next: campaign run {root}")
    print(root)
    return EXIT_OK


def _sharded(checked: freeze.Checked, args: argparse.Namespace) -> int:
    split = shards.split(checked.manifest, args.shards, args.shard_budget)
    roots = freeze.freeze_shards(checked, args.runs_dir, split)
    for note in checked.notes:
        print(f"note: {note}")
    if split.equal:
        print(f"note: {', '.join(split.equal)} weighed equal (no weight_s): the split is only as good as its weights")
    set_id = shards.set_id(canonical.sha256_file(checked.manifest_path), split.workloads)
    print(f"prepared {checked.manifest.campaign} as {len(roots)} shards of {len(checked.resolved)} workloads "
          f"(set {set_id[:12]}); each runs and seals on its own")
    # the arithmetic, said: weight_s is the manifest's (a screened round's, or set by hand), and adaptive rounds
    # that decide early run fewer than the most the manifest plans
    rounds = checked.manifest.rounds.planned
    per_round = f"weight_s x {rounds} round{'s' if rounds != 1 else ''}, the most the manifest plans"
    for index, (root, names, seconds) in enumerate(zip(roots, split.workloads, split.predicted_s), start=1):
        weighed = "" if len(split.equal) == len(checked.resolved) else f" (predicted {seconds:g} s: {per_round})"
        print(f"shard {index} of {len(roots)}: {', '.join(names)}{weighed}: {root}")
    print("next: " + "; ".join(f"campaign run {root}" for root in roots))
    print("then: campaign report " + " ".join(str(root) for root in roots))
    for root in roots:
        print(root)
    return EXIT_OK
