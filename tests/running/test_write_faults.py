"""A write fault met inside a cell's worker -- the scratch dir full under Triton's cache -- stops the run named (``RUN_FAILED check=disk|write``, the path, exit 1), never
a traceback and never a final row: the cell that met it has no status row, the root stays unsealed,
and `campaign run ROOT` runs that cell again and seals.

How it is staged: the full disk is armed by a file beside the root that the fixture's candidate
reads (it raises the ENOSPC a full disk gives; a real full disk needs a mount).
"""
from __future__ import annotations

from pathlib import Path

from runroots import fault, prepare, rows, run

from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK, EXIT_REFUSED

ADD = fault("add", "test_bench_noop")
CELL = "full/r1/candidate"


def _stopped_named(done, check: str, where: str, error: str) -> None:
    assert done.returncode == EXIT_REFUSED, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"RUN_FAILED check={check}: {where}: {error}" in done.stderr, done.stderr
    assert "the cell it stopped has none and runs again" in done.stderr


def _resumed(root: Path, before: list[str]) -> None:
    """No row for the faulted cell, unsealed; resume re-runs it (its first folder kept aside) and seals."""
    assert CELL not in before and not (root / "receipt.json").exists() and not (root / "run.lock").exists()
    again = run(root)
    assert again.returncode == EXIT_OK, again.stderr
    after = [row.task_id for row in rows(root)]
    assert after[:len(before)] == before and after.count(CELL) == 1
    assert {row.task_id: row for row in rows(root)}[CELL].rc_name == "ok"
    assert (root / "cells" / "full" / "r1" / "candidate.interrupted-1").is_dir()
    assert (root / "receipt.json").is_file()


def test_a_full_scratch_dir_in_a_worker_stops_the_run_named_and_the_cell_runs_again(tmp_path: Path):
    # full's own baseline is the cell finished before the fault, softmax the workload after it: a clean
    # workload before them as well (add) cost two processes and showed nothing more, one process a cell
    root = prepare(tmp_path, [fault("full", "test_bench_disk_full"), ADD.replace("add", "softmax")], per_process=1)
    armed = root.parent / "disk-full"
    armed.touch()
    done = run(root)
    task = canonical.read_json(root / "cells" / "full" / "r1" / "candidate" / "task.json")
    _stopped_named(done, "disk", f"{task['triton_cache_dir']}/kernel.cubin", "No space left on device (ENOSPC)")
    assert f"free space, then `campaign run {root}` resumes" in done.stderr
    before = [row.task_id for row in rows(root)]
    assert before == ["full/r1/baseline"]   # nothing after it ran
    armed.unlink()
    _resumed(root, before)


def test_a_full_scratch_dir_in_a_batch_stops_the_run_named(tmp_path: Path):
    root = prepare(tmp_path, [ADD, fault("full", "test_bench_disk_full"), ADD.replace("add", "softmax")],
                   per_process=3)
    armed = root.parent / "disk-full"
    armed.touch()
    done = run(root)
    assert done.returncode == EXIT_REFUSED and "Traceback" not in done.stderr, done.stderr
    assert "RUN_FAILED check=disk: " in done.stderr and "kernel.cubin: No space left on device (ENOSPC)" in done.stderr
    before = [row.task_id for row in rows(root)]
    armed.unlink()
    _resumed(root, before)
