"""File formats of a run root: the contract between prepare, the runner, the worker,
the plugins and everything that re-reads a sealed root.

Root layout::

    <root>/manifest.yaml          byte copy of the manifest prepared from
    <root>/matrix.json            `Matrix`: every task and the cells' terms, frozen at prepare
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
        offline.json              `OfflineTrust`: what made an offline cell's IR untrustworthy (cpu backend, FlagGems)
        ir/<hash>-<kernel>.<stage> every compiled variant's stages
        ir/index.tsv              `INDEX_COLUMNS`: variant -> launch count
    <root>/batches/<nnnn>/        one worker process that ran several workloads (`BatchRecord`;
                                  only where the manifest allows ``workloads_per_process`` > 1)
        batch.json                `BatchRecord`, written by the runner before the process starts
        progress.tsv              the worker's ``start``/``end`` line per workload (`PROGRESS_COLUMNS`)
        stdout.log / stderr.log   the process's streams outside its workloads' own logs
    <root>/receipt.json           written at seal; the root is read-only afterwards

Every JSON file is canonical (`campaign.contract.canonical.dumps`) and carries
``schema_version``. The models: `campaign.contract.plans` for what the parent writes
before a cell runs, `campaign.contract.cellfiles` for what the cell writes.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict

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
OFFLINE_FILE = "offline.json"
BATCHES_DIR = "batches"
BATCH_FILE = "batch.json"
PROGRESS_FILE = "progress.tsv"
# A side's shared queue of IR-pass workloads (`campaign.running.sidequeue`): batches/queue-<nnnn>/,
# one claim file per workload a process claimed, holding that process's batch id.
QUEUE_PREFIX = "queue-"
# event is "start" or "end"; unix is time.time(), monotonic is time.monotonic() (one clock for
# every process of the machine); rc is the workload's exit status on "end", empty on "start".
PROGRESS_COLUMNS = ("event", "task_id", "unix", "monotonic", "rc")
IR_DIR = "ir"
INDEX_FILE = "index.tsv"


class Record(BaseModel):
    """The base of every file model: the plans (`campaign.contract.plans`), what a cell writes
    (`campaign.contract.cellfiles`) and the root's records."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def task_id(workload: str, round_number: int, cell: str) -> str:
    """The task id, which is also the cell folder's path under cells/."""
    return f"{workload}/r{round_number}/{cell}"


def cell_dir_name(task_id: str) -> str:
    return f"{CELLS_DIR}/{task_id}"


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


def claim_file(queue: Path, task_id: str) -> Path:
    """Where a queued workload's claim lives: its task id with "/" spelt "__"."""
    return Path(queue) / task_id.replace("/", "__")


def claim(queue: Path, task_id: str, batch_id: str) -> bool:
    """Claim a queued workload for batch ``batch_id``: its claim file, whole from the first moment
    (written aside, then linked: a link fails where the name exists), names the batch. False: taken."""
    aside = Path(queue) / f".{batch_id}-{os.getpid()}-{threading.get_ident()}.tmp"
    aside.write_text(batch_id, encoding="utf-8")
    try:
        os.link(aside, claim_file(queue, task_id))
    except FileExistsError:
        return False
    finally:
        aside.unlink()
    return True


def claimed_by(queue: Path, task_id: str) -> Optional[str]:
    """The batch that claimed a queued workload; None: unclaimed."""
    try:
        return claim_file(queue, task_id).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def claims(queue: Path) -> dict[str, str]:
    """Every claim of a queue as it stands: claim file name -> the batch it names. A claim still being
    written aside (its dot name, `claim`) is not one yet; one given back between the listing and the
    read is gone."""
    found: dict[str, str] = {}
    with os.scandir(queue) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                found[entry.name] = Path(entry.path).read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
    return found


def set_aside(folder: Path) -> Path:
    """Move an unfinished cell folder to ``<cell>.interrupted-<n>``, the first free n."""
    def move(target: Path) -> None:
        # rename() would replace an empty folder of that name: a taken name is refused first
        if os.path.lexists(target):
            raise FileExistsError(target)
        folder.rename(target)
    return first_free(lambda n: folder.with_name(f"{folder.name}{INTERRUPTED_SUFFIX}{n}"), move)
