"""status.tsv: rows written and read back, unknowns kept empty, every rc named, torn lines survived."""
from __future__ import annotations

import signal
from dataclasses import replace
from pathlib import Path

from campaign.contract import rownotes, status
from campaign.contract.cellfiles import device_out_of_memory
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


OOM = "OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.19 GiB"


def _failed(note: str, rc_name: str = "tests_failed", task_id: str = "abs/r0/candidate") -> StatusRow:
    return StatusRow(task_id=task_id, round=0, workload="abs", cell="candidate", rc=1 if rc_name == "tests_failed" else 137,
                     rc_name=rc_name, rows_ok=0, rows_failed=0, note=note)


def test_a_device_out_of_memory_is_named_by_its_device_wording_only():
    assert device_out_of_memory(f"first line\ntorch.{OOM}") == f"torch.{OOM}"
    assert device_out_of_memory("HIP out of memory. Tried to allocate 2.00 GiB")
    assert device_out_of_memory("RuntimeError: CUDA error: out of memory")
    # the host's allocator raises the same class: lanes on a card do not contend for it
    assert device_out_of_memory("OutOfMemoryError: DefaultCPUAllocator: not enough memory") is None
    assert device_out_of_memory("device out of memory with 12 lanes on the card; run again alone") is None
    assert device_out_of_memory(None) is None


def test_a_device_out_of_memory_beside_other_lanes_runs_once_more_alone_and_no_more():
    lanes = status.lane_note(2, 12)
    crowded = _failed(f"{OOM}; {lanes}")
    assert status.in_lanes_out_of_memory(crowded) == 12
    assert status.settled([crowded]) == {} and status.run_alone([crowded]) == {"abs/r0/candidate"}
    noted = rownotes.noted(crowded, [])
    assert noted.note.endswith("device out of memory with 12 lanes on the card; run again alone after the lanes")
    interrupted = _failed("stopped", rc_name=status.INTERRUPTED)
    assert status.run_alone([crowded, interrupted]) == {"abs/r0/candidate"}, "a stopped retry stays owed, alone"
    again = rownotes.noted(_failed(OOM), [noted, interrupted])       # alone: no lane note
    assert again.note.endswith("run again alone on its card after a device out of memory with 12 lanes; "
                               "out of memory again: final, not retried again")
    assert status.settled([noted, interrupted, again]) == {"abs/r0/candidate": again}
    assert status.run_alone([noted, interrupted, again]) == set()
    ok = rownotes.noted(replace(CLEAN, task_id="abs/r0/candidate"), [noted])
    assert status.settled([noted, ok]) == {"abs/r0/candidate": ok} and "run again alone" in ok.note
    # a second one beside lanes (never scheduled so) settles too: the retry is owed once
    assert status.settled([noted, crowded])["abs/r0/candidate"] == crowded


def test_an_out_of_memory_alone_or_not_of_the_device_is_final_at_once():
    final = (_failed(OOM),                                              # a one-lane run: no lane note
             _failed(f"{OOM}; {status.lane_note(0, 1)}"),               # one lane of one
             _failed(f"stderr.log: DefaultCPUAllocator: not enough memory; {status.lane_note(0, 4)}"),
             _failed(f"no result.json; {OOM}; {status.lane_note(0, 4)}", rc_name="timed_out"))
    for row in final:
        assert status.settled([row]) == {row.task_id: row} and status.run_alone([row]) == set(), row
        assert rownotes.noted(row, []) == row
    ok = replace(CLEAN, note=f"{OOM}; {status.lane_note(0, 4)}")     # a note is no failure
    assert status.settled([ok]) == {ok.task_id: ok}


def test_a_death_by_a_signal_beside_other_lanes_runs_once_more_alone_and_a_second_is_final():
    """The host's OOM killer ends a process the lanes' memory together outgrew (a 2-core suite screen:
    soft_margin_loss's two sides, ~13 GB each on a 23 GB host, killed at once, retried at once beside each
    other, and its baseline killed again: final, and read as a timeout). A first death by a signal in a lane of
    several is retried alone after the lanes; alone, a second death is final and says so; one lane is as before."""
    died = _failed(status.lane_note(0, 2), rc_name="signal_SIGKILL")
    assert status.crowded(died) == 2 and status.in_lanes_out_of_memory(died) is None
    assert status.settled([died]) == {} and status.run_alone([died]) == {"abs/r0/candidate"}
    noted = rownotes.noted(died, [])
    assert noted.note.endswith("killed by SIGKILL beside 2 lanes: run once more alone after the lanes (a kill may come "
                               "from outside the cell: the host's out-of-memory killer ends a process the lanes' memory "
                               "together outgrew)")
    stopped = _failed("stopped", rc_name=status.INTERRUPTED)
    assert status.run_alone([noted, stopped]) == {"abs/r0/candidate"}, "a stopped retry stays owed, alone"
    again = rownotes.noted(_failed("", rc_name="signal_SIGKILL"), [noted, stopped])       # alone: no lane note
    assert again.note == "killed by SIGKILL again, alone: the same failure twice is deterministic; not retried again"
    assert status.settled([noted, stopped, again]) == {"abs/r0/candidate": again}
    assert status.run_alone([noted, stopped, again]) == set()
    ok = rownotes.noted(replace(CLEAN, task_id="abs/r0/candidate"), [noted])
    assert status.settled([noted, ok]) == {"abs/r0/candidate": ok}
    assert ok.note == "run again alone after a death by a signal beside 2 lanes"
    # one lane, or none: retried at once in its place, as before
    for row in (_failed(status.lane_note(0, 1), rc_name="signal_SIGKILL"), _failed("", rc_name="signal_SIGKILL")):
        assert status.crowded(row) is None and status.settled([row]) == {} and status.run_alone([row]) == set()
        assert rownotes.noted(row, []).note.endswith("killed by SIGKILL: run once more (a kill may come from outside the cell)")


def test_a_death_by_a_signal_and_an_out_of_memory_beside_lanes_are_each_retried_once():
    lanes = status.lane_note(0, 4)
    died = _failed(lanes, rc_name="signal_SIGKILL")
    crowded = _failed(f"{OOM}; {lanes}")
    assert status.settled([died]) == {} and status.settled([died, crowded]) == {}
    assert status.run_alone([died, crowded]) == {"abs/r0/candidate"}
    last = _failed("", rc_name="signal_SIGKILL")
    assert status.settled([died, crowded, last]) == {"abs/r0/candidate": last}
