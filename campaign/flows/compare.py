"""The compare flow: sealed roots read through their receipts, verified, then laid side by side.

Each root must hold a receipt (`campaign.sealing.verification.require_sealed`: exit 2 otherwise),
verify against it (exit 5, every difference named, as `campaign verify` would) and hold
verdicts: the comparison shows each root's verdicts as sealed and never re-judges one.
`campaign.reporting.comparison` does the rest, pure.
"""
from __future__ import annotations

from pathlib import Path
from typing import Collection, Sequence

from campaign.contract import canonical
from campaign.contract.artifacts import RECEIPT_FILE
from campaign.contract.comparison import Comparison
from campaign.contract.errors import COMPARE_REFUSED, Refused
from campaign.flows.roots import root_mode
from campaign.judging import evidence
from campaign.reporting import comparison
from campaign.sealing import verification

PREFIX = COMPARE_REFUSED


def sealed_root(root: Path, allow_schema: Collection[int] = ()) -> comparison.SealedRoot:
    verification.require_sealed(root, PREFIX)
    model = verification.require_verified(root, PREFIX, allow_schema).receipt
    if model.verdicts is None:
        raise Refused(PREFIX, "verdicts", f"{root / RECEIPT_FILE}: verdicts is null ({model.verdicts_note}): "
                      f"nothing sealed to compare; `campaign report {root}` derives them now, unsealed")
    manifest, _ = evidence.load_frame(root)
    return comparison.SealedRoot(str(root), root_mode(Path(root)) or "campaign",
                                 canonical.sha256_file(Path(root) / RECEIPT_FILE), model,
                                 manifest.model_dump(mode="json"))


def compare(roots: Sequence[Path], allow_schema: Collection[int] = ()) -> Comparison:
    """Every root verified before any is compared: one that does not verify stops the comparison."""
    return comparison.compare([sealed_root(Path(root), allow_schema) for root in roots])
