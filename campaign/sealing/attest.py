"""A provenance statement for a sealed root: an in-toto v1 Statement, built with in-toto's own library.

The statement is derived only from a root that verifies (`campaign.sealing.verification`):
its subjects are the receipt's files and receipt.json itself, each with its SHA-256, so a
consumer checks any file of the root against the statement without this tool. The predicate
(``PREDICATE_TYPE``) carries what the receipt binds those files to: the manifest
and prepare.json digests, the pinned sources and device, the harness digests and
any drift since prepare, the run identities and the verdict counts, plus the
receipt's own digests. The statement is unsigned; `campaign.sealing.signing` wraps it in
a DSSE envelope. Nothing is written inside the root.

``in_toto_attestation`` (the in-toto Attestation Framework's Python bindings) is
imported when a statement is made or read, so every other command works on a host
without it. Its predicate is a protobuf Struct, where every number is a double;
integral values are written back as integers, which is the same JSON number.
"""
from __future__ import annotations

import json
from typing import Any, Collection

from campaign import __version__
from campaign.contract import canonical, yamlio
from campaign.contract.artifacts import MANIFEST_FILE, RECEIPT_FILE
from campaign.contract.errors import ATTEST_REFUSED, Refused
from campaign.contract.runroot import RunRoot
from campaign.sealing.verification import require_sealed, require_verified

PREFIX = ATTEST_REFUSED
PREDICATE_TYPE = "https://campaign.dev/attestation/run/v1"
LIBRARY = "in-toto-attestation"


def _library():
    try:
        from google.protobuf import json_format
        from in_toto_attestation.v1 import statement, statement_pb2
        from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
    except ImportError as exc:
        raise Refused(PREFIX, "library", f"{LIBRARY} is not importable ({exc}): "
                      f"`pip install {LIBRARY}` (a dependency of this project)") from None
    return json_format, statement, statement_pb2, ResourceDescriptor


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def predicate(root: RunRoot, receipt) -> dict[str, Any]:
    manifest, _ = yamlio.load(root.manifest_file)     # the manifest's own words, as written
    return {
        "campaign": receipt.campaign,
        "root": root.name,
        "sealed_utc": receipt.sealed_utc,
        "sealed_by": f"campaign {receipt.tool_version}",
        "attested_by": f"campaign {__version__}",
        "receipt": {"file": RECEIPT_FILE, "sha256": canonical.sha256_file(root.receipt_file),
                    "schema_version": receipt.schema_version,
                    "content_sha256": getattr(receipt, "content_sha256", None)},
        "manifest": {"file": MANIFEST_FILE, "sha256": receipt.manifest_sha256,
                     "source": root.prepare.manifest_source},
        "prepare_sha256": receipt.prepare_sha256,
        "status_sha256": receipt.status_sha256,
        "sources": manifest.get("sources"),
        "device": manifest.get("device"),
        "switch": (manifest.get("switch") or {}).get("name"),
        "harness": {"digest": receipt.harness_digest, "files": dict(receipt.harness),
                    "changed_since_prepare": list(receipt.harness_changed_since_prepare)},
        "run_identity": receipt.run_identity.dump() if receipt.run_identity else None,
        "distinct_run_identities": [entry.dump() for entry in receipt.distinct_run_identities],
        "verdict_counts": dict(receipt.verdicts.counts) if receipt.verdicts else None,
        "verdicts_note": receipt.verdicts_note,
    }


def statement(root: RunRoot, allow_schema: Collection[int] = ()) -> dict[str, Any]:
    """The statement as JSON data; refuses (exit 5) a root that does not verify."""
    require_sealed(root, PREFIX)
    return build(root, require_verified(root, PREFIX, allow_schema).receipt)


def build(root: RunRoot, receipt) -> dict[str, Any]:
    """The statement of ``root`` under ``receipt`` as they are now, unverified (a signature's check
    compares it with what was signed): the receipt's files and receipt.json itself are the subjects."""
    json_format, library, _, ResourceDescriptor = _library()
    digests = {rel: entry.sha256 for rel, entry in receipt.files.items()}
    digests[RECEIPT_FILE] = canonical.sha256_file(root.receipt_file)
    subjects = [ResourceDescriptor(name=rel, digest={"sha256": sha}).pb for rel, sha in sorted(digests.items())]
    made = library.Statement(subjects, PREDICATE_TYPE, json.loads(json.dumps(predicate(root, receipt))))
    made.validate()
    return _integral(json_format.MessageToDict(made.pb))


def read(text: str):
    """A statement read back and validated by the library (its `Statement`); raises ValueError."""
    json_format, library, statement_pb2, _ = _library()
    try:
        message = json_format.Parse(text, statement_pb2.Statement())
    except json_format.ParseError as exc:
        raise ValueError(str(exc)) from None
    made = library.Statement.copy_from_pb(message)
    made.validate()
    return made
