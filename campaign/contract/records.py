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

from pydantic import Field, PlainSerializer, StringConstraints, model_validator
from pydantic.json_schema import SkipJsonSchema

from campaign.contract.artifacts import Record
from campaign.contract.fields import BASELINE
from campaign.contract.verdictnames import CLASSES, VerdictClass

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


def sealed_delta(value: float) -> float:
    """A fraction as a receipt holds it: 6 decimals."""
    return round(value, 6)


def sealed_p(value: float) -> float:
    """A p-value as a receipt holds it: 3 significant digits."""
    return float(f"{value:.3g}")


# The judge keeps full precision (`campaign.judging.stats` decides on it); the JSON a receipt seals
# is rounded, and rounding a rounded value again gives it back, so a sealed receipt dumps to its bytes.
Delta = Annotated[float, PlainSerializer(sealed_delta, return_type=float, when_used="json")]
PValue = Annotated[float, PlainSerializer(sealed_p, return_type=float, when_used="json")]
Key = tuple    # a row's key: (function, shape, dtype, occurrence) (`campaign.judging.stats.keyed`)


class SealedRecord(Record):
    """A record read back from a sealed root: dumped exactly as it was read or written."""

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def sealed(self):
        """The record as a receipt reads it back: every value at its sealed precision."""
        return type(self).model_validate(self.dump())

    @classmethod
    def read(cls, data: Union["SealedRecord", dict[str, Any]]):
        """The model of ``data``: itself when it already is one, else validated."""
        return data if isinstance(data, cls) else cls.model_validate(data)


# An interval of per-round deltas, saying how it was made (`campaign.judging.direction.interval`).
class Interval(SealedRecord):
    low: Delta
    high: Delta
    method: str


# One shape's paired deltas and its verdict (`campaign.judging.stats`); ``key`` is `stats.key_name`.
class ShapeTiming(SealedRecord):
    key: str
    regime: str
    deltas: tuple[tuple[int, Delta], ...]          # (round, candidate/baseline - 1)
    aa: tuple[tuple[int, Delta], ...]              # (round, control/baseline - 1)
    point: Delta                                   # geometric-mean ratio - 1 over rounds
    interval: Optional[Interval]
    floor: Optional[Delta]
    side_spread: dict[str, Optional[Delta]]        # per cell: (max - min) / median of its latency over rounds
    delta_spread: Optional[Delta]
    sign_flip: bool
    verdict: str
    reason: str


class ShapeCounts(SealedRecord):
    """How many shapes resolved each way (`campaign.judging.stats`)."""

    faster: int
    slower: int
    neutral: int
    sign_flipping: int


# One timing regime of a workload: its aggregate over the shapes paired in every round.
class RegimeTiming(SealedRecord):
    regime: str
    fallback: bool
    point: Optional[Delta]
    interval: Optional[Interval]
    floor: Optional[Delta]
    by_order: dict[str, Delta]
    order_verdicts: dict[str, str]
    verdict: str
    reason: str
    counts: ShapeCounts
    sign_flips: tuple[str, ...]
    dropped_shapes: int                            # paired in some rounds only: left out of the aggregate
    rounds: tuple[tuple[int, str, Delta], ...]     # (round, order, geomean ratio - 1)
    shapes: tuple[ShapeTiming, ...]
    # absent from verdicts sealed before the significance rule (`campaign.judging.significance`)
    p_value: Optional[PValue] = None               # pooled t-test of the per-round log ratios
    df: Optional[int] = None
    rounds_per_order: dict[str, int] = {}
    leaning: Optional[str] = None                  # the interval against the floor alone, before orders and p
    shape_floor_max: Optional[Delta] = None        # the largest per-shape A/A floor (per-shape noise, never averaged)
    # absent from verdicts sealed before it was computed (`campaign.judging.direction.resolvable`)
    resolvable: Optional[Delta] = None
    # adaptive rounds only (`campaign.judging.stopping`): the share of the level this look spent;
    # p_value is then the nominal p divided by it
    alpha_share: Optional[Delta] = None


# A workload's paired timing (`campaign.judging.stats.timing`): regimes are never pooled.
class Timing(SealedRecord):
    primary: Optional[RegimeTiming]                # the regime a verdict is drawn from
    others: tuple[RegimeTiming, ...]               # other regimes, reported beside it
    mixed_pairs: int                               # pairs dropped: the two sides timed differently
    unpaired: int                                  # rows with no partner in their round
    rounds: tuple[int, ...]
    orders: dict[str, str]                         # round -> run order
    label: str                                     # `campaign.contract.verdictnames`: RESULT, NOISE_FLOOR, TIMING_MOVED
    # absent before rounds could be taken against the control, and before the coverage rule
    references: dict[str, str] = {}                # round -> the cell a delta is taken against, where not the baseline
    coverage: Optional[Delta] = None               # share of the timed shapes paired in every round
    # the judge's pairing by row key, never sealed (a receipt read back has none): coverage counted
    # with the shapes the baseline failed (`campaign.judging.stats.coverage`), the candidate's gaps named
    timed_keys: SkipJsonSchema[frozenset[Key]] = Field(default=frozenset(), exclude=True)
    covered_keys: SkipJsonSchema[frozenset[Key]] = Field(default=frozenset(), exclude=True)
    candidate_missing: SkipJsonSchema[frozenset[Key]] = Field(default=frozenset(), exclude=True)


class IRJudgement(SealedRecord):
    stage: str
    fingerprints: dict[str, Optional[str]]
    changed: Optional[bool]
    control_matches: Optional[bool]
    files: dict[str, int]
    # absent before the control could stand in for a recording baseline
    reference: str = BASELINE
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


class SideNoise(SealedRecord):
    """Under the manifest's noise target (`campaign.contract.timers`), one side's timed rows:
    how many were sampled to it and which the time cap stopped above it (key and round)."""

    sampled: int
    capped: int
    capped_rows: tuple[str, ...]


class Rounds(SealedRecord):
    planned: tuple[int, ...]
    done: tuple[int, ...]
    skipped: tuple[str, ...]
    missing: tuple[str, ...]
    # adaptive rounds only (`campaign.judging.stopping`): the rounds taken and why no more were
    # taken (decided at round k, undecided at the maximum, IR unchanged)
    taken: Optional[int] = None
    stopped: Optional[str] = None


class ChosenConfigs(SealedRecord):
    """One autotune key whose winners differ between the sides (``tuning: per_side``,
    `campaign.judging.choices`): per cell, each config it chose and the rounds that chose it."""

    kernel: str
    key: str
    cells: dict[str, tuple[str, ...]]


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
    cycles: Optional[RegimeTiming] = None          # the same pairs in cycles (time x the window's SM clock)
    # absent where no row was sampled to a noise target
    noise: dict[str, SideNoise] = {}
    # absent where the sides chose alike (always, pinned): the keys whose chosen configs differ
    chosen: tuple[ChosenConfigs, ...] = ()


class Rule(SealedRecord):
    measured_launch_floor: int
    ir_stage: str
    strip_annotations: tuple[str, ...]
    interval: str
    significance: str
    # absent from verdicts sealed before shapes were accounted for (`campaign.judging.shaperule`)
    min_effect_pct: Optional[float] = None


class PinnedSwitch(SealedRecord):
    name: str
    pinned: tuple[str, ...]


class Environment(SealedRecord):
    inherited: tuple[str, ...]                     # "NAME=value" of each inherited code path
    switch_overrides_pin: Optional[PinnedSwitch]
    # absent before the cell env was an allowlist: every variable each cell set, as its run
    # identities recorded it, and the variables the manifest declares beside the switch, with why
    cells_set: dict[str, dict[str, str]] = {}
    declared: dict[str, str] = {}


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

    @model_validator(mode="after")
    def _counts_tally_the_workloads(self) -> "Verdicts":
        """``counts`` is a tally of the workloads' classes, one entry a class: a count that says otherwise
        was written by hand (the report prints both)."""
        tally = {name: 0 for name in CLASSES}
        for verdict in self.workloads.values():
            tally[verdict.klass] += 1
        if self.counts != tally:
            raise ValueError(f"counts {dict(sorted(self.counts.items()))} are not the tally of the workloads' "
                             f"classes {tally}")
        return self
