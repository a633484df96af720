"""A campaign too long for one GPU job, split into shards: whole workloads over N roots, pure.

The unit is a workload, as for the cards of one host (`campaign.planning.partition`): an A/B pair
and all its rounds stay in one shard, so no cell runs in two. The split is the cards' LPT over the
manifest's ``weight_s`` (N rounds cost about N times one screened round); ``--shard-budget``
takes the fewest shards whose heaviest fits the job's seconds. The set's id is the digest of the
whole manifest's sha256 and the partition: two prepares of one manifest and one split are one set,
and a shard of any other set is told apart by it (`campaign.flows.shardset`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from campaign.contract import canonical
from campaign.contract.errors import PREPARE_REFUSED, Refused
from campaign.contract.manifest import Manifest
from campaign.contract.rootrecords import Shard
from campaign.planning import partition


@dataclass(frozen=True)
class Split:
    workloads: tuple[tuple[str, ...], ...]      # per shard, in the manifest's order
    predicted_s: tuple[float, ...]              # per shard: its weights' sum
    equal: tuple[str, ...]                      # workloads with no weight_s (weighed as the mean)

    def shard(self, index: int, manifest_sha256: str) -> Shard:
        """Shard ``index`` (1-based) of this split, as prepare.json records it."""
        return Shard(index=index, of=len(self.workloads), set_id=set_id(manifest_sha256, self.workloads),
                     manifest_sha256=manifest_sha256, workloads=self.workloads)


def set_id(manifest_sha256: str, workloads: tuple[tuple[str, ...], ...]) -> str:
    return canonical.sha256_bytes(canonical.dumps({"manifest_sha256": manifest_sha256,
                                                   "shards": [list(names) for names in workloads]}).encode())


def split(manifest: Manifest, shards: Optional[int], budget_s: Optional[float]) -> Split:
    """``shards`` bins, or the fewest within ``budget_s``; refused where a shard would be empty or
    one workload alone is over the budget."""
    names = [w.name for w in manifest.workloads]
    weighed = partition.weights(names, manifest.rounds.planned, weight_s={w.name: w.weight_s for w in manifest.workloads})
    if shards is not None:
        if shards > len(names):
            raise Refused(PREPARE_REFUSED, "shards", f"--shards {shards}: the manifest has {len(names)} workloads; "
                          "a shard holds whole workloads, so at most that many shards")
        placed = partition.lpt(weighed, shards)
    else:
        assert budget_s is not None
        try:
            placed = partition.fewest_within(weighed, budget_s)
        except ValueError as exc:
            raise Refused(PREPARE_REFUSED, "shard_budget", f"--shard-budget {budget_s:g}: {exc} (weight_s x "
                          f"{manifest.rounds.planned} rounds); a workload is never split, so give the job more "
                          "seconds or the workload fewer rounds") from None
    order = {name: n for n, name in enumerate(names)}
    bins = tuple(tuple(sorted(names_in, key=order.__getitem__)) for names_in in placed.cards)
    return Split(workloads=bins, predicted_s=tuple(round(placed.load(n), 3) for n in range(len(bins))),
                 equal=tuple(sorted(n for n, w in weighed.items() if w.source == partition.EQUAL)))
