"""`campaign compare --format json` as a model: sealed roots side by side (`campaign.reporting.comparison`).

Every number is read from a root's sealed verdicts (receipt.json), never re-judged. Per
workload there is one entry per root (None where the root does not hold the workload: it
is listed, never dropped) and, from the second root on, the change of its geomean against
the first root and against the previous one. A change is in percentage points of the
candidate-vs-baseline geomean, labelled by whether the two roots' intervals overlap: the
comparison claims no move of its own beyond what the sealed intervals say.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from campaign.contract.artifacts import Record
from campaign.contract.records import Sha256
from campaign.contract.verdictnames import VerdictClass

COMPARISON_VERSION = 1
OVERLAP, DISJOINT, NO_INTERVAL = "overlap", "disjoint", "no interval"


class ShardRoot(Record):
    """One shard of a set compared as one column (`campaign prepare --shards`)."""

    root: str                                      # the path as given
    receipt_sha256: Sha256                         # of its receipt.json as read


class RootColumn(Record):
    """One sealed root, as its receipt describes it; or one shard set, its shards' verdicts merged."""

    index: int = Field(ge=1)                       # the column's number, #1 first, in the order given
    root: str                                      # the path as given
    campaign: str
    mode: str                                      # prepare.json's: "campaign" or "screen"
    sealed_utc: str
    tool_version: str                              # the campaign version that sealed it
    receipt_sha256: Sha256                         # of receipt.json as read; a set's: of its shards' digests (below)
    shards: tuple[ShardRoot, ...] = ()             # a shard set: each shard in order (`root` joins their paths)
    backend: str
    switch: str
    cells: tuple[str, ...]
    caliber: dict[str, str]                        # field -> value, "a | b" where its own cells differ
    caliber_findings: int                          # refusals inside the root (its own cells disagreed)
    differs_from_first: tuple[str, ...]            # the fields of `Comparison.differences` where it is not #1's


class Difference(Record):
    """One field whose value is not the same in every root, with each root's value."""

    field: str
    values: tuple[Optional[str], ...]              # one per root, in column order; None: the root has no value


class Entry(Record):
    """One workload in one root: its sealed class and, where the range means something, its geomean."""

    klass: VerdictClass = Field(alias="class")
    screen: str
    label: str                                     # the timing's label (result, noise floor, ...); "" when untimed
    point: Optional[float]                         # geomean candidate/baseline - 1; None: no range printed
    low: Optional[float]
    high: Optional[float]
    method: Optional[str]                          # how the interval was made; None: single round, no interval
    floor: Optional[float]                         # the A/A floor; None: no control
    reason: str


class Change(Record):
    """A workload's geomean in one root against another's."""

    against: int = Field(ge=1)                     # the column compared with
    points: Optional[float]                        # (point - other point) x 100; None: a side has no geomean
    intervals: Literal["overlap", "disjoint", "no interval"]
    class_moved: Optional[str]                     # "G -> R" where the sealed class differs; None where equal


class WorkloadRow(Record):
    workload: str
    entries: tuple[Optional[Entry], ...]           # one per root; None: not in that root
    vs_first: tuple[Optional[Change], ...]         # one per root; None for #1 and where either side lacks it
    vs_previous: tuple[Optional[Change], ...]


class Comparison(Record):
    schema_version: Literal[1]
    roots: tuple[RootColumn, ...]
    differences: tuple[Difference, ...]            # what is not the same in every root: the point of the comparison
    same: dict[str, str]                           # every other compared field, with its one value
    workloads: tuple[WorkloadRow, ...]
    not_in_every_root: dict[str, tuple[int, ...]]  # workload -> the columns that hold it
