"""A device out of memory beside other IR-pass lanes (`campaign.contract.status.run_alone`): the cell's first
such failure is history, it runs once more alone on its card after the lanes, and nothing settled runs twice,
across a stop and a resume. Through the CLI on the compile-only backend, whose lanes share one declared card
as a card's do (`tests/running/test_sidequeue.py`); the workloads raise torch's own ``OutOfMemoryError`` in
CUDA's wording (`tests/fixtures/workloads/bench_faults.py`): ``beside`` while another ``beside`` runs at the
same time (a sibling's marker), ``always`` in its candidate whether alone or not."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest
from conftest import PROJECT_ROOT, run_cli
from runroots import fault, manifest, wait_until

from campaign.contract import status
from campaign.running.lock import pid_alive

QUICK = "test_bench_noop"
OOM = "CUDA out of memory. Tried to allocate 8.00 GiB"


def _stop_in_the_alone_retry(tmp_path: Path, path: Path, campaign: str = "oom") -> Path:
    """The screen started, then stopped (SIGINT) while a ``beside`` runs alone after the lanes: both its sides'
    rows of a failure beside the lanes (`status.crowded`) written and a worker's marker in ``busy/`` (in the
    run's own scratch folder)."""
    proc = subprocess.Popen([sys.executable, "-m", "campaign", "screen", str(path), "--runs-dir", str(tmp_path / "runs"),
                             "--scratch-dir", str(tmp_path), "--grace", "1"], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        root = wait_until(lambda: _retrying_alone(tmp_path, campaign), proc, "a retry running alone", 300, poll_s=0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    return root


def _stop_in_the_alone_retry_and_resume(tmp_path: Path, path: Path, campaign: str = "oom"):
    """`_stop_in_the_alone_retry`, then the screen resumed to its end: the root, its rows at the stop (one
    interrupted row: ``beside``'s retry, alone) and its rows at the end."""
    root = _stop_in_the_alone_retry(tmp_path, path, campaign)
    first = status.read(root / "status.tsv")[0]
    stopped = [r for r in first if r.rc_name == status.INTERRUPTED]
    assert [r.workload for r in stopped] == ["beside"] and "IR pass lane" not in stopped[0].note, stopped
    resumed = run_cli("screen", "--resume", root, "--scratch-dir", tmp_path, "--grace", "1", timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return root, first, status.read(root / "status.tsv")[0]


def _retrying_alone(tmp_path: Path, campaign: str) -> Optional[Path]:
    """The screen's root once both ``beside`` sides have their rows of a failure beside the lanes and a worker
    is busy: a live process's marker (a killed worker leaves its own behind)."""
    root = next((tmp_path / "runs").glob(f"{campaign}-screen-*"), None)
    rows = status.read(root / "status.tsv")[0] if root is not None else []
    crowded = {r.task_id for r in rows if status.crowded(r)}
    live = [m for m in tmp_path.glob("*/busy/*") if pid_alive(int(m.name.split("-")[0]))]
    return root if {"beside/r0/baseline", "beside/r0/candidate"} <= crowded and live else None


@pytest.mark.slow
def test_an_out_of_memory_beside_other_lanes_runs_once_more_alone_after_them_across_a_resume(tmp_path: Path):
    # two lanes, each starting on its own side: beside's baseline and candidate run at once and meet each other
    path = manifest(tmp_path, [fault("beside", "test_bench_oom_beside_a_lane"), fault("always", "test_bench_oom_always"),
                               fault("softmax", QUICK), fault("row_sum", QUICK)], campaign="oom", lanes=2)
    root, first, rows = _stop_in_the_alone_retry_and_resume(tmp_path, path)
    assert [r.rc_name for r in first if r.task_id == "always/r0/candidate"] == ["tests_failed"], \
        "the lanes ran always's candidate once; its retry waits for them"
    latest = status.latest(rows)
    for side in ("baseline", "candidate"):
        history = [r for r in rows if r.task_id == f"beside/r0/{side}"]
        crowded, *retries = history
        assert crowded.rc_name == "tests_failed" and OOM in crowded.note and "IR pass lane" in crowded.note
        assert crowded.note.endswith("device out of memory with 2 lanes on the card; run again alone after the lanes")
        assert [r.rc_name for r in retries] in (["ok"], [status.INTERRUPTED, "ok"]), history
        assert all("IR pass lane" not in r.note for r in retries), "each retry ran alone, after the lanes"
        assert "run again alone on its card after a device out of memory with 2 lanes" in latest[crowded.task_id].note
    assert sum(r.rc_name == status.INTERRUPTED for r in rows) == 1
    # a second out of memory, alone, is final and says so
    always = [r for r in rows if r.task_id == "always/r0/candidate"]
    assert [r.rc_name for r in always] == ["tests_failed", "tests_failed"], always
    assert OOM in always[1].note and "IR pass lane" not in always[1].note
    assert always[1].note.endswith("out of memory again: final, not retried again")
    assert status.settled(rows)["always/r0/candidate"] == always[1]
    # nothing else ran twice, across the stop: the rest settled once each, in the lanes
    others = [r.task_id for r in rows if r.round == 0 and r.workload != "beside" and r.task_id != "always/r0/candidate"]
    assert sorted(others) == sorted({"always/r0/baseline", *(f"{w}/r0/{s}" for w in ("softmax", "row_sum")
                                                             for s in ("baseline", "candidate"))}), others
    assert all(latest[t].rc_name == "ok" for t in others)
    # the first attempts' folders are kept beside the retries'
    assert list((root / "cells" / "always" / "r0").glob("candidate.interrupted-*"))
    assert run_cli("verify", root).returncode == 0
    cost = run_cli("cost", root)
    assert cost.returncode == 0, cost.stderr
    report = run_cli("report", root)
    assert report.returncode == 0, report.stderr[-2000:]


@pytest.mark.slow
def test_one_process_a_cell_in_lanes_runs_an_out_of_memory_once_more_alone_too(tmp_path: Path):
    """``workloads_per_process: 1``: the lanes take one cell a process (`Runner._lanes`), not a side's queue;
    the same rule, and the retries run one process a cell, as the manifest asks."""
    path = manifest(tmp_path, [fault("beside", "test_bench_oom_beside_a_lane"), fault("always", "test_bench_oom_always"),
                               fault("softmax", QUICK)], campaign="oom", lanes=2, per_process=1)
    done = run_cli("screen", path, "--runs-dir", tmp_path / "runs", "--scratch-dir", tmp_path, "--grace", "1",
                   timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    root = next((tmp_path / "runs").glob("oom-screen-*"))
    rows = [r for r in status.read(root / "status.tsv")[0] if r.round == 0]
    runs = {t: [r for r in rows if r.task_id == t] for t in {r.task_id for r in rows}}
    for side in ("baseline", "candidate"):
        crowded, alone = runs[f"beside/r0/{side}"]
        assert status.in_lanes_out_of_memory(crowded) == 2 and alone.rc_name == "ok", runs[f"beside/r0/{side}"]
        assert "IR pass lane" not in alone.note and "batch" not in alone.note, "alone, one process a cell"
    assert [r.rc_name for r in runs["always/r0/candidate"]] == ["tests_failed", "tests_failed"]
    assert all(len(found) == 1 for t, found in runs.items() if t not in {"beside/r0/baseline", "beside/r0/candidate",
                                                                         "always/r0/candidate"}), runs
    assert run_cli("verify", root).returncode == 0


@pytest.mark.slow
def test_a_death_by_a_signal_beside_other_lanes_runs_once_more_alone_and_dead_again_reads_killed(tmp_path: Path):
    """The host's out-of-memory killer ends a lane's process the lanes' memory together outgrew (on a 2-core
    host: soft_margin_loss's two sides, killed together and retried together, its baseline killed again and read
    TIMEOUT). Here a candidate that kills itself with SIGKILL, beside another lane: its first death is history,
    its retry runs alone after the lanes, dies again and is final, and the screen says KILLED, never TIMEOUT."""
    path = manifest(tmp_path, [fault("die", "test_bench_die"), fault("softmax", QUICK), fault("row_sum", QUICK)],
                    campaign="die", lanes=2)
    done = run_cli("screen", path, "--runs-dir", tmp_path / "runs", "--scratch-dir", tmp_path, "--grace", "1", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    root = next((tmp_path / "runs").glob("die-screen-*"))
    rows = status.read(root / "status.tsv")[0]
    first, again = [r for r in rows if r.task_id == "die/r0/candidate"]
    assert (first.rc_name, again.rc_name) == ("signal_SIGKILL", "signal_SIGKILL")
    assert "IR pass lane" in first.note and first.note.endswith(
        "killed by SIGKILL beside 2 lanes: run once more alone after the lanes (a kill may come from outside the cell: "
        "the host's out-of-memory killer ends a process the lanes' memory together outgrew)")
    assert "IR pass lane" not in again.note, "the retry ran alone, after the lanes"
    assert again.note.endswith("killed by SIGKILL again, alone: the same failure twice is deterministic; not retried again")
    assert "died by a signal beside 2 lanes; each runs again alone" in done.stdout + done.stderr
    assert [r.rc_name for r in rows if r.workload != "die" and r.round == 0] == ["ok"] * 4, "nothing else ran twice"
    verdicts = {line.split("\t")[0]: line.split("\t")[2] for line in (root / "screen.tsv").read_text().splitlines()[1:]}
    assert verdicts["die"] == "KILLED"


@pytest.mark.slow
def test_a_death_by_a_signal_beside_other_lanes_then_a_stop_in_its_alone_retry_resumes_with_nothing_run_twice(
        tmp_path: Path):
    """Both sides of ``beside`` die by SIGKILL while they run at once in the two lanes (as the host's
    out-of-memory killer ends both); each death is history, the screen is stopped (SIGINT) while one runs
    alone after the lanes, and the resumed screen runs what is left of them alone: each side settles ``ok``
    once, after one kill and at most one interrupted retry, and nothing else ran twice."""
    path = manifest(tmp_path, [fault("beside", "test_bench_die_beside_a_lane"), fault("softmax", QUICK),
                               fault("row_sum", QUICK)], campaign="die", lanes=2)
    root, _, rows = _stop_in_the_alone_retry_and_resume(tmp_path, path, campaign="die")
    latest = status.latest(rows)
    for side in ("baseline", "candidate"):
        killed, *retries = [r for r in rows if r.task_id == f"beside/r0/{side}"]
        assert killed.rc_name == "signal_SIGKILL" and "IR pass lane" in killed.note, killed
        assert killed.note.endswith("run once more alone after the lanes (a kill may come from outside the cell: "
                                    "the host's out-of-memory killer ends a process the lanes' memory together outgrew)")
        assert [r.rc_name for r in retries] in (["ok"], [status.INTERRUPTED, "ok"]), retries
        assert all("IR pass lane" not in r.note for r in retries), "each retry ran alone, after the lanes"
        assert status.settled(rows)[killed.task_id].rc_name == "ok"
        assert "run again alone after a death by a signal beside 2 lanes" in latest[killed.task_id].note
    assert sum(r.rc_name == status.INTERRUPTED for r in rows) == 1
    others = [r.task_id for r in rows if r.workload != "beside" and r.round == 0]
    assert sorted(others) == sorted(f"{w}/r0/{s}" for w in ("softmax", "row_sum") for s in ("baseline", "candidate"))
    verdicts = {line.split("\t")[0]: line.split("\t")[2] for line in (root / "screen.tsv").read_text().splitlines()[1:]}
    assert verdicts["beside"] == verdicts["softmax"] == "NO_ROWS", "retried alone and passed: not KILLED"
    assert run_cli("verify", root).returncode == 0
