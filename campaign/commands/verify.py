"""`campaign verify ROOT`: re-hash a sealed root against its receipt and name every difference.

Exit 0 when everything verifies; 5 when any file changed, went missing or
appeared, a mode changed, a folder was added or removed, a symbolic link, FIFO
or device is found (never followed or opened), or receipt.json itself is not a
valid receipt or was edited (each named on stderr); 2 when ROOT has no receipt
(not sealed: `campaign.sealing.verification.require_sealed`, as every command that needs a seal). A receipt sealed before modes, folders and its own digest were
recorded still verifies its file digests; a note names the checks it cannot support.
``--format json`` prints `campaign.contract.outputs.VerifyOutput` (schemas/verify.schema.json).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK, EXIT_VERIFY
from campaign.contract.outputs import OUTPUT_VERSION, VerifyDifference, VerifyOutput
from campaign.sealing import verification as verify

EXAMPLE = "example:\n  campaign verify runs/my-campaign-20261201T120000Z --format json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, help="a sealed run root")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text lines (default) or JSON (schemas/verify.schema.json); the exit is the same")


def _json(root: Path, result: verify.Verification) -> int:
    out = VerifyOutput(
        schema_version=OUTPUT_VERSION, root=str(root), ok=not result.differences,
        receipt_schema_version=result.receipt.schema_version if result.receipt is not None else None,
        files_recorded=len(result.receipt.files) if result.receipt is not None else 0,
        differences=tuple(VerifyDifference(kind=d.kind, path=d.path, detail=d.detail) for d in result.differences),
        notes=result.notes,
        writable=tuple(verify.writable_entries(root, result)) if result.receipt is not None else ())
    sys.stdout.write(canonical.dumps(out.model_dump(mode="json")))
    return EXIT_VERIFY if result.differences else EXIT_OK


def main(args: argparse.Namespace) -> int:
    root = args.root
    verify.require_sealed(root, "VERIFY_REFUSED")
    result = verify.check(root)
    if args.format == "json":
        return _json(root, result)
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
