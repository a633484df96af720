"""status.tsv: rows written and read back, unknowns kept empty, every rc named, torn lines survived."""
from __future__ import annotations

import signal
from pathlib import Path

from campaign.contract import status
from campaign.contract.status import COLUMNS, StatusRow

CLEAN = StatusRow(task_id="mm/r1/baseline", round=1, workload="mm", cell="baseline", rc=0, rc_name="ok",
                  elapsed_s=12.5, rows_ok=15, rows_failed=0,
                  markers={"AUTOTUNE_REPLAY_FALLBACK": 0, "BENCHMARK_DIRECT_NO_CUDAGRAPH": 0,
                           "BENCHMARK_CAPTURE_POISONED": 0},
                  sm_clock_min_mhz=1755.0, sm_clock_median_mhz=1980.0, temp_max_c=61.0)


def test_round_trip_and_header(tmp_path: Path):
    path = tmp_path / "status.tsv"
    missing = StatusRow(task_id="mm/r1/candidate", round=1, workload="mm", cell="candidate", rc=137,
                        rc_name="signal_SIGKILL", elapsed_s=3.25, note="no result.json;\tstderr.log:\nboom")
    status.append(path, CLEAN)
    status.append(path, missing)
    text = path.read_text()
    assert text.splitlines()[0].split("\t") == list(COLUMNS)
    assert text.splitlines()[1] == "mm/r1/baseline\t1\tmm\tbaseline\t0\tok\t12.5\t15\t0\t0\t0\t0\t\t1755\t1980\t61\t"
    rows, bad = status.read(path)
    assert bad == [] and rows[0] == CLEAN
    # Unknown stays unknown: no counts invented for a cell without result.json.
    assert rows[1].rows_ok is None and rows[1].markers is None and rows[1].temp_max_c is None
    assert rows[1].note == "no result.json; stderr.log: | boom"


def test_a_clean_cell_is_never_failed_by_the_bookkeeping():
    assert not CLEAN.failed
    assert not StatusRow("a/r2/baseline", 2, "a", "baseline", None, status.SKIPPED, note="SWITCH_NO_IR_DIFF: x").failed
    for row in (StatusRow("a", 1, "a", "baseline", 0, "no_result"),
                StatusRow("a", 1, "a", "baseline", 0, "ok", rows_ok=3, rows_failed=1),
                StatusRow("a", 1, "a", "baseline", 3, "preflight_failed", preflight_failed="triton_version"),
                StatusRow("a", 1, "a", "baseline", 124, "timed_out")):
        assert row.failed, row


def test_rc_names():
    assert status.rc_name(0) == "ok"
    # the worker's own codes lie outside pytest's 0-5: a crash never reads as failed tests
    assert status.rc_name(1) == "tests_failed" and status.rc_name(3) == "pytest_internal_error"
    assert (status.rc_name(70), status.rc_name(78), status.rc_name(64)) == ("worker_crashed", "preflight_failed", "worker_usage")
    assert status.rc_name(-signal.SIGKILL) == "signal_SIGKILL"
    assert status.rc_name(-signal.SIGSEGV) == "signal_SIGSEGV"
    assert status.rc_name(42) == "exit_42"
    assert status.rc_name(124, timed_out=True) == "timed_out"
    assert status.rc_name(137, timed_out=True) == "killed"
    assert status.shell_rc(-9) == 137 and status.shell_rc(1) == 1


def test_interrupted_rows_are_history_and_the_last_row_counts(tmp_path: Path):
    path = tmp_path / "status.tsv"
    stopped = StatusRow("mm/r1/baseline", 1, "mm", "baseline", 130, status.INTERRUPTED, elapsed_s=4.0)
    status.append(path, stopped)
    rows, _ = status.read(path)
    assert set(status.settled(rows)) == set()
    status.append(path, CLEAN)
    rows, _ = status.read(path)
    assert set(status.settled(rows)) == {"mm/r1/baseline"}
    assert status.latest(rows)["mm/r1/baseline"] == CLEAN and len(rows) == 2


def test_a_torn_last_line_is_reported_and_the_next_row_starts_clean(tmp_path: Path):
    path = tmp_path / "status.tsv"
    status.append(path, CLEAN)
    with open(path, "a") as handle:
        handle.write("mm/r1/candidate\t1\tmm")  # a runner killed mid-write
    status.append(path, CLEAN)
    rows, bad = status.read(path)
    assert rows == [CLEAN, CLEAN]
    assert len(bad) == 1 and bad[0].startswith("line 3: 3 fields")
    assert status.read(tmp_path / "absent.tsv") == ([], [])


def test_bytes_that_are_not_utf8_spoil_their_line_only(tmp_path: Path):
    path = tmp_path / "status.tsv"
    status.append(path, CLEAN)
    with open(path, "ab") as handle:
        handle.write(b"\xff\xfe\x00garbage\n")
    status.append(path, CLEAN)
    rows, bad = status.read(path)
    assert rows == [CLEAN, CLEAN]
    assert len(bad) == 1 and bad[0].startswith("line 3: 1 fields, expected")
