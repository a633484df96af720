"""The compare flow: sealed roots read through their receipts, verified, then laid side by side.

Each root must hold a receipt (`campaign.sealing.verification.require_sealed`: exit 2 otherwise),
verify against it (exit 5, every difference named, as `campaign verify` would) and hold
verdicts: the comparison shows each root's verdicts as sealed and never re-judges one.
The shards of one set (`campaign prepare --shards`) stand as one entry, at the place of the first
given: their sealed verdicts merged as `campaign report` merges them (`campaign.flows.shardset`), the
whole set required, each shard's root and receipt named. `campaign.reporting.comparison` does the rest, pure.
"""
from __future__ import annotations

from pathlib import Path
from typing import Collection, Sequence

from campaign.contract import canonical
from campaign.contract.comparison import Comparison, ShardRoot
from campaign.contract.errors import COMPARE_REFUSED, Refused
from campaign.contract.runroot import RunRoot
from campaign.flows import shardset
from campaign.reporting import comparison
from campaign.sealing import verification

PREFIX = COMPARE_REFUSED


def sealed_root(path: Path, allow_schema: Collection[int] = ()) -> comparison.SealedRoot:
    root = RunRoot(path)     # read once: the gate, the mode and the manifest share its records
    verification.require_sealed(root, PREFIX)
    model = _with_verdicts(root, verification.require_verified(root, PREFIX, allow_schema).receipt)
    return comparison.SealedRoot(str(root), root.mode or "campaign", canonical.sha256_file(root.receipt_file), model,
                                 root.manifest.model_dump(mode="json"))


def sealed_set(roots: Sequence[Path], allow_schema: Collection[int] = ()) -> comparison.SealedRoot:
    """The shards of one set as one entry: every shard sealed and verified, the set whole, the verdicts
    merged as sealed. A caliber field that differs between shards is shown, not refused (compare names
    every difference); the manifest is the first shard's with every shard's workloads, in shard order."""
    members = shardset.gather(roots, allow_schema, PREFIX)
    receipts = []
    for m in members:
        assert m.verified is not None, "gather refuses an unsealed shard"
        receipts.append(_with_verdicts(m.root, m.verified.receipt))
    verdicts, _ = shardset.merged(members, [r.verdicts for r in receipts], allow_caliber_mismatch=True, prefix=PREFIX)
    manifests = [m.root.manifest.model_dump(mode="json") for m in members]
    manifest = {**manifests[0], "workloads": [w for one in manifests for w in one["workloads"]]}
    shards = tuple(ShardRoot(root=str(m.root), receipt_sha256=canonical.sha256_file(m.root.receipt_file))
                   for m in members)
    return comparison.SealedRoot(" + ".join(one.root for one in shards), members[0].root.mode or "campaign",
                                 canonical.sha256_bytes(" ".join(one.receipt_sha256 for one in shards).encode()),
                                 receipts[0].model_copy(update={"verdicts": verdicts}), manifest, shards)


def _with_verdicts(root: RunRoot, model):
    if model.verdicts is None:
        raise Refused(PREFIX, "verdicts", f"{root.receipt_file}: verdicts is null ({model.verdicts_note}): "
                      f"nothing sealed to compare; `campaign report {root}` derives them now, unsealed")
    return model


def compare(roots: Sequence[Path], allow_schema: Collection[int] = ()) -> Comparison:
    """Every root verified before any is compared: one that does not verify stops the comparison."""
    entries: list[Path | str] = []
    sets: dict[str, list[Path]] = {}
    for root in map(Path, roots):
        key = shardset.set_of(root)
        if key is None:
            entries.append(root)
            continue
        if key not in sets:
            entries.append(key)
        sets.setdefault(key, []).append(root)
    return comparison.compare([sealed_set(sets[entry], allow_schema) if isinstance(entry, str)
                               else sealed_root(entry, allow_schema) for entry in entries])
