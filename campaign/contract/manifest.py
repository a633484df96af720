"""The campaign manifest: the contract a campaign is frozen from.

Models only (the workloads are `campaign.contract.workloads`, the field types and bounds
`campaign.contract.fields`): reading YAML and mapping errors to file positions lives in
`campaign.contract.yamlio`; checks that need the inventory or the workload tree live in
`campaign.planning.resolve`.
"""
from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import BeforeValidator, Field, StrictBool, StringConstraints, model_validator

from campaign.contract import cellenv_rules, stripregex
from campaign.contract.fields import (
    CANDIDATE,
    CELL_NAMES,
    CONTROL,
    IR_STAGES,
    MAX_IR_PASS_LANES,
    MAX_ROUNDS,
    MAX_WORKLOADS_PER_PROCESS,
    MIN_ADAPTIVE_ROUNDS,
    PER_SIDE,
    STOP_RULES,
    TUNING_MODES,
    CampaignId,
    Count,
    EnvName,
    EnvValue,
    FieldError,
    Model,
    PathText,
    Reason,
    Seconds,
    integer_only,
)
from campaign.contract.platforms import BACKEND_NAMES, TARGET_PATTERN, family, platform, stages_of
from campaign.contract.timermodel import Timer
from campaign.contract.workloads import Workload

SCHEMA_VERSION = 1

class Pin(Model):
    """A version, and the commit where one is known; preflight compares both."""

    version: Optional[str] = None
    commit: Optional[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]] = None


class Checkout(Model):
    """A FlagGems source checkout whose own benchmark/ and tests/ files are run
    (`campaign.planning.checkout`): prepare refuses a git work tree unless HEAD is the pinned
    commit or tag and the tree is clean, and a plain tree unless its digest is the pinned one."""

    path: PathText    # relative to the manifest's folder, or absolute
    commit: Optional[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{7,40}$")]] = None
    tag: Optional[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")]] = None
    # a plain tree (no .git): `campaign.planning.checkout.tree_digest`, which prepare prints when it is missing
    digest: Optional[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]] = None
    # FlagGems' tests/ take --quick for smaller shape lists (the earlier harness ran both sides with it)
    quick: StrictBool = False

    @model_validator(mode="after")
    def _pinned(self) -> "Checkout":
        if self.commit is None and self.tag is None and self.digest is None:
            raise FieldError(("commit",), "a checkout needs the commit or tag it must be at (a plain tree, without "
                                          ".git: its digest, which prepare prints): what ran is named by it")
        if self.digest is not None and (self.commit is not None or self.tag is not None):
            raise FieldError(("digest",), "a digest pins a plain tree, a commit or tag a git work tree: give one")
        return self


class Sources(Model):
    triton: Pin
    triton_flavor: Literal["triton", "flagtree"] = "triton"
    torch: Optional[Pin] = None
    flag_gems: Optional[Pin] = None
    harness: Optional[Pin] = None
    flag_gems_checkout: Optional[Checkout] = None


class Device(Model):
    backend: Literal[BACKEND_NAMES]
    name: Optional[str] = None
    uuid: Optional[str] = None
    target: Annotated[str, StringConstraints(pattern=TARGET_PATTERN)]
    # Several cards of one host, one serial runner each (`campaign.running.cards`): the first
    # ``count`` visible, or these indices, or these uuids. None of them: one card, as ever.
    count: Optional[Annotated[int, Field(ge=1, le=64)]] = None
    indices: Optional[tuple[Annotated[int, Field(ge=0)], ...]] = None
    uuids: Optional[tuple[Annotated[str, StringConstraints(min_length=1)], ...]] = None

    @model_validator(mode="after")
    def _identified(self) -> "Device":
        executes = platform(self.backend).executes
        if executes and not (self.name or self.uuid or self.uuids):
            raise FieldError(("name",), f"a {self.backend} device needs a name and/or uuid: the campaign runs on one physical device")
        if family(self.target).name not in platform(self.backend).families:
            raise FieldError(("target",), f"backend {self.backend} runs {' or '.join(platform(self.backend).families)} "
                                          f"targets, not {self.target}")
        chosen = [key for key in ("count", "indices", "uuids") if getattr(self, key) is not None]
        if len(chosen) > 1:
            raise FieldError((chosen[1],), f"{chosen[0]} and {chosen[1]} both name the cards: give one")
        if self.uuid is not None and chosen:
            raise FieldError((chosen[0],), f"uuid names one card and {chosen[0]} several: give uuids for several")
        if not executes and chosen and chosen[0] != "count":
            raise FieldError((chosen[0],), f"the {self.backend} backend has no cards to name: `count` declares virtual ones")
        for key in ("indices", "uuids"):
            listed = getattr(self, key)
            if listed is not None and (not listed or len(set(listed)) != len(listed)):
                raise FieldError((key,), f"{key} must name distinct cards, at least one")
        return self

    @property
    def cards(self) -> int:
        """How many cards the manifest names (1: the single-card run)."""
        listed = self.indices if self.indices is not None else self.uuids
        return len(listed) if listed is not None else (self.count or 1)


class Cells(Model):
    baseline: dict[EnvName, EnvValue]
    control: Optional[dict[EnvName, EnvValue]] = None
    candidate: dict[EnvName, EnvValue]


class Switch(Model):
    name: EnvName
    cells: Cells
    # The variables a cell may set besides the switch's own, each with why
    # (`campaign.contract.cellenv_rules`: the allowlist and what can never be declared).
    also: dict[EnvName, Reason] = {}
    ir_stage: Literal[IR_STAGES] = "ttgir"
    strip_annotations: tuple[Annotated[str, Field(json_schema_extra={"format": "regex"})], ...] = ()

    @model_validator(mode="after")
    def _cells_differ(self) -> "Switch":
        cells = self.cells
        envs = {name: getattr(cells, name) for name in self.cell_names()}
        refused = cellenv_rules.problems(self.name, self.also, envs)
        if refused:
            raise FieldError.every(refused)
        if cells.baseline == cells.candidate:
            raise FieldError(("cells", CANDIDATE), "baseline and candidate have the same env: nothing would be compared")
        refused = cellenv_rules.switch_problems(self.name, envs)
        if refused:
            raise FieldError.every(refused)
        if cells.control is not None and cells.control == cells.baseline:
            raise FieldError(("cells", CONTROL), "control has the same env as baseline: it must turn the switch's plumbing on")
        bad = [(("strip_annotations", index), why) for index, pattern in enumerate(self.strip_annotations)
               if (why := stripregex.problem(pattern)) is not None]
        if bad:
            raise FieldError.every(bad)
        return self

    def cell_names(self) -> tuple[str, ...]:
        return tuple(name for name in CELL_NAMES if getattr(self.cells, name) is not None)


class Rounds(Model):
    """Fixed rounds (``count``), or adaptive ones (``stop: decided``): at least ``min`` rounds, then
    another pair (one in each order) while a workload's answer is undecided, up to ``max``
    (`campaign.judging.stopping`: the rule, and why its claims stay valid when it stops early)."""

    count: Annotated[Count, Field(le=MAX_ROUNDS)] = 2
    alternate_order: StrictBool = True
    later_only_if_ir_changed: StrictBool = True
    stop: Literal[STOP_RULES] = "fixed"
    min: Optional[Annotated[Count, Field(le=MAX_ROUNDS)]] = None
    max: Optional[Annotated[Count, Field(le=MAX_ROUNDS)]] = None

    @model_validator(mode="after")
    def _stopping(self) -> "Rounds":
        if self.stop == "fixed":
            given = [key for key in ("min", "max") if getattr(self, key) is not None]
            if given:
                raise FieldError((given[0],), f"{given[0]} bounds adaptive rounds: add `stop: decided`, "
                                              "or give fixed rounds as `count`")
            return self
        if "count" in self.model_fields_set:
            raise FieldError(("count",), "stop: decided takes min and max rounds, not count: remove count")
        for key in ("min", "max"):
            if getattr(self, key) is None:
                raise FieldError((key,), f"stop: decided needs {key} (e.g. min: 4, max: 12)")
        if self.min < MIN_ADAPTIVE_ROUNDS:
            raise FieldError(("min",), f"min {self.min}: a direction needs 2 rounds in each order, "
                                       f"so min is at least {MIN_ADAPTIVE_ROUNDS}")
        if self.max <= self.min or (self.max - self.min) % 2:
            raise FieldError(("max",), f"max {self.max}: rounds are added in pairs (one in each order) after "
                                       f"min {self.min}, so max is min + 2, min + 4, ...")
        if not self.alternate_order:
            raise FieldError(("alternate_order",), "stop: decided adds one round in each order: alternate_order must be true")
        return self

    @property
    def planned(self) -> int:
        """The rounds the matrix holds: ``count``, or ``max`` when rounds stop once decided."""
        return self.max if self.stop == "decided" else self.count


class AutotuneFrom(Model):
    """Replay the autotune configs an earlier sealed root recorded (`campaign.planning.pinning`):
    every cell replays, none records, nothing is re-tuned."""

    root: PathText    # relative to the project root, or absolute
    receipt_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]   # of its receipt.json


class Defaults(Model):
    timeout_s: Seconds = 2400
    bench_level: Literal["core", "comprehensive"] = "core"
    # upstream: a FlagGems checkout's core_shapes.yaml, looked up as FlagGems does (provider flaggems_upstream)
    shape_mode: Literal["project", "subset", "upstream"] = "project"
    # A user's trace of real shapes (YAML, relative to the manifest or absolute): replaces ops/shapes for
    # builtin and flaggems, core_shapes.yaml (--shape_file) for flaggems_upstream; digested at prepare
    shape_file: Optional[PathText] = None
    tuner_cache: Literal["isolated", "shared"] = "isolated"
    # The most workloads one worker process runs in sequence (one side, one round:
    # `campaign.running.batching`); unset, the runner chooses (`batching.RUNNER_BOUND`),
    # and 1 runs one workload per process.
    workloads_per_process: Optional[Annotated[Count, Field(le=MAX_WORKLOADS_PER_PROCESS)]] = None
    # How many IR-pass processes (a screen's round 0: untimed, they compile and run rows once) run
    # at once on one card (`campaign.running.batching.lanes`); unset, the runner chooses; 1 runs them
    # one after another. Timed cells always run alone on their card.
    ir_pass_lanes: Optional[Annotated[Count, Field(le=MAX_IR_PASS_LANES)]] = None
    # configs pinned across roots: a screen's winners replayed by its campaign, so both time the same code
    autotune_from: Optional[AutotuneFrom] = None
    # pinned: round 1's baseline records and every other cell replays; per_side: every timed cell tunes
    # for itself, nothing replays (`campaign.contract.fields.TUNING_MODES` says which question each answers)
    tuning: Literal[TUNING_MODES] = "pinned"

    @model_validator(mode="after")
    def _per_side(self) -> "Defaults":
        if self.tuning != PER_SIDE:
            return self
        if self.tuner_cache == "shared":
            raise FieldError(("tuning",), "per_side: each side tunes into its own tuner store, and a shared "
                                          "tuner_cache hands one side the other's winners: use tuner_cache isolated")
        if self.autotune_from is not None:
            raise FieldError(("tuning",), "per_side: each side tunes for itself, and autotune_from replays another "
                                          "root's configs on every side: give one (pinned replays them)")
        return self


class Manifest(Model):
    schema_version: Annotated[Literal[1], BeforeValidator(integer_only)] = SCHEMA_VERSION
    campaign: CampaignId
    description: Annotated[str, StringConstraints(min_length=1)]
    sources: Sources
    device: Device
    switch: Switch
    timer: Timer = Timer()
    rounds: Rounds = Rounds()
    measured_launch_floor: Annotated[int, Field(strict=True, ge=0, le=1_000_000)] = 1
    # The smallest effect worth a claim, in percent (`campaign.judging.shaperule`): a shape moved only
    # by at least this much, and a G or R needs a geomean of at least this much. 0: every effect the
    # timing rule resolves counts (pyperf's compare_to --min-speed defaults to 0 % too).
    min_effect_pct: Annotated[float, Field(strict=True, ge=0, le=100, allow_inf_nan=False)] = 0.0
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
        if not platform(self.device.backend).executes and self.timer.kind == "graph":
            # Nothing is timed compile-only; graph would be a label with nothing behind it.
            raise FieldError(("timer", "kind"), f"graph needs an accelerator; a {self.device.backend} campaign times nothing: use event")
        if not platform(self.device.backend).executes and self.defaults.tuning == PER_SIDE:
            raise FieldError(("defaults", "tuning"), f"per_side tunes each side by timing its configs; a "
                                                     f"{self.device.backend} campaign times nothing (each side would "
                                                     "take its first config, which pinned does too): use pinned")
        if self.switch.ir_stage not in (stages := stages_of(self.device.target)):
            # sass, offline too, is nvdisasm over the cubin of a cuda target (ptxas and nvdisasm ship in Triton's wheel)
            raise FieldError(("switch", "ir_stage"), f"target {self.device.target} compiles to {', '.join(stages)}: "
                                                     f"no {self.switch.ir_stage}")
        return self

    def timeout_for(self, workload: Workload) -> int:
        return workload.timeout_s if workload.timeout_s is not None else self.defaults.timeout_s
