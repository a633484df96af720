"""A screen's IR pass in lanes, each side a queue its lanes' processes claim workloads from one at
a time (`campaign.running.sidequeue`): a slow workload holds up none behind it, a hung one gets its
own row while the lanes go on, a first death by a signal is given back and run once more, and
nothing settled runs twice. Through the CLI on the compile-only backend; the stop-and-resume of a
queue is `tests/running/test_irlanes.py`.

The quick workloads compile nothing (`test_bench_noop`): a queue hands out every workload alike, and
what is asserted is who claimed what and when, never the IR (lanes compiling the demo's kernels are
test_irlanes's). Their IR pass finds no IR, so no timed round runs after it. No workload is a canary:
a canary's two processes run before the queues and hold nothing these tests assert."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_cli
from runroots import fault, manifest

from campaign.contract import canonical, status
from campaign.contract.artifacts import claim, claimed_by
from campaign.contract.progresslines import parse
from campaign.running.sidequeue import ClaimIndex

QUICK = "test_bench_noop"


def test_a_workload_is_claimed_once_and_its_claim_names_the_batch(tmp_path: Path):
    assert claim(tmp_path, "softmax/r0/candidate", "0003")
    assert not claim(tmp_path, "softmax/r0/candidate", "0004"), "a second claimant is refused"
    assert claimed_by(tmp_path, "softmax/r0/candidate") == "0003"
    assert claimed_by(tmp_path, "matmul/r0/candidate") is None
    assert [p.name for p in tmp_path.iterdir()] == ["softmax__r0__candidate"], "nothing left aside"


def test_the_watch_reads_the_queue_again_only_when_a_claim_came_or_went(tmp_path: Path):
    """`ClaimIndex`: while the queue folder's mtime stands still, and stood still a while before the last
    reading began, the last reading stands; a claim made, given back or made again moves it. The proof
    the reading stood: a claim file rewritten in place (which no claim does) is not seen until a name
    comes or goes."""
    assert claim(tmp_path, "mm/r0/candidate", "0001")
    index = ClaimIndex(tmp_path)
    assert index.owners() == {"mm__r0__candidate": "0001"}
    assert claim(tmp_path, "bmm/r0/candidate", "0002")       # in the same clock tick as that reading, maybe
    assert index.owners() == {"mm__r0__candidate": "0001", "bmm__r0__candidate": "0002"}, "a new claim is seen"
    past = time.time() - 10
    os.utime(tmp_path, (past, past))                          # settled: the next reading is trusted after
    assert index.owners()["bmm__r0__candidate"] == "0002"
    (tmp_path / "bmm__r0__candidate").write_text("9999", encoding="utf-8")   # in place: the folder's mtime stays
    os.utime(tmp_path, (past, past))
    assert index.owners()["bmm__r0__candidate"] == "0002", "the settled reading stands"
    (tmp_path / "bmm__r0__candidate").unlink()                # given back ...
    assert index.owners() == {"mm__r0__candidate": "0001"}
    assert claim(tmp_path, "bmm/r0/candidate", "0003")       # ... and claimed again, by another process
    assert index.owners() == {"mm__r0__candidate": "0001", "bmm__r0__candidate": "0003"}
    assert claimed_by(tmp_path, "bmm/r0/candidate") == "0003"


def _claims(root: Path) -> dict[str, str]:
    """task id -> the batch that claimed it, over every queue of the root."""
    return {p.name.replace("__", "/"): p.read_text() for p in root.glob("batches/queue-*/*")}


def _claim_time(root: Path, task_id: str) -> float:
    return next(root.glob(f"batches/queue-*/{task_id.replace('/', '__')}")).stat().st_mtime


def _events(root: Path) -> dict[tuple[str, str], float]:
    """(start|end, task id) -> the unix time its process wrote it."""
    return {(e.kind, e.task_id): e.unix for p in root.glob("batches/[0-9]*/progress.tsv")
            for e in parse(p.read_text(encoding="utf-8"))}


def _lock_workers(root: Path) -> set[str]:
    try:
        return {w["task_id"] for w in json.loads((root / "run.lock").read_text())["workers"].values()}
    except (OSError, ValueError, KeyError):
        return set()


@pytest.mark.slow
def test_a_slow_and_a_hung_workload_hold_up_no_other_and_nothing_runs_twice(tmp_path: Path):
    # the candidate side: slow (15 s), two quick ones, hang (killed at its 8 s timeout), a third quick one
    path = manifest(tmp_path, [fault("slow", "test_bench_slow"), fault("softmax", QUICK),
                               fault("row_sum", QUICK), fault("hang", "test_bench_hang", timeout_s=8),
                               fault("matmul", QUICK)],
                    campaign="queue", lanes=2)
    proc = subprocess.Popen([sys.executable, "-m", "campaign", "screen", str(path), "--runs-dir", str(tmp_path / "runs"),
                             "--scratch-dir", str(tmp_path), "--grace", "1"], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[frozenset] = set()
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            for root in (tmp_path / "runs").glob("queue-screen-*"):
                busy = _lock_workers(root)
                if len(busy) > 1:
                    seen.add(frozenset(busy))
            time.sleep(0.1)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    root = next((tmp_path / "runs").glob("queue-screen-*"))
    rows = status.read(root / "status.tsv")[0]
    ir_pass = [r for r in rows if r.round == 0]
    assert sorted(r.task_id for r in ir_pass) == sorted({r.task_id for r in ir_pass}), "nothing ran twice"
    latest = status.latest(rows)
    assert latest["hang/r0/candidate"].rc_name == "timed_out"
    assert "claimed from its side's queue" in latest["hang/r0/candidate"].note
    for name in ("slow", "softmax", "row_sum", "matmul"):
        assert latest[f"{name}/r0/candidate"].rc_name == "ok", latest[f"{name}/r0/candidate"]
    claims, events = _claims(root), _events(root)
    slow = claims["slow/r0/candidate"]
    began, ended = events[("start", "slow/r0/candidate")], events[("end", "slow/r0/candidate")]
    assert claims["softmax/r0/candidate"] != slow and began < events[("start", "softmax/r0/candidate")] < ended, \
        "the workload after the slow one ran in the other lane while the slow one ran"
    for task_id, batch in claims.items():       # nothing was reserved behind it: claimed once it had ended
        if batch == slow and task_id != "slow/r0/candidate":
            assert _claim_time(root, task_id) >= ended, (task_id, claims)
    assert any("slow/r0/candidate" in busy and len(busy) == 2 for busy in seen), \
        f"the lock named the slow workload beside the other lane's: {seen}"
    # each process's batch.json says which queue it claimed from and its own caches
    records = [canonical.read_json(p) for p in root.glob("batches/[0-9]*/batch.json")]
    queued = [r for r in records if r.get("queue")]
    assert queued and all(Path(r["queue"]).name.startswith("queue-") and "triton-queue-" in r["triton_cache_dir"]
                          for r in queued)
    assert "each side a queue its 2 lanes claim workloads from one at a time" in out + err
    assert run_cli("verify", root).returncode == 0


@pytest.mark.slow
def test_a_first_death_by_a_signal_beside_other_lanes_runs_once_more_alone_in_another_process(tmp_path: Path):
    """Not back into the queue beside the other lanes: the host's out-of-memory killer would end it there again
    (`campaign.contract.status.crowded`, `tests/running/test_lane_oom.py`)."""
    path = manifest(tmp_path, [fault("add", QUICK), fault("die", "test_bench_die"), fault("softmax", QUICK),
                               fault("row_sum", QUICK)], campaign="requeue", lanes=2)
    done = run_cli("screen", path, "--runs-dir", tmp_path / "runs", "--scratch-dir", tmp_path, "--grace", "1",
                   timeout=300)
    root = next((tmp_path / "runs").glob("requeue-screen-*"))
    rows = status.read(root / "status.tsv")[0]
    died = [r for r in rows if r.task_id == "die/r0/candidate"]
    assert [r.rc_name for r in died] == ["signal_SIGKILL", "signal_SIGKILL"], (done.stderr[-2000:], died)
    assert re.search(r"batch \d{4}: workload \d+ in its process, claimed from", died[0].note) and "IR pass lane" in died[0].note
    assert "batch " not in died[1].note and "IR pass lane" not in died[1].note, \
        "the second attempt ran alone after the lanes, in a process of its own"
    assert len(list((root / "cells" / "die" / "r0").glob("candidate.interrupted-*"))) == 1, \
        "the first attempt's folder is kept beside the second's"
    others = [r.task_id for r in rows if r.round == 0 and r.task_id != "die/r0/candidate"]
    assert len(others) == len(set(others)) == 7, others
    # the sides advance together (lane n starts on side n mod 2): a screen stopped part way holds both sides
    events = _events(root)
    first_candidate = min(at for (kind, task), at in events.items() if kind == "start" and task.endswith("/candidate"))
    last_baseline = max(at for (kind, task), at in events.items() if kind == "end" and task.endswith("/baseline"))
    assert first_candidate < last_baseline, "a lane started on the candidate side before the baseline side ran dry"
