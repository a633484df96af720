"""Resume, interruption and the lock, with the runner as a real process stopped mid-cell."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_cli
from runroots import by_id, demo, fault, manifest, prepare, rows, run, start_run, wait_until

from campaign.contract import canonical, rownotes, status
from campaign.judging import screentable

WAIT_CELL = ("slow", "r1", "candidate")
# a screen waits first in its untimed IR pass (round 0), where the candidate runs the same benchmark
SCREEN_WAIT_CELL = ("slow", "r0", "candidate")


def _wait_for(path: Path, proc) -> None:
    wait_until(path.exists, proc, f"{path}")


def _row_ids(root: Path) -> set[str]:
    """The task ids with a row so far (none before the ledger exists; a line being written is not read)."""
    return {row.task_id for row in status.read(root / "status.tsv")[0]}


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): canonical.sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _worker_pgid(root: Path) -> int:
    return canonical.read_json(root / "run.lock")["worker_pgid"]


def _end_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def started():
    """Runners started by a test, and worker groups it saw: none outlives the test."""
    procs, groups = [], []
    yield procs, groups
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    for pgid in groups:
        _end_group(pgid)


def test_runner_killed_mid_cell_then_run_again_completes(tmp_path: Path, started):
    # cells that compile nothing around the stopped one: the claim is the lock and the resume, the same for any
    # cell. One process a side (add, slow, softmax): the stop comes once the candidate's add has its row.
    root = prepare(tmp_path, [fault("add", "test_bench_noop"), fault("slow", "test_bench_wait"),
                              fault("softmax", "test_bench_noop")])
    proc = start_run(root)
    started[0].append(proc)
    cell = root / "cells" / Path(*WAIT_CELL)
    wait_until(lambda: "add/r1/candidate" in _row_ids(root), proc, "add/r1/candidate's row")
    time.sleep(1.0)  # let the worker reach the waiting benchmark
    pgid = _worker_pgid(root)
    started[1].append(pgid)

    # While it runs, a second run on the same root is refused by the lock.
    second = run(root)
    assert second.returncode == 1
    assert "RUN_REFUSED check=lock: another run holds this root: pid" in second.stderr

    before_rows = (root / "status.tsv").read_text()
    finished = {name: _digests(root / "cells" / "add" / "r1" / name) for name in ("baseline", "candidate")}
    proc.kill()  # SIGKILL: no chance to clean up; the worker is orphaned, the lock goes stale
    proc.communicate()
    assert (root / "run.lock").exists()

    again = run(root)
    assert again.returncode == 0, again.stderr
    assert f"RUN_LOCK stale lock taken over: pid {proc.pid}" in again.stderr
    # The worker ended with its runner (parent-death signal): no orphan was left for the takeover to end.
    assert "RUN_LOCK ended the orphaned worker group" not in again.stderr
    # Finished rows are byte-identical and first; finished cells untouched; the unfinished cell kept aside.
    assert (root / "status.tsv").read_text().startswith(before_rows)
    for name, digests in finished.items():
        assert _digests(root / "cells" / "add" / "r1" / name) == digests
    aside = cell.with_name("candidate.interrupted-1")
    assert (aside / "task.json").is_file()
    assert by_id(root)["slow/r1/candidate"].rc_name == "ok"
    assert [row.task_id for row in rows(root)].count("add/r1/baseline") == 1
    assert (root / "receipt.json").is_file()


def test_sigint_records_interrupted_and_run_again_reruns_it(tmp_path: Path, started):
    root = prepare(tmp_path, [fault("slow", "test_bench_wait")])
    proc = start_run(root)
    started[0].append(proc)
    _wait_for(root / "cells" / Path(*WAIT_CELL) / "task.json", proc)
    time.sleep(1.0)
    pgid = _worker_pgid(root)
    started[1].append(pgid)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "RUN_INTERRUPTED: SIGINT" in err
    # The count does not step back: the interrupted cell ends at the position it started at.
    assert "[2/2] start slow/r1/candidate" in out and "[2/2] end slow/r1/candidate: rc=130 interrupted" in out
    interrupted = rows(root)[-1]
    assert (interrupted.task_id, interrupted.rc, interrupted.rc_name) == ("slow/r1/candidate", 130, "interrupted")
    assert not interrupted.finished
    try:
        os.killpg(pgid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive, "the interrupted cell's process group outlived the runner"
    assert not (root / "run.lock").exists() and not (root / "receipt.json").exists()

    again = run(root)
    assert again.returncode == 0, again.stderr
    history = [(row.task_id, row.rc_name) for row in rows(root)]
    assert history == [("slow/r1/baseline", "ok"), ("slow/r1/candidate", "interrupted"),
                       ("slow/r1/candidate", "ok")]
    assert (root / "cells" / "slow" / "r1" / "candidate.interrupted-1" / "stdout.log").is_file()


def test_an_interrupted_screen_is_resumed_by_the_screen_and_sealed_with_its_table(tmp_path: Path, started):
    # the finished canary compiles nothing: what is kept and resumed is any finished cell's folder
    path = manifest(tmp_path, [fault("add", "test_bench_noop", canary=True), fault("slow", "test_bench_wait")],
                    campaign="screen-resume")
    proc = subprocess.Popen([sys.executable, "-m", "campaign", "screen", str(path), "--runs-dir", str(tmp_path / "runs"),
                             "--grace", "1", "--scratch-dir", str(tmp_path)],
                            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started[0].append(proc)
    root = wait_until(lambda: next((tmp_path / "runs").glob("screen-resume-screen-*"), None), proc, "the root", 60)
    _wait_for(root / "cells" / Path(*SCREEN_WAIT_CELL) / "task.json", proc)
    time.sleep(1.0)
    started[1].append(_worker_pgid(root))
    finished = _digests(root / "cells" / "add")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"`campaign screen --resume {root}` re-runs the interrupted cell" in err
    assert "(add --emit-manifest FILE there if a manifest should be emitted)" in err   # it is not remembered
    assert not (root / "screen.tsv").exists() and not (root / "receipt.json").exists()

    refused = run(root)
    assert refused.returncode == 1 and "RUN_REFUSED check=mode" in refused.stderr
    assert f"campaign screen --resume {root}" in refused.stderr
    both = run_cli("screen", path, "--resume", root)
    assert both.returncode == 2 and "give one of" in both.stderr and "MANIFEST and --resume" in both.stderr

    resumed = run_cli("screen", "--resume", root, "--grace", "1", "--scratch-dir", tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip().splitlines()[-1] == str(root / "screen.tsv")
    assert _digests(root / "cells" / "add") == finished, "finished cells are kept as they were"
    assert (root / "cells" / "slow" / "r0" / "candidate.interrupted-1" / "task.json").is_file()
    table = {r["workload"]: r for r in screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))}
    assert set(table) == {"add", "slow"} and table["slow"]["rc_candidate"] == "0"
    assert run_cli("verify", root).returncode == 0

    again = run_cli("screen", "--resume", root)
    assert again.returncode == 2 and "SCREEN_REFUSED check=sealed" in again.stderr
    campaign_root = prepare(tmp_path, [demo("add")], campaign="plain")
    wrong = run_cli("screen", "--resume", campaign_root)
    assert wrong.returncode == 2 and "SCREEN_REFUSED check=screen_root" in wrong.stderr
    assert "`campaign run ROOT`" in wrong.stderr


def _zombie(pid: int, limit: float = 30) -> None:
    """Wait until ``pid`` has died (a zombie until its parent, the runner, reaps it) or is gone."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return
        except FileNotFoundError:
            return
        time.sleep(0.001)
    raise AssertionError(f"{pid} did not die")


def test_a_cell_killed_by_a_signal_as_the_runner_stops_is_run_again_on_resume(tmp_path: Path, started):
    root = prepare(tmp_path, [fault("slow", "test_bench_wait")])
    proc = start_run(root)
    started[0].append(proc)
    log = root / "cells" / Path(*WAIT_CELL) / "run.log"
    wait_until(lambda: log.is_file() and "benchmark: pytest" in log.read_text(encoding="utf-8"), proc,
               "the worker's benchmark")
    worker = _worker_pgid(root)
    started[1].append(worker)
    os.kill(worker, signal.SIGKILL)
    _zombie(worker)
    # the runner records the death before it is stopped (else the stop, not the kill, is what it saw)
    wait_until(lambda: any(row.task_id == "slow/r1/candidate" for row in rows(root)), proc,
               "the killed cell's row", 60, poll_s=0.05)
    proc.send_signal(signal.SIGINT)   # the runner stops before, or while, it runs the killed cell again
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    first = [row for row in rows(root) if row.task_id == "slow/r1/candidate"]
    assert (first[0].rc, first[0].rc_name) == (137, "signal_SIGKILL")
    assert "slow/r1/candidate" not in status.settled(rows(root))

    again = run(root)
    assert again.returncode == 0, again.stderr
    history = [row.rc_name for row in rows(root) if row.task_id == "slow/r1/candidate"]
    assert history[0] == "signal_SIGKILL" and history[-1] == "ok" and history.count("signal_SIGKILL") == 1
    assert (root / "receipt.json").is_file()


def _row(task_id: str, name: str, rc=None) -> status.StatusRow:
    return status.StatusRow(task_id, 1, "w", "baseline", rc, name)


def test_a_first_death_by_a_signal_is_retried_once_and_a_second_is_final():
    kill, segv = _row("w/r1/baseline", "signal_SIGKILL", 137), _row("w/r1/baseline", "signal_SIGSEGV", 139)
    ok, stopped = _row("w/r1/baseline", "ok", 0), _row("w/r1/baseline", status.INTERRUPTED, 130)
    assert status.settled([kill]) == {}
    assert status.settled([kill, stopped]) == {}                 # the retry was interrupted: still due
    assert status.settled([kill, ok]) == {"w/r1/baseline": ok}
    assert status.settled([kill, stopped, kill]) == {"w/r1/baseline": kill}
    assert status.settled([kill, segv]) == {"w/r1/baseline": segv}
    assert status.settled([_row("w/r1/candidate", "signal_SIGKILL", 137), ok]) == {"w/r1/baseline": ok}
    assert status.settled([_row("w/r1/baseline", "timed_out", 124)])   # a timeout is the cell's own: final
    assert rownotes.noted(segv, [kill]).note == "killed by SIGKILL, then by SIGSEGV: not retried again"
    assert rownotes.noted(ok, [kill]) == ok
