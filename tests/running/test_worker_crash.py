"""A worker that crashes mid-cell reads as a crash, never as a failed test: it exits with its own
code (`WorkerExit.CRASH`, 70, outside pytest's 0-5), status.tsv names it ``worker_crashed``, and the
workload is X (the harness failed, not the switch). Before the worker had its own codes a crash
exited 1, pytest's "some tests failed", which status.tsv named ``tests_failed`` and the classifier
judged as a cell that ran.

How it is staged: the candidate's benchmark registers a pytest plugin whose unconfigure raises,
so the exception leaves pytest.main inside a real worker process (`bench_faults.test_bench_worker_crash`).
"""
from __future__ import annotations

from pathlib import Path

from runroots import by_id, fault, prepare, run

from campaign.contract import canonical
from campaign.contract.errors import EXIT_OK, WORKER_EXITS, WorkerExit
from campaign.contract.verdictnames import INCONCLUSIVE


def test_a_worker_crash_mid_cell_is_a_crash_row_and_an_x(tmp_path: Path):
    root = prepare(tmp_path, [fault("crash", "test_bench_worker_crash")], per_process=1)
    done = run(root)
    assert done.returncode == EXIT_OK, done.stderr          # the baseline ran: a verdict, not a dead workload
    found = by_id(root)
    assert (found["crash/r1/baseline"].rc, found["crash/r1/baseline"].rc_name) == (0, "ok")
    crashed = found["crash/r1/candidate"]
    assert (crashed.rc, crashed.rc_name) == (70, "worker_crashed") == (WorkerExit.CRASH, WORKER_EXITS[WorkerExit.CRASH][0])
    assert crashed.failed
    result = canonical.read_json(root / "cells" / "crash" / "r1" / "candidate" / "result.json")
    assert result["rc"] == 70 and "worker crashed: RuntimeError: injected worker crash" in result["note"]
    verdict = canonical.read_json(root / "receipt.json")["verdicts"]["workloads"]["crash"]
    assert verdict["class"] == INCONCLUSIVE, verdict
    assert verdict["reason"].startswith("worker crashed in crash/r1/candidate (rc 70 worker_crashed): "
                                        "the harness failed, not the switch"), verdict


def test_the_worker_codes_lie_outside_pytest_and_each_has_one_name():
    own = [code for code in WorkerExit if code > WorkerExit.NO_TESTS]
    assert all(code not in range(6) for code in own) and WorkerExit.CRASH == 70
    assert set(WORKER_EXITS) == set(WorkerExit)
    names = [name for name, _ in WORKER_EXITS.values()]
    assert len(set(names)) == len(names) and "tests_failed" == WORKER_EXITS[WorkerExit.TESTS_FAILED][0]
