"""`campaign compare ROOT... [--format md|json] [--against previous|first]`: sealed roots side by side.

Per workload, each root's sealed class, geomean and interval; what differs between the roots
(caliber: Triton, torch, device, driver, timer ...; the switch, the rule, the manifest) named
per root, never refused; with two roots or more, a history table of each root's change against
the previous root (or the first). A workload held by some roots only is listed, never dropped.
Exit 2: a ROOT is no sealed root; 5: a ROOT does not verify (an older receipt only with ``--allow-schema N``); 1: its receipt holds no verdicts.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.commands import add_schema_arguments
from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK
from campaign.flows import compare as flow
from campaign.reporting import comparetext

EXAMPLE = "example:\n  campaign compare runs/demo-A runs/demo-B --format json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("roots", type=Path, nargs="+", metavar="ROOT",
                        help="sealed roots (campaign or screen), compared in the order given: the first is #1")
    parser.add_argument("--format", choices=("md", "json"), default="md", help="markdown for a PR (default) or JSON")
    parser.add_argument("--against", choices=(comparetext.PREVIOUS, comparetext.FIRST), default=comparetext.PREVIOUS,
                        help="what the history table's change is taken against (JSON holds both)")
    add_schema_arguments(parser)


def main(args: argparse.Namespace) -> int:
    compared = flow.compare(args.roots, args.allow_schema)
    if args.format == "json":
        sys.stdout.write(canonical.dumps(compared.model_dump(mode="json", by_alias=True)))
    else:
        sys.stdout.write(comparetext.markdown(compared, args.against))
    return EXIT_OK
