"""The run loop against real workers and real faults: hangs, stubborn hangs, a worker killed
by a signal (run once more; killed twice, final), a failed canary. Every fault is a row; the
campaign goes on; exit codes pinned."""
from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Optional

from runroots import by_id, fault, prepare, rows, run, start_run, wait_until

from campaign.contract import canonical

# The clean cells beside the faults compile nothing: the runner treats every cell alike, and one that
# skips compiling and timing costs about half (real operators run in test_runner_rounds and test_cards)
CLEAN = "test_bench_noop"
# A hang is waited out in full, twice: long enough for a loaded machine to start a worker (about 4 s
# here, importing torch and triton) and reach the benchmark, and no longer
HANG_S = 10


def test_faults_are_rows_and_the_campaign_goes_on(tmp_path: Path):
    # one process per cell: each fault ends its own worker (in a batch: `tests/running/test_batching.py`)
    root = prepare(tmp_path, [
        fault("add", CLEAN, canary=True),
        fault("hang", "test_bench_hang", timeout_s=HANG_S),
        fault("stubborn", "test_bench_hang_ignoring_term", timeout_s=HANG_S),
        fault("die", "test_bench_die"),
        fault("softmax", CLEAN),
    ], per_process=1)
    done = run(root)
    assert done.returncode == 0, done.stderr
    found = by_id(root)
    assert len(found) == 10 and len(rows(root)) == 11   # the killed cell ran twice

    # A clean cell is never marked failed by the bookkeeping: zero markers are counted, not missing.
    # (Timeouts leave headroom: a loaded machine can take seconds to import torch and triton.)
    clean = found["add/r1/baseline"]
    assert (clean.rc, clean.rc_name, clean.failed) == (0, "ok", False)
    assert clean.markers == {"AUTOTUNE_REPLAY_FALLBACK": 0, "BENCHMARK_DIRECT_NO_CUDAGRAPH": 0,
                             "BENCHMARK_CAPTURE_POISONED": 0}
    assert found["hang/r1/baseline"].rc_name == "ok"

    hung = found["hang/r1/candidate"]
    assert (hung.rc, hung.rc_name) == (124, "timed_out")
    assert f"timeout {HANG_S}s; worker group ended with SIGTERM" in hung.note
    assert HANG_S <= hung.elapsed_s < 60

    stubborn = found["stubborn/r1/candidate"]
    assert (stubborn.rc, stubborn.rc_name) == (137, "killed")
    assert "SIGKILL after 1s grace" in stubborn.note

    # Killed by a signal: run once more at once; killed the same way again, it is final and says why.
    first, died = [row for row in rows(root) if row.task_id == "die/r1/candidate"]
    assert (first.rc, first.rc_name) == (died.rc, died.rc_name) == (137, "signal_SIGKILL")
    assert first.note.endswith("killed by SIGKILL: run once more (a kill may come from outside the cell)")
    assert died.failed and died.rows_ok is None and died.markers is None
    assert died.note.startswith("no result.json; stderr.log")
    assert died.note.endswith("killed by SIGKILL again: the same failure twice is deterministic; not retried again")
    assert (root / "cells" / "die" / "r1" / "candidate.interrupted-1" / "task.json").is_file()
    assert "[8/10] start die/r1/candidate" in done.stdout and "[8/10] end die/r1/candidate" in done.stdout
    assert "[9/10] start softmax/r1/baseline" in done.stdout

    assert found["softmax/r1/candidate"].rc_name == "ok"  # after three faults, still measured
    assert "sealed" in done.stdout
    # Caches were per cell and outside the root; nothing of them is left in the scratch dir.
    assert [p.name for p in root.parent.iterdir()] == [root.name]
    plan = canonical.read_json(root / "cells" / "add" / "r1" / "candidate" / "task.json")
    assert not plan["triton_cache_dir"].startswith(str(root))
    assert plan["replay_file"] == str(root / "cells" / "add" / "r1" / "baseline" / "autotune.json")
    assert plan["tuner_cache"] == "isolated"
    # isolated means one tuner folder per cell: a second cell never sees the first one's winners
    plans = [canonical.read_json(p) for p in root.glob("cells/*/*/*/task.json") if "interrupted" not in p.parent.name]
    tuner_dirs = [p["tuner_cache_dir"] for p in plans]
    assert len(plans) == 10 and len(set(tuner_dirs)) == len(tuner_dirs), tuner_dirs


def test_a_failed_canary_stops_the_campaign(tmp_path: Path):
    root = prepare(tmp_path, [fault("dies", "test_bench_die", canary=True), fault("softmax", CLEAN)])
    done = run(root)
    assert done.returncode == 1
    assert "RUN_FAILED check=canary: canary dies/r1/candidate failed: rc 137 (signal_SIGKILL)" in done.stderr
    assert "the same failure twice is deterministic; not retried again" in done.stderr
    assert [row.task_id for row in rows(root)] == ["dies/r1/baseline", "dies/r1/candidate", "dies/r1/candidate"]
    assert not (root / "cells" / "softmax").exists()
    assert not (root / "receipt.json").exists() and not (root / "run.lock").exists()
    again = run(root)
    assert again.returncode == 1 and "RUN_FAILED check=canary" in again.stderr
    assert len(rows(root)) == 3  # a deterministic failure: nothing re-run, nothing appended


def _worker_of(root: Path, task_id: str, proc, limit: float = 120) -> int:
    """The pid of the worker running ``task_id``, once it has reached its benchmark."""
    log = root / "cells" / task_id / "run.log"

    def pgid() -> Optional[int]:
        try:                         # the lock is created empty (O_EXCL) and then written: read it again
            holder = canonical.read_json(root / "run.lock") if (root / "run.lock").is_file() else {}
        except canonical.Unreadable:
            holder = {}
        if (holder.get("task_id") == task_id and log.is_file()
                and "benchmark: pytest" in log.read_text(encoding="utf-8")):
            return holder["worker_pgid"]   # the worker leads its own session: its pid is the group's id
        return None
    return wait_until(pgid, proc, f"{task_id}'s benchmark", limit)


def test_a_killed_recording_canary_is_run_again_before_the_cells_that_replay_it(tmp_path: Path):
    root = prepare(tmp_path, [fault("rec", "test_bench_wait_recording", canary=True), fault("softmax", CLEAN)])
    proc = start_run(root)
    try:
        os.kill(_worker_of(root, "rec/r1/baseline", proc), signal.SIGKILL)   # as the OOM killer would
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    history = [(row.task_id, row.rc, row.rc_name) for row in rows(root)]
    assert history[:3] == [("rec/r1/baseline", 137, "signal_SIGKILL"), ("rec/r1/baseline", 0, "ok"),
                           ("rec/r1/candidate", 0, "ok")]
    assert len(history) == 5 and by_id(root)["softmax/r1/candidate"].rc_name == "ok"
    candidate = by_id(root)["rec/r1/candidate"]
    assert not candidate.failed and candidate.preflight_failed == ""   # the replay file was there
    assert (root / "cells" / "rec" / "r1" / "baseline.interrupted-1" / "task.json").is_file()
    # The retry keeps its place in the count: a start and an end of the same position, twice.
    assert out.count("[1/4] start rec/r1/baseline") == 2 and out.count("[1/4] end rec/r1/baseline") == 2
    assert "[2/4] start rec/r1/candidate" in out
    assert "sealed" in out
