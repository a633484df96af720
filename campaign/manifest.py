"""The campaign manifest: the contract a campaign is frozen from.

Models only: reading YAML and mapping errors to file positions lives in
`campaign.yamlio`; checks that need the inventory or the workload tree live in
`campaign.resolve`.
"""
from __future__ import annotations

import re
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, model_validator

SCHEMA_VERSION = 1

CampaignId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)]
WorkloadName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=80)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
EnvValue = Annotated[str, Field(strict=True)]
Reason = Annotated[str, StringConstraints(min_length=8, strip_whitespace=True)]
Target = Annotated[str, StringConstraints(pattern=r"^[^:\s]+\.py(::[A-Za-z_][A-Za-z0-9_]*)?$")]

CELL_NAMES = ("baseline", "control", "candidate")
IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")


class FieldError(ValueError):
    """A cross-field rule's failure, carrying the path below the validated model.

    pydantic keeps the raised exception in the error's ``ctx``; `campaign.yamlio`
    appends ``loc`` so the message points at the offending key, not the section.
    """

    def __init__(self, loc: tuple, message: str):
        super().__init__(message)
        self.loc = loc


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Pin(Model):
    """A version, and the commit where one is known; preflight compares both."""

    version: Optional[str] = None
    commit: Optional[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]] = None


class Sources(Model):
    triton: Pin
    triton_flavor: Literal["triton", "flagtree"] = "triton"
    torch: Optional[Pin] = None
    flag_gems: Optional[Pin] = None
    harness: Optional[Pin] = None


class Device(Model):
    backend: Literal["cuda", "musa", "cpu"]
    name: Optional[str] = None
    uuid: Optional[str] = None
    target: Annotated[str, StringConstraints(pattern=r"^(cuda|musa):[0-9]+$")]

    @model_validator(mode="after")
    def _identified(self) -> "Device":
        if self.backend != "cpu" and not (self.name or self.uuid):
            raise FieldError(("name",), "a cuda or musa device needs a name and/or uuid: the campaign runs on one physical device")
        return self


class Cells(Model):
    baseline: dict[EnvName, EnvValue]
    control: Optional[dict[EnvName, EnvValue]] = None
    candidate: dict[EnvName, EnvValue]


class Switch(Model):
    name: EnvName
    cells: Cells
    ir_stage: Literal["ttir", "ttgir", "llir", "ptx", "sass"] = "ttgir"
    strip_annotations: tuple[Annotated[str, Field(json_schema_extra={"format": "regex"})], ...] = ()

    @model_validator(mode="after")
    def _cells_differ(self) -> "Switch":
        cells = self.cells
        if cells.baseline == cells.candidate:
            raise FieldError(("cells", "candidate"), "baseline and candidate have the same env: nothing would be compared")
        if cells.control is not None and cells.control == cells.baseline:
            raise FieldError(("cells", "control"), "control has the same env as baseline: it must turn the switch's plumbing on")
        for index, pattern in enumerate(self.strip_annotations):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise FieldError(("strip_annotations", index), f"regex {pattern!r} does not compile: {exc}") from None
        return self

    def cell_names(self) -> tuple[str, ...]:
        return tuple(name for name in CELL_NAMES if getattr(self.cells, name) is not None)


class Timer(Model):
    kind: Literal["event", "graph", "direct"] = "graph"
    warmup_ms: Annotated[float, Field(gt=0)] = 25.0
    rep_ms: Annotated[float, Field(gt=0)] = 100.0
    return_mode: Literal["median", "mean", "min", "max"] = "median"
    direct_repeat: Optional[Annotated[int, Field(ge=1)]] = None

    @model_validator(mode="after")
    def _repeat_is_median(self) -> "Timer":
        if self.direct_repeat is not None and self.return_mode != "median":
            raise FieldError(("return_mode",), "direct_repeat takes the median of repeats; return_mode must be median")
        if self.direct_repeat is not None and self.kind == "event":
            # only direct-timed rows repeat: kind direct, or graph rows that fell back
            raise FieldError(("direct_repeat",), "event rows are never direct-timed: direct_repeat needs kind direct or graph")
        return self


class Rounds(Model):
    count: Annotated[int, Field(ge=1)] = 2
    alternate_order: StrictBool = True
    later_only_if_ir_changed: StrictBool = True


class Defaults(Model):
    timeout_s: Annotated[int, Field(ge=1)] = 2400
    bench_level: Literal["core", "comprehensive"] = "core"
    shape_mode: Literal["project", "subset"] = "project"
    tuner_cache: Literal["isolated", "shared"] = "isolated"


class Correctness(Model):
    """Narrowed correctness: node ids or a -k selector, never both."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={
        "oneOf": [{"required": ["node_ids"]}, {"required": ["k"]}]})

    node_ids: Optional[tuple[str, ...]] = None
    k: Optional[str] = None

    @model_validator(mode="after")
    def _one_of(self) -> "Correctness":
        if self.node_ids is not None and self.k is not None:
            raise FieldError(("k",), "give node_ids or k, never both")
        if self.node_ids is None and self.k is None:
            raise ValueError("give node_ids or k (or leave correctness out to use the inventory's target)")
        if self.node_ids is not None and not self.node_ids:
            raise FieldError(("node_ids",), "node_ids is empty")
        return self


class Workload(Model):
    # narrowing needs a stated reason: expressed for JSON Schema users too
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={
        "dependentRequired": {"correctness": ["reason"], "shapes": ["reason"]}})

    name: WorkloadName
    op: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")]
    provider: Literal["builtin", "flaggems"] = "builtin"
    benchmark: Optional[Target] = None
    correctness: Optional[Correctness] = None
    dtypes: Optional[tuple[Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+$")], ...]] = None
    shapes: Optional[tuple[Annotated[str, StringConstraints(min_length=1)], ...]] = None
    timeout_s: Optional[Annotated[int, Field(ge=1)]] = None
    # Seconds one screened round took (`campaign screen`): N rounds cost about N times it.
    weight_s: Optional[Annotated[float, Field(ge=0)]] = None
    canary: StrictBool = False
    reason: Optional[Reason] = None

    @model_validator(mode="after")
    def _narrowing_has_reason(self) -> "Workload":
        narrowed = [what for what, present in (
            ("correctness node_ids", self.correctness is not None and self.correctness.node_ids is not None),
            ("correctness -k", self.correctness is not None and self.correctness.k is not None),
            ("a shape subset", self.shapes is not None),
        ) if present]
        if narrowed and self.reason is None:
            raise FieldError(("reason",), f"narrowing ({', '.join(narrowed)}) requires a reason")
        if self.dtypes is not None and not self.dtypes:
            raise FieldError(("dtypes",), "dtypes is empty: leave it out to use the op's own set")
        return self

    def narrowings(self) -> tuple[str, ...]:
        out = []
        if self.correctness is not None:
            out.append("correctness")
        if self.shapes is not None:
            out.append("shapes")
        return tuple(out)


class Manifest(Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    campaign: CampaignId
    description: Annotated[str, StringConstraints(min_length=1)]
    sources: Sources
    device: Device
    switch: Switch
    timer: Timer = Timer()
    rounds: Rounds = Rounds()
    measured_launch_floor: Annotated[int, Field(ge=0)] = 1
    production_default_policy: Literal["unchanged-off", "unchanged-on", "proposed-on", "proposed-off"] = "unchanged-off"
    defaults: Defaults = Defaults()
    workloads: tuple[Workload, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _cross_field(self) -> "Manifest":
        seen: dict[str, int] = {}
        for index, workload in enumerate(self.workloads):
            if workload.name in seen:
                raise FieldError(("workloads", index, "name"), f"name {workload.name!r} is already used by workload {seen[workload.name]}")
            seen[workload.name] = index
        if self.device.backend == "cpu" and self.timer.kind == "graph":
            # Nothing is timed on cpu; graph would be a label with nothing behind it.
            raise FieldError(("timer", "kind"), "graph needs an accelerator; a cpu campaign times nothing: use event")
        if self.switch.ir_stage == "sass" and self.device.backend == "cpu":
            raise FieldError(("switch", "ir_stage"), "sass needs the device's disassembler; cpu compiles up to ptx only")
        return self

    def timeout_for(self, workload: Workload) -> int:
        return workload.timeout_s if workload.timeout_s is not None else self.defaults.timeout_s
