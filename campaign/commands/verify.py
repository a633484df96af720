"""`campaign verify ROOT`: re-hash a sealed root against its receipt and name every difference.

Exit 0 when everything verifies; 5 when any file changed, went missing or
appeared, a mode changed, a folder was added or removed, a symbolic link, FIFO
or device is found (never followed or opened), or receipt.json itself is not a
valid receipt or was edited (each named on stderr); 2 when ROOT has no receipt
(not sealed: `campaign.sealing.verification.require_sealed`, as every command that needs a seal). Each finished cell's files are also checked against the digests journalled
as it ended (`campaign.contract.journal`), which names evidence edited under a receipt
rewritten to match it. A receipt of an older schema (version 1: no modes, folders or own
digest, so an edit of it cannot be seen) is refused, exit 5, unless ``--allow-schema 1``
asks for it; then its file digests are verified and a note names the checks it cannot
support. ``content_sha256`` is a checksum of the receipt, not a signature, and verify says so.
``--key PUB`` also checks the DSSE envelope `campaign attest --sign` wrote beside the root
(``--envelope FILE`` names another): its signature must verify under the public key and the
statement it signs must be the one the root gives now (`campaign.sealing.signing`); each
mismatch is a ``signature`` difference (exit 5); no envelope there is bad input (exit 2).
``--format json`` prints `campaign.contract.outputs.VerifyOutput` (schemas/verify.schema.json).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaign.commands import add_key_arguments, add_schema_arguments, signature_differences
from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK, EXIT_VERIFY, VERIFY_FAILED, VERIFY_REFUSED
from campaign.contract.outputs import OUTPUT_VERSION, VerifyDifference, VerifyOutput
from campaign.contract.runroot import RunRoot
from campaign.sealing import verification as verify

EXAMPLE = "example:\n  campaign verify runs/my-campaign-20261201T120000Z --format json"

CHECKSUM_NOTE = ("note: content_sha256 is a checksum of receipt.json, not a signature: whoever can rewrite the root "
                 "can recompute it; the digests journalled as each cell ended catch evidence edited under a rewritten "
                 "receipt, and the journal's chain a line deleted, moved or edited, not one rewritten from it to the end "
                 "(a signature made at the seal, `campaign run --sign`, does)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, help="a sealed run root")
    add_schema_arguments(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text lines (default) or JSON (schemas/verify.schema.json)")
    add_key_arguments(parser)


def _json(root: RunRoot, result: verify.Verification, refused: str | None) -> int:
    differences = tuple(VerifyDifference(kind=d.kind, path=d.path, detail=d.detail) for d in result.differences)
    if refused is not None:   # an older receipt not asked for: refused as a difference of the receipt itself
        differences = (VerifyDifference(kind="receipt", path="receipt.json", detail=refused),)
    out = VerifyOutput(
        schema_version=OUTPUT_VERSION, root=str(root), ok=not differences,
        receipt_schema_version=result.receipt.schema_version if result.receipt is not None else None,
        files_recorded=len(result.receipt.files) if result.receipt is not None else 0,
        differences=differences, notes=result.notes,
        writable=tuple(verify.writable_entries(root, result)) if result.receipt is not None else ())
    sys.stdout.write(canonical.dumps(out.model_dump(mode="json")))
    return EXIT_VERIFY if differences else EXIT_OK


def main(args: argparse.Namespace) -> int:
    root = RunRoot(args.root)
    verify.require_sealed(root, VERIFY_REFUSED)
    signed = signature_differences(args, root, VERIFY_REFUSED)
    result = verify.check(root)
    if signed is not None:
        result = verify.Verification(result.receipt, result.differences + signed(result.receipt))
    refused = verify.older_schema(result.receipt, args.allow_schema) if result.receipt is not None else None
    if args.format == "json":
        return _json(root, result, refused)
    if refused is not None:
        print(f"{VERIFY_FAILED} {refused}", file=sys.stderr)
        return EXIT_VERIFY
    for note in result.notes:
        print(f"note: {note}")
    if result.receipt is not None:
        for path in verify.writable_entries(root, result):
            print(f"warning: {path} is writable again (a sealed root is read-only)", file=sys.stderr)
    recorded = len(result.receipt.files) if result.receipt is not None else 0
    if result.differences:
        for difference in result.differences:
            print(f"{VERIFY_FAILED} {difference.line()}", file=sys.stderr)
        print(f"{root}: {len(result.differences)} difference(s) against receipt.json ({recorded} files recorded)",
              file=sys.stderr)
        return EXIT_VERIFY
    print(f"{root}: {recorded} files verify against receipt.json")
    if signed is not None:
        print(f"{root}: the signed envelope binds receipt.json and its files as they are (key {args.key})")
    print(CHECKSUM_NOTE)
    return EXIT_OK
