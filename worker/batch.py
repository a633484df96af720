"""``python -m campaign.worker --batch BATCH_JSON``: the workloads of one batch, in order, in this process.

batch.json is `campaign.contract.plans.BatchRecord`, written by the runner beside the
progress file this appends to (`campaign.running.batching`: a ``start`` line before a
workload, an ``end`` line with its rc after its result.json). Each workload is one cell
exactly as a single-cell worker runs it (`campaign.worker.runcell.run_cell`): its task.json
in, its own folder's run.log, stdout.log and stderr.log (this process's descriptors 1 and 2
point there while it runs), phases.json and result.json out.

What one process cannot give each workload, and what is done about it:

- Triton's in-memory kernels: a kernel an earlier workload compiled fires no compile event
  again; `campaign.plugins.ir_capture` keeps a process-wide record of loaded variants and
  writes each into the index of the workload that launches it.
- the tuners' in-memory choices: every Triton ``Autotuner`` cache held in a plain dict is
  emptied before each later workload, so it tunes (or replays) its keys as a fresh process
  would. FlagGems' LibTuner store (its sqlite under FLAGGEMS_CACHE_DIR) is emptied too, row
  by row, where the cell's tuner cache is isolated (`campaign.worker.tunerstore`; run.log
  says so, or says it could not be done); a shared one is left as it is. The run identity
  records what the store held at the workload's start (``tuner_store_at_start``).
- device memory: what torch's caching allocator kept from earlier workloads is given back to the
  card before each later one (`release_device_memory`, run.log says how much).
- imported modules (the project's workload files, torch, triton, flag_gems) stay loaded:
  that is the saving.
- ``sys.argv`` is a single-cell worker's (``[worker, task.json, result.json]``) during each
  workload, for code written against that protocol.

From a side's shared queue (``queue`` in batch.json: a screen's IR pass in lanes), the process
claims each workload before it runs it (`claimed`), so the side's processes share its workloads
as they come free and one long workload holds up no other; it runs each with the caches batch.json
names (its own, fresh), which its environment was started with.

The process exits 0 after its last workload; each workload's status is its own ``end`` line.
"""
from __future__ import annotations

import gc
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from campaign.contract import faults
from campaign.contract.artifacts import PROGRESS_FILE, RESULT_FILE, STDERR_LOG, STDOUT_LOG, TASK_FILE, claim
from campaign.contract.canonical import read_json
from campaign.contract.errors import WorkerExit
from campaign.contract.plans import BatchRecord, CellPlan
from campaign.contract.progresslines import event_line
from campaign.contract.runroot import RunRoot
from campaign.worker import lifeline, tunerstore
from campaign.worker.runcell import run_cell


def mark(progress: Path, kind: str, task_id: str, rc=None) -> None:
    """One whole line in one write: the runner never reads half an event as a whole one."""
    line = event_line(kind, task_id, time.time(), time.monotonic(), rc).encode("utf-8")
    fd = os.open(progress, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


@contextmanager
def cell_streams(folder: Path) -> Iterator[None]:
    """Descriptors 1 and 2 into the cell's own stdout.log and stderr.log, as a single-cell worker's are."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(folder / STDOUT_LOG, "xb") as out, open(folder / STDERR_LOG, "xb") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        os.close(saved[0])
        os.close(saved[1])


def reset_tuners() -> int:
    """Empty every in-memory Triton tuner cache (plain dicts only); how many held something."""
    from triton.runtime.autotuner import Autotuner

    emptied = 0
    for obj in gc.get_objects():
        if isinstance(obj, Autotuner) and type(getattr(obj, "cache", None)) is dict and obj.cache:
            obj.cache.clear()
            emptied += 1
    return emptied


def _isolated(folder: Path) -> bool:
    """The cell's tuner cache mode, from its task file; an unreadable one is left to run_cell to refuse."""
    try:
        return CellPlan.model_validate(read_json(folder / TASK_FILE)).tuner_cache == "isolated"
    except (OSError, ValueError):   # pydantic's ValidationError is a ValueError
        return False


def claimed(record: BatchRecord) -> Iterator[str]:
    """The workloads this process runs: its ``tasks`` in order; from a side's queue, each one it
    claims as it comes to it, at most ``bound`` (the others' claims are skipped)."""
    if record.queue is None:
        yield from record.tasks
        return
    taken = 0
    for task_id in record.tasks:
        if record.bound is not None and taken >= record.bound:
            return
        if claim(Path(record.queue), task_id, record.id):
            taken += 1
            yield task_id


def release_device_memory() -> str:
    """What an earlier workload left in torch's caching allocator, given back to the card before the
    next one: a later workload's memory does not depend on which ran before it in its process. The
    whole-suite screen's IR pass on the H200 (14 lanes, one card) lost add, sub, mul, div, eq and
    fused_add_rms_norm, each a batch process's second or later workload, where the same items ended ok
    offline. Nothing where torch.cuda is not started, or answers as the card offline
    (`campaign.plugins.flaggems_offline`: a query would start the host's own card, where it has one)."""
    from campaign.plugins import flaggems_offline

    torch = sys.modules.get("torch")
    if torch is None or flaggems_offline.ACTIVE is not None or not torch.cuda.is_initialized():
        return "device memory: nothing to release (no card started in this process)"
    gc.collect()
    before = torch.cuda.memory_reserved()
    torch.cuda.empty_cache()
    return (f"device memory: {(before - torch.cuda.memory_reserved()) / 2**20:.1f} MiB the earlier workloads "
            "cached given back before this one")


def run(batch_path: Path, started: float, notes: list[str]) -> int:
    try:
        record = BatchRecord.model_validate(read_json(batch_path))
    except Exception as exc:        # nothing names the cells: the runner's rows say no result
        print(f"{batch_path}: not a readable batch file: {type(exc).__name__}: {exc}", file=sys.stderr)
        return WorkerExit.USAGE
    root = RunRoot(Path(record.root))
    gone = lifeline.orphaned(root)
    if gone:
        print(f"worker: {gone}; the batch is not run", file=sys.stderr)
        return WorkerExit.REFUSED
    progress = batch_path.parent / PROGRESS_FILE
    argv0 = sys.argv[0]
    caches = (record.triton_cache_dir, record.tuner_cache_dir) if record.queue is not None else None
    for position, task_id in enumerate(claimed(record)):
        folder = root.cell(task_id)
        of = (f"of {len(record.tasks)} " if record.queue is None
              else f"(claimed from queue {Path(record.queue).name}) ")
        here = [*notes, f"batch {record.id}: workload {position + 1} {of}in this process"
                + (f" (continues batch {record.continues})" if record.continues and position == 0 else "")]
        if position:
            here.append(f"{reset_tuners()} in-memory tuner caches emptied before this workload")
            here.append(release_device_memory())
            if _isolated(folder):
                here.append(tunerstore.reset_note())
        mark(progress, "start", task_id)
        sys.argv = [argv0, str(folder / TASK_FILE), str(folder / RESULT_FILE)]
        with cell_streams(folder):
            rc = run_cell(folder / TASK_FILE, folder / RESULT_FILE, started if position == 0 else time.monotonic(),
                          here, first_in_process=position == 0, caches=caches)
        try:
            mark(progress, "end", task_id, rc)
        except OSError:
            if rc != faults.EXIT_WRITE_FAULT:
                raise
        if rc == faults.EXIT_WRITE_FAULT:     # the run stops on it: this process's exit says it too
            return rc
    return WorkerExit.OK
