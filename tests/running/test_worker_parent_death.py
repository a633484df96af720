"""The worker ends with its runner: a runner killed outright (SIGKILL to it alone, not its group)
takes its worker with it, and a worker whose runner died before it asked the kernel for that
runs nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runroots import by_id, fault, prepare, run, start_run
from taskplan import run_worker, write_plan

from campaign.contract import canonical
from campaign.contract.errors import WorkerExit


def _gone(pid: int) -> bool:
    """Dead, or a zombie nobody has reaped yet (the runner that would reap it is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.slow
def test_a_runner_killed_outright_takes_its_worker_with_it(tmp_path: Path):
    # slow: the fast suite holds this claim in tests/running/test_runner_resume.py
    # (test_runner_killed_mid_cell_then_run_again_completes kills its runner outright mid-cell, and the
    # takeover that follows finds no orphaned worker group to end); here the worker is watched die itself
    root = prepare(tmp_path, [fault("slow", "test_bench_wait")])
    proc = start_run(root)
    worker = None
    try:
        log = root / "cells" / "slow" / "r1" / "candidate" / "run.log"
        deadline = time.monotonic() + 120
        while not (log.is_file() and "benchmark: pytest" in log.read_text(encoding="utf-8")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        worker = canonical.read_json(root / "run.lock")["worker_pgid"]
        assert not _gone(worker)
        proc.kill()          # SIGKILL to the runner alone: it ends nothing itself
        proc.communicate()
        deadline = time.monotonic() + 5
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(worker), "the worker outlived its runner"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if worker is not None and not _gone(worker):
            os.kill(worker, 9)
    again = run(root)   # the stale lock is taken over; the cell runs again and the root seals
    assert again.returncode == 0, again.stderr
    assert by_id(root)["slow/r1/candidate"].rc_name == "ok"


def test_a_worker_whose_runner_is_already_gone_runs_nothing(tmp_path: Path):
    plan = write_plan(tmp_path / "root")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    (tmp_path / "root" / "run.lock").write_text(json.dumps({"pid": dead_pid, "host": "h", "started_utc": "t"}))
    proc = run_worker(plan, dict(os.environ))
    assert proc.returncode == WorkerExit.REFUSED, proc.stderr
    assert (f"worker: run.lock names runner pid {dead_pid}, this worker's parent is pid {os.getpid()}: "
            "the runner that started it is gone; the cell is not run") in proc.stderr
    cell_dir = Path(plan.cell_dir)
    assert not (cell_dir / "result.json").exists() and not (cell_dir / "run.log").exists()

    # The same cell under a lock that names its parent runs.
    (tmp_path / "root" / "run.lock").write_text(json.dumps({"pid": os.getpid(), "host": "h", "started_utc": "t"}))
    ran = run_worker(plan, dict(os.environ))
    assert ran.returncode == 0, ran.stderr
    assert (cell_dir / "result.json").is_file()
