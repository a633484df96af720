"""`campaign verify ROOT`: re-hash a sealed root against its receipt and name every difference.

Exit 0 when everything verifies; 5 when any file changed, went missing or
appeared, a mode changed, a folder was added or removed, a symbolic link, FIFO
or device is found (never followed or opened), or receipt.json itself is not a
valid receipt or was edited (each named on stderr); 2 when ROOT has no receipt
(not sealed: `campaign.sealing.verification.require_sealed`, as every command that needs a seal). A receipt sealed before modes, folders and its own digest were
recorded still verifies its file digests; a note names the checks it cannot support.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.contract.errors import EXIT_OK, EXIT_VERIFY
from campaign.sealing import verification as verify


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, help="a sealed run root")


def main(args: argparse.Namespace) -> int:
    root = args.root
    verify.require_sealed(root, "VERIFY_REFUSED")
    result = verify.check(root)
    for note in result.notes:
        print(f"note: {note}")
    if result.receipt is not None:
        for path in verify.writable_entries(root, result):
            print(f"warning: {path} is writable again (a sealed root is read-only)", file=sys.stderr)
    recorded = len(result.receipt.files) if result.receipt is not None else 0
    if result.differences:
        for difference in result.differences:
            print(f"VERIFY_FAILED {difference.line()}", file=sys.stderr)
        print(f"{root}: {len(result.differences)} difference(s) against receipt.json ({recorded} files recorded)",
              file=sys.stderr)
        return EXIT_VERIFY
    print(f"{root}: {recorded} files verify against receipt.json")
    return EXIT_OK
