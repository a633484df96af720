"""`campaign attest ROOT [--out FILE]`: an in-toto v1 Statement for a sealed root.

Exit 0 with the statement (canonical JSON) on stdout or in FILE; 2 when ROOT is not
a sealed root or FILE is inside it or exists already; 5 when ROOT does not verify
against its receipt (each difference named, as `campaign verify` would).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.contract import canonical
from campaign.contract.errors import EXIT_INPUT, EXIT_OK, Refused
from campaign.sealing import attest

EXAMPLE = "example:\n  campaign attest runs/demo-20261201T120000Z --out demo.intoto.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, help="a sealed run root")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the statement here (outside the root, a new file) instead of stdout")


def main(args: argparse.Namespace) -> int:
    out = args.out
    if out is not None:
        if out.resolve().is_relative_to(args.root.resolve()):
            raise Refused(attest.PREFIX, "out", f"{out} is inside {args.root}: nothing is written into a sealed root",
                          EXIT_INPUT)
        if out.exists() or out.is_symlink():
            raise Refused(attest.PREFIX, "out", f"{out} exists: a statement never overwrites a file", EXIT_INPUT)
    data = attest.statement(args.root)
    if out is None:
        sys.stdout.write(canonical.dumps(data))
    else:
        canonical.write_new(out, canonical.dumps(data))
        print(f"{args.root}: statement of {len(data['subject'])} files written to {out}", file=sys.stderr)
    return EXIT_OK
