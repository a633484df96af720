"""How the runner watches a batch worker process at the moments outside any workload, through the
real CLI on the compile-only backend: a stop between two workloads of a process, a stop after its
last workload ended while the process has not exited, and a process that does not exit after its
last workload. The moments come from the progress file and the workloads' own `holding` file
(tests/fixtures/workloads/bench_watch.py), not from sleeps. Then the poll loop itself
(`campaign.running.cellproc.watch`) on a real process group: a stop before any clock is read, and a
clock that moves from one workload to the next."""
from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

from conftest import run_cli
from runroots import by_id, fault, prepare, rows, run, start_run, wait_until

from campaign.contract import canonical
from campaign.running.cellproc import POLL_S, STOPPED, TIMED_OUT, Clock, watch

WATCH = "tests/fixtures/workloads/bench_watch.py"
GRACE_S = 1.0          # runroots.run/start_run pass --grace 1
# waited out in full: the lingering workload starts in a process already warm, its own run takes ~1 s
LINGER_S = 8
# the workloads beside the held ones compile nothing: what is watched is the process between and after
# workloads, the same whatever a workload compiled
_NEXT, _FIRST = fault("softmax", "test_bench_noop"), fault("add", "test_bench_noop")


def _held(name: str, function: str, timeout_s: int = 120) -> str:
    return f'  - {{name: {name}, op: add, benchmark: "{WATCH}::{function}", timeout_s: {timeout_s}}}\n'


def _progress(root: Path, batch: str) -> list[tuple[str, str]]:
    path = root / "batches" / batch / "progress.tsv"
    return [tuple(line.split("\t")[:2]) for line in path.read_text().splitlines()] if path.is_file() else []


def _wait_until_held(root: Path, proc: subprocess.Popen) -> None:
    wait_until((root.parent / "holding").is_file, proc, "the workload's hold of its process", 240, poll_s=0.05)


def _interrupt(proc: subprocess.Popen) -> tuple[str, float]:
    """SIGINT to the runner alone; its stdout and the seconds it took to exit."""
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "RUN_INTERRUPTED" in err
    return out, time.monotonic() - sent


def _finish(root: Path, proc: subprocess.Popen) -> None:
    (root.parent / "release").write_text("")   # whatever holds lets go, whatever happened above
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def _resume_seals(root: Path, before: int) -> list:
    done = run(root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (root / "receipt.json").is_file()
    verified = run_cli("verify", root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return rows(root)[before:]


def test_a_stop_between_two_workloads_of_a_batch_ends_the_process_at_once_and_keeps_the_finished_one(tmp_path):
    root = prepare(tmp_path, [_held("held", "test_bench_hold_after"), _NEXT], per_process=2)
    proc = start_run(root)
    try:
        _wait_until_held(root, proc)
        # held between the two: the first one's end is written, the next one's start is not
        assert _progress(root, "0002") == [("start", "held/r1/candidate"), ("end", "held/r1/candidate")]
        out, took = _interrupt(proc)
    finally:
        _finish(root, proc)
    assert took < 2 * POLL_S + GRACE_S + 15, f"the stop took {took:.1f}s"   # 15: the CLI's own exit, 2 cores
    assert _progress(root, "0002") == [("start", "held/r1/candidate"), ("end", "held/r1/candidate")], \
        "the next workload never started"
    history = [(row.task_id, row.rc_name) for row in rows(root)]
    assert history[-2:] == [("held/r1/candidate", "ok"), ("softmax/r1/candidate", "interrupted")]
    stopped = by_id(root)["softmax/r1/candidate"]
    assert stopped.rc == 130 and "runner stopped (SIGINT); worker group ended with SIGTERM" in stopped.note
    assert "it had not started: stopped between workloads of its process" in stopped.note
    finished = root / "cells" / "held" / "r1" / "candidate"
    assert canonical.read_json(finished / "result.json") and (finished / "task.json").is_file()

    resumed = _resume_seals(root, len(history))
    assert [(row.task_id, row.rc_name) for row in resumed] == [("softmax/r1/candidate", "ok")], \
        "the finished workload is not run again; the next one is"
    assert not list(finished.parent.glob("candidate.interrupted-*"))
    assert canonical.read_json(root / "batches" / "0003" / "batch.json")["tasks"] == ["softmax/r1/candidate"]


def test_a_stop_after_the_last_workload_of_a_batch_ends_the_process_that_has_not_exited(tmp_path):
    root = prepare(tmp_path, [_FIRST, _held("linger", "test_bench_linger")], per_process=2)
    proc = start_run(root)
    try:
        _wait_until_held(root, proc)
        deadline = time.monotonic() + 60
        while ("end", "linger/r1/candidate") not in _progress(root, "0002"):
            assert time.monotonic() < deadline and proc.poll() is None, "the last workload never ended"
            time.sleep(0.05)
        out, took = _interrupt(proc)
    finally:
        _finish(root, proc)
    assert took < 2 * POLL_S + GRACE_S + 15, f"the stop took {took:.1f}s"
    assert "the runner was stopped after its last workload ended; the process was ended with SIGTERM" in out
    history = rows(root)
    assert sorted((row.task_id, row.rc_name) for row in history) == sorted(
        (f"{w}/r1/{c}", "ok") for w in ("add", "linger") for c in ("baseline", "candidate")), "every row stands"
    assert _resume_seals(root, len(history)) == [], "nothing finished is run again"


def test_a_batch_process_that_outlives_its_last_workloads_timeout_is_ended_and_the_rows_stand(tmp_path):
    root = prepare(tmp_path, [_FIRST, _held("linger", "test_bench_linger", timeout_s=LINGER_S)], per_process=2)
    try:
        done = run(root, timeout=240)
    finally:
        (root.parent / "release").write_text("")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (f"note: batch 0002: the process outlived linger/r1/candidate's timeout ({LINGER_S}s) after it ended; "
            "its group was ended with SIGTERM") in done.stdout
    assert {task: row.rc_name for task, row in by_id(root).items()} == {
        f"{w}/r1/{c}": "ok" for w in ("add", "linger") for c in ("baseline", "candidate")}
    assert len(rows(root)) == 4 and (root / "receipt.json").is_file()


def _group_of_two() -> subprocess.Popen:
    """A real process leading its own group, with a child of its own, both waiting."""
    return subprocess.Popen(["bash", "-c", "sleep 600 & wait"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _group_gone(pgid: int) -> bool:
    """Nothing of the group runs: a killed member may stay a zombie until whoever adopted it reaps it."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue                      # gone while we looked
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return False
    return True


def test_the_loop_ends_the_group_on_a_stop_before_it_reads_any_clock():
    # the clock's read is where a batch writes the rows of what ended: a stop is acted on first, and
    # what ended is read after the group is gone, so nothing that ends meanwhile is taken for stopped
    proc, stop, read = _group_of_two(), threading.Event(), []
    stop.set()
    try:
        seen = watch(proc, lambda: read.append(1) or Clock(time.monotonic(), 600), 5.0, stop)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (seen.state, seen.how, read) == (STOPPED, "SIGTERM", [])
    assert _group_gone(proc.pid)


def test_the_loop_ends_the_group_when_the_clock_it_reads_now_runs_out():
    # a batch's clock moves from workload to workload: it is read again at every poll
    proc, started = _group_of_two(), time.monotonic()
    clocks = [Clock(started, 600, "first")]
    try:
        seen = watch(proc, lambda: clocks.pop() if clocks else Clock(started, 0.5, "second"), 5.0, threading.Event())
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (seen.state, seen.how, seen.clock.owner) == (TIMED_OUT, "SIGTERM", "second")
    assert 0.5 <= time.monotonic() - started < 5 and _group_gone(proc.pid)
