"""The campaign manifest: the contract a campaign is frozen from.

Models only: reading YAML and mapping errors to file positions lives in
`campaign.contract.yamlio`; checks that need the inventory or the workload tree live in
`campaign.planning.resolve`.
"""
from __future__ import annotations

import difflib
import re
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StringConstraints, model_validator

from campaign.contract import cellenv_rules, stripregex

SCHEMA_VERSION = 1

# Numbers are strict (YAML's true or "600" is not an integer; .inf is not a time) and
# bounded, so a typo cannot expand into a million-round matrix or a year-long timeout.
MAX_TIMEOUT_S = 86_400                  # one cell, one day
MAX_ROUNDS = 100
MAX_WORKLOADS_PER_PROCESS = 256
MAX_MS = 60_000                         # timer windows, per measurement
Count = Annotated[int, Field(strict=True, ge=1)]
Seconds = Annotated[int, Field(strict=True, ge=1, le=MAX_TIMEOUT_S)]
Millis = Annotated[float, Field(strict=True, gt=0, le=MAX_MS, allow_inf_nan=False)]

# torch dtype names (the timing plugin looks them up on torch); one spelling each,
# because the name is recorded in every row and compared across cells.
DTYPES = ("bfloat16", "bool", "complex128", "complex64", "float16", "float32", "float64",
          "int16", "int32", "int64", "int8", "uint8")
_DTYPE_ALIASES = {"fp16": "float16", "half": "float16", "f16": "float16", "bf16": "bfloat16",
                  "fp32": "float32", "float": "float32", "f32": "float32", "fp64": "float64",
                  "double": "float64", "f64": "float64", "int": "int32", "long": "int64"}


def _known_dtype(name: str) -> str:
    if name in DTYPES:
        return name
    key = name.lower()
    guess = key if key in DTYPES else _DTYPE_ALIASES.get(key) or next(iter(difflib.get_close_matches(key, DTYPES, n=1)), None)
    hint = f": did you mean {guess}?" if guess else f"; known: {', '.join(DTYPES)}"
    raise ValueError(f"unknown dtype {name!r}{hint}")


def _integer(value: object) -> object:
    # a Literal compares with ==, so true and 1.0 would pass as 1; pydantic has no strict Literal
    if type(value) is not int:
        raise ValueError(f"Input should be an integer, not {type(value).__name__}")
    return value


DType = Annotated[str, AfterValidator(_known_dtype),
                  Field(json_schema_extra={"enum": list(DTYPES)})]

CampaignId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)]
WorkloadName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=80)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
EnvValue = Annotated[str, Field(strict=True)]
Reason = Annotated[str, StringConstraints(min_length=8, strip_whitespace=True)]
# a file, a function of it, or one parametrised node id of it (its [params] checked at prepare)
Target = Annotated[str, StringConstraints(pattern=r"^[^:\s]+\.py(::[A-Za-z_][A-Za-z0-9_]*(\[[^\]\s]+\])?)?$")]

CELL_NAMES = ("baseline", "control", "candidate")
IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")


class FieldError(ValueError):
    """A cross-field rule's failure, carrying the path below the validated model.

    pydantic keeps the raised exception in the error's ``ctx``; `campaign.contract.yamlio`
    appends ``loc`` so the message points at the offending key, not the section,
    and reports every one of ``problems`` (more than one when a rule finds several).
    """

    def __init__(self, loc: tuple, message: str, problems: tuple[tuple[tuple, str], ...] = ()):
        super().__init__(message)
        self.loc = loc
        self.problems = problems or ((loc, message),)

    @classmethod
    def every(cls, problems: list[tuple[tuple, str]]) -> "FieldError":
        loc, message = problems[0]
        return cls(loc, message, tuple(problems))


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Pin(Model):
    """A version, and the commit where one is known; preflight compares both."""

    version: Optional[str] = None
    commit: Optional[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]] = None


class Checkout(Model):
    """A FlagGems source checkout whose own benchmark/ and tests/ files are run
    (`campaign.planning.checkout`): prepare refuses it unless HEAD is the pinned commit or
    tag and the tree is clean."""

    path: Annotated[str, StringConstraints(min_length=1)]    # relative to the manifest's folder, or absolute
    commit: Optional[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]] = None
    tag: Optional[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")]] = None
    # FlagGems' tests/ take --quick for smaller shape lists (the earlier harness ran both sides with it)
    quick: StrictBool = False

    @model_validator(mode="after")
    def _pinned(self) -> "Checkout":
        if self.commit is None and self.tag is None:
            raise FieldError(("commit",), "a checkout needs the commit or tag it must be at: what ran is named by it")
        return self


class Sources(Model):
    triton: Pin
    triton_flavor: Literal["triton", "flagtree"] = "triton"
    torch: Optional[Pin] = None
    flag_gems: Optional[Pin] = None
    harness: Optional[Pin] = None
    flag_gems_checkout: Optional[Checkout] = None


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
        refused = cellenv_rules.problems(self.name, {name: getattr(cells, name) for name in self.cell_names()})
        if refused:
            raise FieldError.every(refused)
        if cells.baseline == cells.candidate:
            raise FieldError(("cells", "candidate"), "baseline and candidate have the same env: nothing would be compared")
        if cells.control is not None and cells.control == cells.baseline:
            raise FieldError(("cells", "control"), "control has the same env as baseline: it must turn the switch's plumbing on")
        bad = [(("strip_annotations", index), why) for index, pattern in enumerate(self.strip_annotations)
               if (why := stripregex.problem(pattern)) is not None]
        if bad:
            raise FieldError.every(bad)
        return self

    def cell_names(self) -> tuple[str, ...]:
        return tuple(name for name in CELL_NAMES if getattr(self.cells, name) is not None)


class Timer(Model):
    kind: Literal["event", "graph", "direct"] = "graph"
    warmup_ms: Millis = 25.0
    rep_ms: Millis = 100.0
    return_mode: Literal["median", "mean", "min", "max"] = "median"
    direct_repeat: Optional[Annotated[Count, Field(le=1000)]] = None

    @model_validator(mode="after")
    def _repeat_is_median(self) -> "Timer":
        if self.direct_repeat is not None and self.return_mode != "median":
            raise FieldError(("return_mode",), "direct_repeat takes the median of repeats; return_mode must be median")
        if self.direct_repeat is not None and self.kind == "event":
            # only direct-timed rows repeat: kind direct, or graph rows that fell back
            raise FieldError(("direct_repeat",), "event rows are never direct-timed: direct_repeat needs kind direct or graph")
        return self


class Rounds(Model):
    count: Annotated[Count, Field(le=MAX_ROUNDS)] = 2
    alternate_order: StrictBool = True
    later_only_if_ir_changed: StrictBool = True


class AutotuneFrom(Model):
    """Replay the autotune configs an earlier sealed root recorded (`campaign.planning.pinning`):
    every cell replays, none records, nothing is re-tuned."""

    root: Annotated[str, StringConstraints(min_length=1)]    # relative to the project root, or absolute
    receipt_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]   # of its receipt.json


class Defaults(Model):
    timeout_s: Seconds = 2400
    bench_level: Literal["core", "comprehensive"] = "core"
    # upstream: a FlagGems checkout's core_shapes.yaml, looked up as FlagGems does (provider flaggems_upstream)
    shape_mode: Literal["project", "subset", "upstream"] = "project"
    # A user's trace of real shapes (YAML, relative to the manifest or absolute): replaces ops/shapes for
    # builtin and flaggems, core_shapes.yaml (--shape_file) for flaggems_upstream; digested at prepare
    shape_file: Optional[Annotated[str, StringConstraints(min_length=1)]] = None
    tuner_cache: Literal["isolated", "shared"] = "isolated"
    # The most workloads one worker process runs in sequence (one side, one round:
    # `campaign.running.batching`). 1 by default: a FlagGems workload's LibTuner sqlite
    # lives in the process's one FLAGGEMS_CACHE_DIR, so a later workload of a batch would
    # start on a warm tuner cache, which keeps it from any timing claim; opt in per manifest.
    workloads_per_process: Annotated[Count, Field(le=MAX_WORKLOADS_PER_PROCESS)] = 1
    # configs pinned across roots: a screen's winners replayed by its campaign, so both time the same code
    autotune_from: Optional[AutotuneFrom] = None


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


def own_test_op(benchmark: object) -> Optional[str]:
    """A pytest workload's default op: its test file's stem, lowercased, minus a ``test_`` prefix."""
    if not isinstance(benchmark, str) or ".py" not in benchmark:
        return None
    stem = benchmark.partition("::")[0].rsplit("/", 1)[-1].removesuffix(".py").lower()
    stem = re.sub(r"[^a-z0-9_]", "_", stem.removeprefix("test_")) or "test"
    return stem


class Workload(Model):
    # narrowing needs a stated reason: expressed for JSON Schema users too
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={
        "dependentRequired": {"correctness": ["reason"], "shapes": ["reason"]},
        "if": {"properties": {"provider": {"const": "pytest"}}, "required": ["provider"]},
        "then": {"required": ["benchmark"], "not": {"anyOf": [{"required": ["dtypes"]}, {"required": ["shapes"]}]}},
        "else": {"required": ["op"]}})

    name: WorkloadName
    # Optional only for provider pytest, whose op defaults to the test file's stem (`_own_test_op`).
    op: Optional[Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")]] = None
    # pytest: a user's own test file that times with triton.testing.do_bench (`campaign.plugins.dobench`)
    # flaggems_upstream: FlagGems' own benchmark items from sources.flag_gems_checkout; op is their op mark
    provider: Literal["builtin", "flaggems", "pytest", "flaggems_upstream"] = "builtin"
    benchmark: Optional[Target] = None
    correctness: Optional[Correctness] = None
    dtypes: Optional[tuple[DType, ...]] = None
    shapes: Optional[tuple[Annotated[str, StringConstraints(min_length=1)], ...]] = None
    timeout_s: Optional[Seconds] = None
    # Seconds one screened round took (`campaign screen`): N rounds cost about N times it.
    # A round is at most three cells, each under the timeout cap.
    weight_s: Optional[Annotated[float, Field(strict=True, ge=0, le=3 * MAX_TIMEOUT_S, allow_inf_nan=False)]] = None
    canary: StrictBool = False
    reason: Optional[Reason] = None

    @model_validator(mode="before")
    @classmethod
    def _own_test_op(cls, data):
        if isinstance(data, dict) and data.get("provider") == "pytest" and data.get("op") is None:
            stem = own_test_op(data.get("benchmark"))
            if stem is not None:
                data = {**data, "op": stem}
        return data

    @model_validator(mode="after")
    def _per_provider(self) -> "Workload":
        if self.provider != "pytest":
            if self.op is None:
                raise FieldError(("op",), "Field required: the op names the workload's shapes and inventory entry")
            return self
        if self.benchmark is None:
            raise FieldError(("benchmark",), "provider pytest times a test file of the project: name it (file.py, "
                                             "file.py::test_function or one node id)")
        # the test builds its own inputs: a planned dtype or shape would be a label with nothing behind it
        for field in ("dtypes", "shapes"):
            if getattr(self, field) is not None:
                raise FieldError((field,), f"provider pytest takes its {field} from the test itself; leave {field} out")
        return self

    @model_validator(mode="after")
    def _narrowing_has_reason(self) -> "Workload":
        narrowed = [what for what, present in (
            ("correctness node_ids", self.correctness is not None and self.correctness.node_ids is not None),
            ("correctness -k", self.correctness is not None and self.correctness.k is not None),
            ("a shape subset", self.shapes is not None),
        ) if present]
        if self.dtypes is not None and not self.dtypes:
            raise FieldError(("dtypes",), "dtypes is empty: leave it out to use the op's own set")
        if self.shapes is not None and not self.shapes:
            raise FieldError(("shapes",), "shapes is empty: a subset of no shapes measures nothing; leave it out to use them all")
        if narrowed and self.reason is None:
            raise FieldError(("reason",), f"narrowing ({', '.join(narrowed)}) requires a reason")
        return self



class Manifest(Model):
    schema_version: Annotated[Literal[1], BeforeValidator(_integer)] = SCHEMA_VERSION
    campaign: CampaignId
    description: Annotated[str, StringConstraints(min_length=1)]
    sources: Sources
    device: Device
    switch: Switch
    timer: Timer = Timer()
    rounds: Rounds = Rounds()
    measured_launch_floor: Annotated[int, Field(strict=True, ge=0, le=1_000_000)] = 1
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
            if workload.provider == "flaggems_upstream" and self.sources.flag_gems_checkout is None:
                raise FieldError(("workloads", index, "provider"),
                                 "provider flaggems_upstream runs a FlagGems checkout: name it in sources.flag_gems_checkout")
            # one shape source per campaign: the caliber records one shape_mode for every row
            if (workload.provider == "flaggems_upstream") != (self.defaults.shape_mode == "upstream"):
                raise FieldError(("workloads", index, "provider"),
                                 f"provider {workload.provider} with defaults.shape_mode {self.defaults.shape_mode}: "
                                 "FlagGems' own benchmark items take shape_mode upstream, and only they do")
        if self.device.backend == "cpu" and self.timer.kind == "graph":
            # Nothing is timed on cpu; graph would be a label with nothing behind it.
            raise FieldError(("timer", "kind"), "graph needs an accelerator; a cpu campaign times nothing: use event")
        if self.switch.ir_stage == "sass" and self.device.backend == "cpu" and not self.device.target.startswith("cuda:"):
            # offline sass is nvdisasm over the cubin Triton builds for a cuda target (ptxas and nvdisasm ship in its wheel)
            raise FieldError(("switch", "ir_stage"), f"sass on cpu disassembles a cuda cubin; target {self.device.target} has none")
        return self

    def timeout_for(self, workload: Workload) -> int:
        return workload.timeout_s if workload.timeout_s is not None else self.defaults.timeout_s
