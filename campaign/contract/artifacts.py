"""File formats of a run root: the contract between prepare, the runner, the worker,
the plugins and everything that re-reads a sealed root.

Root layout::

    <root>/manifest.yaml          byte copy of the manifest prepared from
    <root>/matrix.json            `Matrix`: every task, frozen at prepare
    <root>/prepare.json           prepare receipt (digests taken before anything runs)
    <root>/status.tsv             one row per finished cell, append-only
    <root>/telemetry.tsv          device samples beside the run, joined to rows' timing windows
    <root>/cells/<workload>/r<k>/<cell>/   one folder per task (the task id is this path)
        task.json                 `CellPlan`, written by the runner before the worker starts
        result.json               `CellResult`, the one file the worker writes for the parent
        run.log                   the worker's own ANSI-free log: preflight, markers, notes
        stdout.log / stderr.log   the worker process's streams (pytest's output)
        run_identity.json         the cell's caliber (`campaign.plugins.run_identity`)
        rows.json                 `Rows`: one row per benchmark case
        outcomes.json             `Outcomes`: pytest outcome per correctness node
        autotune.json             `AutotuneFile`: what was recorded / replayed
        autotune-correctness.json `AutotuneFile` of the correctness session (same configs)
        phases.json               `Phases`: where the cell's seconds went (`campaign.worker.phases`)
        ir/<hash>-<kernel>.<stage> every compiled variant's stages
        ir/index.tsv              `INDEX_COLUMNS`: variant -> launch count
    <root>/batches/<nnnn>/        one worker process that ran several workloads (`BatchRecord`;
                                  only where the manifest allows ``workloads_per_process`` > 1)
        batch.json                `BatchRecord`, written by the runner before the process starts
        progress.tsv              the worker's ``start``/``end`` line per workload (`PROGRESS_COLUMNS`)
        stdout.log / stderr.log   the process's streams outside its workloads' own logs
    <root>/receipt.json           written at seal; the root is read-only afterwards

Every JSON file is canonical (`campaign.contract.canonical.dumps`) and carries
``schema_version``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Literal, Optional

from pydantic import BaseModel, ConfigDict, model_serializer

SCHEMA_VERSION = 1

# Marker names: a cell's run.log lines that changed how a row was measured, counted in
# result.json and status.tsv. Every module names them from here.
REPLAY_FALLBACK_MARKER = "AUTOTUNE_REPLAY_FALLBACK"     # a replaying cell tuned a key the recording lacked
FALLBACK_MARKER = "BENCHMARK_DIRECT_NO_CUDAGRAPH"        # a graph campaign's row timed direct
POISONED_MARKER = "BENCHMARK_CAPTURE_POISONED"           # a capture left the device context unusable
MARKERS = (REPLAY_FALLBACK_MARKER, FALLBACK_MARKER, POISONED_MARKER)
INDEX_COLUMNS = ("hash", "kernel", "launches", "stages")

MANIFEST_FILE = "manifest.yaml"
MATRIX_FILE = "matrix.json"
PREPARE_FILE = "prepare.json"
STATUS_FILE = "status.tsv"
TELEMETRY_FILE = "telemetry.tsv"
RECEIPT_FILE = "receipt.json"
LOCK_FILE = "run.lock"             # `campaign.running.lock`; not an artifact: the receipt leaves it out
CELLS_DIR = "cells"

TASK_FILE = "task.json"
RESULT_FILE = "result.json"
RUN_LOG = "run.log"
STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
IDENTITY_FILE = "run_identity.json"
FAILED_SUFFIX = ".failed"        # ir/<hash>-<kernel>.<stage>.failed: that stage could not be produced
# Inherited variables that decide which code a cell runs (modules, libraries, tools): each
# cell records the values it got, and the report shows them (an inherited PYTHONPATH runs
# its code in every worker).
CODE_PATH_VARIABLES = ("PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CUDA_HOME", "CUDA_PATH",
                       "MUSA_HOME", "MUSA_PATH", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH",
                       "TRITON_NVDISASM_PATH")
ROWS_FILE = "rows.json"
OUTCOMES_FILE = "outcomes.json"
AUTOTUNE_FILE = "autotune.json"
AUTOTUNE_CORRECTNESS_FILE = "autotune-correctness.json"
PHASES_FILE = "phases.json"
BATCHES_DIR = "batches"
BATCH_FILE = "batch.json"
PROGRESS_FILE = "progress.tsv"
# event is "start" or "end"; unix is time.time(), monotonic is time.monotonic() (one clock for
# every process of the machine); rc is the workload's exit status on "end", empty on "start".
PROGRESS_COLUMNS = ("event", "task_id", "unix", "monotonic", "rc")
IR_DIR = "ir"
INDEX_FILE = "index.tsv"


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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

    @model_serializer(mode="wrap")
    def _project_targets_unchanged(self, handler):
        # a project target's matrix.json and prepare.json keep the bytes they had before checkouts
        data = handler(self)
        if self.shape_file is None:
            data.pop("shape_file", None)
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
    cell: Literal["baseline", "control", "candidate"]
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


class Matrix(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    campaign: str
    backend: Literal["cuda", "musa", "cpu"]
    switch: str
    cells: tuple[str, ...]
    rounds: int
    tasks: tuple[Task, ...]


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
    pinned_env: dict[str, str]           # caliber settings set explicitly on every cell
    plugins: tuple[str, ...]             # module names, in plan order
    manifest_file: str                   # <root>/manifest.yaml (device, sources, timer, switch)
    harness_digest: str


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


class Preflight(Record):
    ok: bool
    interpreter: str
    checks: tuple[tuple[str, bool, str], ...]     # (name, ok, detail) in the order run
    failed_check: Optional[str] = None


class Correctness(Record):
    state: Literal["run", "not_run"]
    reason: Optional[str] = None         # why not run (compile-only backend, preflight, crash)
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0


class RowCounts(Record):
    ok: int = 0
    failed: int = 0
    compiled: int = 0                    # compile-only rows: launched for IR, not timed


class AutotuneSummary(Record):
    mode: Literal["record", "replay"]
    policy: Literal["measured", "first-config"]
    recorded: int = 0
    injected: int = 0
    tuning_runs: int = 0                 # configs benchmarked in this cell (replay wants 0)
    warmup_cold: int = 0                 # configs whose parallel compile failed: compiled inline


class CellResult(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    task_id: str
    rc: int                              # the worker's exit status: pytest's, 3 for preflight
    preflight: Preflight
    rows: RowCounts
    markers: dict[str, int]              # every name in MARKERS, zero included
    correctness: Correctness
    autotune: Optional[AutotuneSummary] = None
    ir_variants: int = 0
    launches: int = 0
    timed: bool                          # False on the compile-only backend: say so
    note: Optional[str] = None
    elapsed_s: float


class Row(Record):
    test: str                            # pytest node id
    function: str                        # pytest function name (the capture deny list's key)
    op: str
    shape: tuple[int, ...]
    dtype: str
    timer: Literal["event", "graph", "direct", "none"]
    latency_ms: Optional[float] = None
    status: Literal["ok", "failed", "compiled"]
    markers: tuple[str, ...] = ()
    fallback_phase: Optional[str] = None
    repeat: Optional[int] = None
    l2_flush: Optional[bool] = None
    error: Optional[str] = None
    # Wall-clock span (time.time()) of what the timer measured, first call's compile excluded:
    # the telemetry samples inside it judge the row's clocks (`campaign.judging.throttle`). None: not timed,
    # or written before windows were recorded.
    window_start_unix: Optional[float] = None
    window_end_unix: Optional[float] = None
    # reference: timed beside the measured rows (FlagGems' torch side), never paired (`campaign.judging.stats.keyed`)
    role: Literal["measured", "reference"] = "measured"


class Rows(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    rows: tuple[Row, ...]


class Outcome(Record):
    node: str
    outcome: Literal["passed", "failed", "error", "skipped"]
    detail: Optional[str] = None


class Outcomes(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    state: Literal["run", "not_run"]
    reason: Optional[str] = None
    outcomes: tuple[Outcome, ...]


class TunedConfig(Record):
    kwargs: dict[str, int | float | str | bool | None]
    num_warps: Optional[int] = None
    num_stages: Optional[int] = None
    num_ctas: Optional[int] = None
    maxnreg: Optional[int] = None


class AutotuneEntry(Record):
    tuner: Literal["triton", "libtuner"]
    kernel: str
    key: str                             # repr() of the tuner's cache key tuple
    config: TunedConfig


class WarmupEntry(Record):
    """One tuned key's parallel compile warm-up (`campaign.plugins.warmup`)."""

    kernel: str
    key: str
    configs: int                         # configs the tuner benchmarked for this key
    warmed: int
    cold: tuple[str, ...] = ()           # configs that did not warm, compiled inline by the benchmark


class AutotuneFile(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    mode: Literal["record", "replay"]
    policy: Literal["measured", "first-config"]
    source: Optional[str] = None
    entries: tuple[AutotuneEntry, ...]   # record: what was chosen; replay: what was injected
    fallbacks: tuple[AutotuneEntry, ...] = ()   # replay: keys tuned because the recording lacked them
    tuning_runs: int = 0
    session: Literal["benchmark", "correctness"] = "benchmark"
    warmup: tuple[WarmupEntry, ...] = ()


# Where a cell's seconds go, in the order they are spent; `campaign.worker.phases` says
# what each one includes. A cell written before phases existed has no phases.json.
PHASE_NAMES = ("start", "imports", "preflight", "compile", "tuning", "timing", "correctness", "write-out")


class Phase(Record):
    name: Literal[PHASE_NAMES]
    seconds: Optional[float] = None      # None: could not be measured here (the label says why)
    label: str                           # what the phase includes where its boundary is not exact


class Phases(Record):
    schema_version: Literal[1] = SCHEMA_VERSION
    task_id: str
    phases: tuple[Phase, ...]


def task_id(workload: str, round_number: int, cell: str) -> str:
    """The task id, which is also the cell folder's path under cells/."""
    return f"{workload}/r{round_number}/{cell}"


def cell_dir_name(task_id: str) -> str:
    return f"{CELLS_DIR}/{task_id}"


def cell_dir(root: Path, task_id: str) -> Path:
    return Path(root) / CELLS_DIR / task_id


# Names a folder takes beside one that must not be overwritten: ``<name><suffix><n>``.
INTERRUPTED_SUFFIX = ".interrupted-"     # an unfinished cell folder, kept and run again
RESCORE_SUFFIX = ".rescore-"             # a rescore of a sealed screen root, beside it


def first_free(name_for: Callable[[int], Path], take: Callable[[Path], None]) -> Path:
    """The first of ``name_for(1)``, ``name_for(2)``, ... that ``take`` claims.

    ``take`` raises FileExistsError for a name that is taken (``Path.mkdir`` does), so a
    name is claimed and checked in one step and two claimants never get the same one."""
    n = 1
    while True:
        path = name_for(n)
        try:
            take(path)
            return path
        except FileExistsError:
            n += 1
