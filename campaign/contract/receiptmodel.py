"""receipt.json as a model: what `verify` accepts before it trusts a single digest in it.

Two versions are read. Version 2 (written since the seal became crash-safe)
records each file's mode, every folder with its mode, and ``content_sha256``:
the SHA-256 of the receipt's own canonical JSON without that one field, so an
edited verdict or an entry dropped together with its file no longer verifies.
Version 1 (the roots committed before) has neither; `ReceiptV1.unsupported`
names what verify therefore cannot check, and its file digests are still checked.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, RootModel, StringConstraints

from campaign.contract import canonical
from campaign.contract.records import SealedRecord, Sha256, Verdicts
from campaign.contract.rootrecords import RunIdentity

RECEIPT_VERSION = 2
SELF_DIGEST = "content_sha256"

Mode = Annotated[str, StringConstraints(pattern=r"^0[0-7]{3}$")]   # octal permission bits, "0444"


class FileEntry(SealedRecord):
    sha256: Sha256
    size: int = Field(ge=0)


class SealedFile(FileEntry):
    mode: Mode


class DistinctIdentity(SealedRecord):
    """One caliber the cells ran under (`campaign.judging.caliber.flatten`), with the tasks that ran under it."""

    caliber: dict[str, Any]
    tasks: tuple[str, ...]


class _Common(SealedRecord):
    campaign: str
    sealed_utc: str
    tool_version: str
    manifest_sha256: Sha256
    prepare_sha256: Sha256
    status_sha256: Optional[Sha256]
    harness: dict[str, Sha256]
    harness_digest: Optional[Sha256]
    harness_changed_since_prepare: tuple[str, ...]
    run_identity: Optional[RunIdentity]         # the first cell's, in run order
    distinct_run_identities: tuple[DistinctIdentity, ...]   # empty when every cell ran under one caliber
    verdicts: Optional[Verdicts]                # `campaign.judging.classify.classify_root`'s output, or None
    verdicts_note: Optional[str]                # why verdicts is None


class ReceiptV1(_Common):
    """Sealed before modes, folders and the receipt's own digest were recorded."""

    schema_version: Literal[1]
    files: dict[str, FileEntry]

    @staticmethod
    def unsupported() -> tuple[str, ...]:
        return ("file and folder modes (none recorded)",
                "empty folders added or removed (no folder list recorded)",
                "edits of the receipt itself (no content_sha256 recorded)")


class Receipt(_Common):
    schema_version: Literal[2]
    files: dict[str, SealedFile]
    folders: dict[str, Mode]                    # every folder below the root -> its mode
    content_sha256: Sha256

    @staticmethod
    def unsupported() -> tuple[str, ...]:
        return ()


class ReceiptFile(RootModel[Annotated[Union[ReceiptV1, Receipt], Field(discriminator="schema_version")]]):
    """Either version, chosen by ``schema_version``: the model `campaign schema` publishes."""


def content_digest(data: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``data`` without its own ``content_sha256``."""
    return canonical.sha256_bytes(canonical.dumps({k: v for k, v in data.items() if k != SELF_DIGEST}).encode())
