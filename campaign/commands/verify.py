"""`campaign verify ROOT`: re-hash a sealed root against its receipt and name every difference.

Exit 0 when every file verifies; 5 when any file changed, went missing or
appeared (each named on stderr); 1 when ROOT has no receipt (not sealed).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign import receipt
from campaign.errors import EXIT_OK, EXIT_VERIFY, Refused


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, help="a sealed run root")


def main(args: argparse.Namespace) -> int:
    root = args.root
    if not root.is_dir():
        raise Refused("VERIFY_REFUSED", "receipt", f"{root}: no such directory")
    differences = receipt.verify_root(root)
    recorded = len(receipt.load_receipt(root)["files"])
    for path in receipt.writable_entries(root):
        print(f"warning: {path} is writable again (a sealed root is read-only)", file=sys.stderr)
    if differences:
        for difference in differences:
            print(f"VERIFY_FAILED {difference.line()}", file=sys.stderr)
        print(f"{root}: {len(differences)} difference(s) against receipt.json ({recorded} files recorded)",
              file=sys.stderr)
        return EXIT_VERIFY
    print(f"{root}: {recorded} files verify against receipt.json")
    return EXIT_OK
