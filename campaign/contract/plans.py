"""What the parent writes before a cell runs: the matrix (matrix.json), one cell's plan
(task.json) and one batch's record (batch.json). `campaign.contract.artifacts` says where
each file lives; `campaign.contract.cellfiles` holds what the cell writes back.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import model_serializer

from campaign.contract.artifacts import SCHEMA_VERSION, Record
from campaign.contract.fields import IR_STAGES, PINNED, TUNING_MODES, Cell
from campaign.contract.manifest import Device, Pin, Timer
from campaign.contract.platforms import BACKEND_NAMES
from campaign.contract.rootrecords import InstalledCode

# A screen's IR pass: the round before the timed ones (`campaign.planning.matrix`).
IR_ROUND = 0


class Targets(Record):
    benchmark: str                       # "path.py::function", relative to the project root
    correctness: str                     # "path.py" or "path.py::function"
    correctness_node_ids: Optional[tuple[str, ...]] = None
    correctness_k: Optional[str] = None
    # A FlagGems checkout's items (`campaign.planning.checkout`): targets are absolute paths in it,
    # pytest's rootdir is it, and each session's own options (-m op, --level, --mode) are recorded here.
    checkout: Optional[str] = None
    benchmark_options: tuple[str, ...] = ()
    correctness_options: tuple[str, ...] = ()
    # the campaign's own shape file (defaults.shape_file), absolute; None: ops/shapes or the checkout's
    shape_file: Optional[str] = None
    # A test file of the user's own (`campaign.planning.ownfile`): targets are absolute, pytest's
    # rootdir is its own, and the data files it reads (absolute) are digested with it.
    rootdir: Optional[str] = None
    data: tuple[str, ...] = ()

    @model_serializer(mode="wrap")
    def _project_targets_unchanged(self, handler):
        # a project target's matrix.json and prepare.json keep the bytes they had before checkouts
        data = handler(self)
        for key, unset in (("shape_file", None), ("rootdir", None), ("data", ())):
            if getattr(self, key) == unset:
                data.pop(key, None)
        if self.checkout is None:
            for key in ("checkout", "benchmark_options", "correctness_options"):
                data.pop(key, None)
        return data


class Autotune(Record):
    mode: Literal["record", "replay"]
    source: Optional[str] = None         # task id whose autotune.json is replayed
    policy: Literal["measured", "first-config"]   # first-config: compile-only, nothing to time


class Task(Record):
    """One cell of the matrix: a workload under one cell env in one round."""

    id: str                              # "<workload>/r<round>/<cell>"
    order: int                           # position in the run order (canaries first)
    round: int
    cell: Cell
    workload: str
    op: str
    provider: Literal["builtin", "flaggems", "pytest", "flaggems_upstream"]
    canary: bool
    env: dict[str, str]                  # the cell's switch env
    autotune: Autotune
    timeout_s: int
    targets: Targets
    dtypes: tuple[str, ...]
    shapes: Optional[tuple[str, ...]] = None   # None: the op's full set at the bench level
    # The dtypes the correctness session keeps, where the manifest narrows the workload's dtypes
    # (the benchmark measures those alone); None keeps every node it selects.
    correctness_dtypes: Optional[tuple[str, ...]] = None
    # False: a screen's IR pass (round 0): each benchmark row runs once, so it compiles and its IR is
    # captured, nothing is timed and correctness is not run (`campaign.planning.matrix`).
    timed: bool = True

    @model_serializer(mode="wrap")
    def _unnarrowed_unchanged(self, handler):
        # a task without narrowing, and a timed one, keeps the bytes matrix.json had before the fields existed
        data = handler(self)
        if self.correctness_dtypes is None:
            data.pop("correctness_dtypes", None)
        if self.timed:
            data.pop("timed", None)
        return data


class CellTerms(Record):
    """What a cell reads of its campaign's manifest, frozen into matrix.json at prepare: the
    worker and its plugins read these, never manifest.yaml, so matrix.json alone says how
    every cell of the campaign was run."""

    device: Device
    triton: Pin                          # sources: the versions preflight compares
    torch: Optional[Pin] = None
    flag_gems: Optional[Pin] = None
    timer: Timer
    bench_level: Literal["core", "comprehensive"]
    shape_mode: Literal["project", "subset", "upstream"]
    ir_stage: Literal[IR_STAGES]
    autotune_from: Optional[str] = None  # receipt sha256 of the sealed root whose configs every cell replays
    # the manifest's defaults.tuning: per_side, every timed cell records its own winners (written only then:
    # a pinned matrix keeps the bytes it had before the mode existed)
    tuning: Literal[TUNING_MODES] = PINNED

    @model_serializer(mode="wrap")
    def _pinned_unchanged(self, handler):
        data = handler(self)
        if self.tuning == PINNED:
            data.pop("tuning", None)
        return data


class Stopping(Record):
    """The manifest's adaptive rounds (``rounds.stop: decided``), frozen into matrix.json: the runner
    times a workload's rounds after ``min`` only while `campaign.judging.stopping` finds its answer
    undecided, and the judge spends the test's level over the same looks."""

    min: int
    max: int


class Matrix(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    campaign: str
    backend: Literal[BACKEND_NAMES]
    switch: str
    cells: tuple[str, ...]
    rounds: int
    tasks: tuple[Task, ...]
    terms: Optional[CellTerms] = None    # None: a root prepared before the matrix carried them
    # A screen with an IR pass (round 0) times round 1 only where round 0's IR differs; True
    # (`campaign screen --time-unchanged`) times every workload's round 1 regardless.
    time_unchanged: bool = False
    # The manifest's rounds policy, frozen here so a resumed run follows what was prepared, not
    # a later edit of the root's manifest copy. True (every root before it was recorded here: the
    # manifest's default) rounds after the first run only where round 1's IR differs.
    later_only_if_ir_changed: bool = True
    stopping: Optional[Stopping] = None  # None: fixed rounds (every root before adaptive rounds)
    # The manifest's process defaults, frozen here so the runner reads the plan, not the root's manifest
    # copy: whether a side's cells share one tuner store, and the most workloads one process runs
    # (`campaign.running.batching.bound`; None: the runner's choice), how many IR-pass processes run at
    # once on one card (`campaign.running.batching.lanes`; None: the runner's choice). A root prepared
    # before they were recorded here reads the defaults.
    tuner_cache: Literal["isolated", "shared"] = "isolated"
    workloads_per_process: Optional[int] = None
    ir_pass_lanes: Optional[int] = None

    @model_serializer(mode="wrap")
    def _old_roots_unchanged(self, handler):
        data = handler(self)
        if self.terms is None:
            data.pop("terms", None)
        if not self.time_unchanged:
            data.pop("time_unchanged", None)
        if self.later_only_if_ir_changed:
            data.pop("later_only_if_ir_changed", None)
        if self.stopping is None:
            data.pop("stopping", None)
        if self.tuner_cache == "isolated":
            data.pop("tuner_cache", None)
        if self.workloads_per_process is None:
            data.pop("workloads_per_process", None)
        if self.ir_pass_lanes is None:
            data.pop("ir_pass_lanes", None)
        return data


class CellPlan(Record):
    """task.json: a task plus everything the runner decided for this execution."""

    schema_version: Literal[1] = SCHEMA_VERSION
    task: Task
    project_root: str                    # where targets, ops/ and the harness live
    root: str                            # the run root
    cell_dir: str
    replay_file: Optional[str] = None    # absolute path of the recording when replaying
    triton_cache_dir: str
    tuner_cache_dir: str
    tuner_cache: Literal["isolated", "shared"]
    # nvdisasm's output by cubin, shared by the run's cells (`campaign.plugins.disassembly.SassStore`: a
    # pure function of the cubin and the tool, so no cell's evidence depends on another's); None: each
    # cell disassembles its own
    sass_cache_dir: Optional[str] = None
    pinned_env: dict[str, str]           # caliber settings set explicitly on every cell
    plugins: tuple[str, ...]             # module names, in plan order
    terms: CellTerms                     # the matrix's: device, pins, timer, bench level, IR stage
    harness_digest: str
    # prepare's record of the installed packages and start-up code, which preflight checks; None: a
    # root prepared before it was taken
    installed: Optional[InstalledCode] = None


class BatchRecord(Record):
    """batch.json: the workloads one worker process runs, in order, all of one round and cell.

    ``planned`` is the batch as the runner chose it; ``tasks`` what this process was given
    (the planned ones not settled yet); ``continues`` names the process of the same batch
    that ended before its last workload (a timeout, a crash), whose unfinished rest this runs."""

    schema_version: Literal[1] = SCHEMA_VERSION
    id: str                              # the folder name under batches/
    root: str
    round: int
    cell: str
    planned: tuple[str, ...]
    tasks: tuple[str, ...]
    continues: Optional[str] = None
    # the bound the batches were cut by, and who chose it (`campaign.running.batching.bound`);
    # absent from roots run before the runner chose it
    bound: Optional[int] = None
    bound_by: Optional[Literal["manifest", "runner"]] = None
    # A side's shared queue (a screen's IR pass in lanes, `campaign.running.sidequeue`): ``tasks``
    # are the side's workloads this process may claim, in order; it claims one by creating its file
    # under ``queue`` (`campaign.contract.artifacts.claim_file`: first come, first served among the
    # side's processes), at most ``bound`` of them, and runs each with this process's own caches
    # (``triton_cache_dir``, ``tuner_cache_dir``), which are fresh for every process, in place of
    # those task.json names. None: ``tasks`` are this process's, run in order.
    queue: Optional[str] = None
    triton_cache_dir: Optional[str] = None
    tuner_cache_dir: Optional[str] = None
