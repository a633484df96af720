"""The verdicts as a model: what `campaign.judging.classify.classify` writes into receipt.json.

Every field matches what the classifier writes today. Fields added after the
first H200 roots were sealed carry a default and are never written when the
verdicts being read did not hold them: `SealedRecord.dump` leaves out what was
not set, so a committed receipt's verdicts read and dumped again give the same
canonical bytes, and an old root still reports. Verdicts keep ``schema_version``
1 through these additions (none changes a field that was already there).

prepare.json, run_identity.json and rescore.json are `campaign.contract.rootrecords`.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, StringConstraints

from campaign.contract.artifacts import Record
from campaign.contract.verdictnames import VerdictClass

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class SealedRecord(Record):
    """A record read back from a sealed root: dumped exactly as it was read or written."""

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    @classmethod
    def read(cls, data: Union["SealedRecord", dict[str, Any]]):
        """The model of ``data``: itself when it already is one, else validated."""
        return data if isinstance(data, cls) else cls.model_validate(data)


class Interval(SealedRecord):
    low: float
    high: float
    method: str


class ShapeTiming(SealedRecord):
    key: str
    regime: str
    deltas: tuple[tuple[int, float], ...]          # (round, candidate/baseline - 1)
    aa: tuple[tuple[int, float], ...]              # (round, control/baseline - 1)
    point: float
    interval: Optional[Interval]
    floor: Optional[float]
    side_spread: dict[str, Optional[float]]
    delta_spread: Optional[float]
    sign_flip: bool
    verdict: str
    reason: str


class ShapeCounts(SealedRecord):
    """How many shapes resolved each way (`campaign.judging.stats`)."""

    faster: int
    slower: int
    neutral: int
    sign_flipping: int


class RegimeTiming(SealedRecord):
    regime: str
    fallback: bool
    point: Optional[float]
    interval: Optional[Interval]
    floor: Optional[float]
    by_order: dict[str, float]
    order_verdicts: dict[str, str]
    verdict: str
    reason: str
    counts: ShapeCounts
    sign_flips: tuple[str, ...]
    dropped_shapes: int
    rounds: tuple[tuple[int, str, float], ...]     # (round, order, geomean ratio - 1)
    shapes: tuple[ShapeTiming, ...]
    # absent from verdicts sealed before the significance rule (`campaign.judging.significance`)
    p_value: Optional[float] = None
    df: Optional[int] = None
    rounds_per_order: dict[str, int] = {}
    leaning: Optional[str] = None
    shape_floor_max: Optional[float] = None
    # absent from verdicts sealed before it was computed (`campaign.judging.direction.resolvable`)
    resolvable: Optional[float] = None


class Timing(SealedRecord):
    primary: Optional[RegimeTiming]
    others: tuple[RegimeTiming, ...]
    mixed_pairs: int
    unpaired: int
    rounds: tuple[int, ...]
    orders: dict[str, str]                         # round -> run order
    label: str                                     # "result", "noise floor (IR unchanged)" or "IR unchanged; timing moved (...)"
    # absent before rounds could be taken against the control, and before the coverage rule
    references: dict[str, str] = {}
    coverage: Optional[float] = None


class IRJudgement(SealedRecord):
    stage: str
    fingerprints: dict[str, Optional[str]]
    changed: Optional[bool]
    control_matches: Optional[bool]
    files: dict[str, int]
    # absent before the control could stand in for a recording baseline
    reference: str = "baseline"
    sources: dict[str, Optional[str]] = Field(default={}, alias="from")   # cell -> the task its IR came from
    # absent unless the fingerprints differed only by unpaired specialisations (campaign.judging.irpairing)
    unpaired: tuple[str, ...] = ()


class CellTopology(SealedRecord):
    task: str
    scoped: int
    unscoped: int
    excluded: tuple[str, ...]
    unjoinable: tuple[str, ...]


class Topology(SealedRecord):
    floor: int
    cells: dict[str, Optional[CellTopology]]


class Correctness(SealedRecord):
    state: Literal["run", "not_run"]
    reason: Optional[str]
    passed: int
    failed: int
    error: int
    skipped: int
    outside_target: int


class SideClocks(SealedRecord):
    rows: int
    throttled_rows: int
    unsampled_rows: int
    sm_clock_median_mhz: Optional[float]
    sm_clock_min_mhz: Optional[float]
    reasons: dict[str, int]
    # absent before the power cap was told from environmental throttles (campaign.judging.throttle)
    capped_rows: int = 0
    environmental_rows: int = 0
    retimed_rows: int = 0


class Rounds(SealedRecord):
    planned: tuple[int, ...]
    done: tuple[int, ...]
    skipped: tuple[str, ...]
    missing: tuple[str, ...]


class WorkloadVerdict(SealedRecord):
    klass: VerdictClass = Field(alias="class")
    reason: str
    screen: str
    ir: IRJudgement
    topology: Topology
    correctness: dict[str, Correctness]
    markers: dict[str, dict[str, int]]
    rounds: Rounds
    timing: Optional[Timing]
    caliber: tuple[str, ...]
    # absent before Holm's step-down, per-shape failures, isolation taints and clocks were judged
    rests_on_timing: bool = False
    rows_failed: dict[str, tuple[str, ...]] = {}
    taints: tuple[str, ...] = ()
    clocks: dict[str, SideClocks] = {}
    # absent before cycles (time x the window's SM clock) were judged beside time
    cycles: Optional[RegimeTiming] = None


class Rule(SealedRecord):
    measured_launch_floor: int
    ir_stage: str
    strip_annotations: tuple[str, ...]
    interval: str
    significance: str


class PinnedSwitch(SealedRecord):
    name: str
    pinned: tuple[str, ...]


class Environment(SealedRecord):
    inherited: tuple[str, ...]                     # "NAME=value" of each inherited code path
    switch_overrides_pin: Optional[PinnedSwitch]


class CaliberTable(SealedRecord):
    fields: dict[str, str]
    findings: tuple[str, ...]
    warnings: tuple[str, ...]
    released: bool


class Verdicts(SealedRecord):
    schema_version: Literal[1]
    campaign: str
    backend: str
    switch: str
    cells: tuple[str, ...]
    production_default_policy: str
    rule: Rule
    caliber: CaliberTable
    counts: dict[str, int]
    workloads: dict[str, WorkloadVerdict]
    # absent before a changed harness and inherited code paths were recorded
    harness_drift: tuple[str, ...] = ()
    environment: Optional[Environment] = None
