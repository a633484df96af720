"""The run loop against real workers and real faults: hangs, stubborn hangs, a worker killed
by a signal, a failed canary. Every fault is a row; the campaign goes on; exit codes pinned."""
from __future__ import annotations

from pathlib import Path

from campaign import canonical
from runroots import by_id, demo, fault, prepare, rows, run


def test_faults_are_rows_and_the_campaign_goes_on(tmp_path: Path):
    root = prepare(tmp_path, [
        demo("add", canary=True),
        fault("hang", "test_bench_hang", timeout_s=15),
        fault("stubborn", "test_bench_hang_ignoring_term", timeout_s=15),
        fault("die", "test_bench_die"),
        demo("softmax"),
    ])
    done = run(root)
    assert done.returncode == 0, done.stderr
    found = by_id(root)
    assert len(rows(root)) == len(found) == 10

    # A clean cell is never marked failed by the bookkeeping: zero markers are counted, not missing.
    # (Timeouts leave headroom: a loaded machine can take seconds to import torch and triton.)
    clean = found["add/r1/baseline"]
    assert (clean.rc, clean.rc_name, clean.failed) == (0, "ok", False)
    assert clean.markers == {"AUTOTUNE_REPLAY_FALLBACK": 0, "BENCHMARK_DIRECT_NO_CUDAGRAPH": 0,
                             "BENCHMARK_CAPTURE_POISONED": 0}
    assert found["hang/r1/baseline"].rc_name == "ok"

    hung = found["hang/r1/candidate"]
    assert (hung.rc, hung.rc_name) == (124, "timed_out")
    assert "timeout 15s; worker group ended with SIGTERM" in hung.note
    assert 15 <= hung.elapsed_s < 60

    stubborn = found["stubborn/r1/candidate"]
    assert (stubborn.rc, stubborn.rc_name) == (137, "killed")
    assert "SIGKILL after 1s grace" in stubborn.note

    died = found["die/r1/candidate"]
    assert (died.rc, died.rc_name) == (137, "signal_SIGKILL")
    assert died.failed and died.rows_ok is None and died.markers is None
    assert died.note.startswith("no result.json; stderr.log")

    assert found["softmax/r1/candidate"].rc_name == "ok"  # after three faults, still measured
    assert "sealed" in done.stdout
    # Caches were per cell and outside the root; nothing of them is left in the scratch dir.
    assert [p.name for p in root.parent.iterdir()] == [root.name]
    plan = canonical.read_json(root / "cells" / "add" / "r1" / "candidate" / "task.json")
    assert not plan["triton_cache_dir"].startswith(str(root))
    assert plan["replay_file"] == str(root / "cells" / "add" / "r1" / "baseline" / "autotune.json")
    assert plan["tuner_cache"] == "isolated"


def test_a_failed_canary_stops_the_campaign(tmp_path: Path):
    root = prepare(tmp_path, [fault("dies", "test_bench_die", canary=True), demo("softmax")])
    done = run(root)
    assert done.returncode == 1
    assert "RUN_FAILED check=canary: canary dies/r1/candidate failed: rc 137 (signal_SIGKILL)" in done.stderr
    assert [row.task_id for row in rows(root)] == ["dies/r1/baseline", "dies/r1/candidate"]
    assert not (root / "cells" / "softmax").exists()
    assert not (root / "receipt.json").exists() and not (root / "run.lock").exists()
    again = run(root)
    assert again.returncode == 1 and "RUN_FAILED check=canary" in again.stderr
    assert len(rows(root)) == 2  # nothing re-run, nothing appended
