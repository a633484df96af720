"""The screen's IR pass: round 0 decides, untimed, which workloads' round 1 is timed.

The screen matrix is pinned by a golden file (``tests/golden/matrix-demo-cpu-screen.json``:
the demo's 4 workloads, an IR pass of baseline and candidate before round 1); `campaign run`'s
matrix stays byte-identical to ``matrix-demo-cpu.json``. End to end through the CLI on the
compile-only backend (the session's screen of the demo's add and matmul at sass,
`conftest.screened_demo_two`, which the review page's tests read too): ``--time-unchanged`` times
every round 1 and leaves the table of a screen without an IR pass (a screen stopped inside its IR
pass, then resumed: `tests/running/test_irlanes.py`). The judging edges (a table row from the IR pass, a round 1 that disagrees) and an untimed cell on a
backend that executes are checked on their own, in-process.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_cli
from timingsession import BENCH_ADD, RecordedTimers, context, session

from campaign.backends.cuda import CudaBackend
from campaign.contract import canonical, status
from campaign.contract.plans import Matrix
from campaign.flows import freeze
from campaign.judging import evidence, irevidence, screening, screenrange, screenroot, screentable
from campaign.judging.screening import Facts, Side
from campaign.planning.matrix import expand
from campaign.worker import cell

pytest_plugins = ["pytester"]

DEMO = PROJECT_ROOT / "manifests" / "demo-cpu.yaml"
GOLDEN = PROJECT_ROOT / "tests" / "golden" / "matrix-demo-cpu-screen.json"


def _screen_matrix(path: Path, **kw) -> Matrix:
    checked = freeze.check(path)
    one = checked.manifest.model_copy(update={"rounds": checked.manifest.rounds.model_copy(update={"count": 1})})
    return expand(one, checked.resolved, ir_pass=True, **kw)


def _writable_copy(root: Path, to: Path) -> Path:
    """A sealed root is read-only: an unsealed, writable copy of it to take apart."""
    shutil.copytree(root, to, symlinks=True)
    for path in [to, *to.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    (to / "receipt.json").unlink()
    return to


def _table(root: Path) -> dict[str, dict[str, str]]:
    return {r["workload"]: r for r in screentable.parse((root / "screen.tsv").read_text(encoding="utf-8"))}


def test_screen_matrix_is_byte_identical_to_golden_and_run_matrices_are_unchanged():
    # Deliberate change of the screen's matrix: round 0 (the IR pass) added before round 1.
    matrix = _screen_matrix(DEMO)
    assert canonical.dumps(matrix.model_dump(mode="json")) == GOLDEN.read_text(encoding="utf-8")
    ids = [t.id for t in matrix.tasks]
    assert ids[:5] == ["add/r0/baseline", "add/r0/candidate", "add/r1/baseline", "add/r1/control", "add/r1/candidate"]
    assert ids[5:11] == [f"{w}/r0/{c}" for w in ("softmax", "row_sum", "matmul") for c in ("baseline", "candidate")]
    timed = _screen_matrix(DEMO, time_unchanged=True)
    assert json.loads(canonical.dumps(timed.model_dump(mode="json")))["time_unchanged"] is True
    run_matrix = freeze.check(DEMO).matrix
    assert all(t.timed and t.round >= 1 for t in run_matrix.tasks)
    assert canonical.dumps(run_matrix.model_dump(mode="json")) == \
        (PROJECT_ROOT / "tests" / "golden" / "matrix-demo-cpu.json").read_text(encoding="utf-8")


@pytest.mark.slow
def test_time_unchanged_times_every_round_1_and_keeps_the_table_of_a_screen_without_ir_pass(screened_demo_two,
                                                                                                tmp_path: Path):
    root = screened_demo_two          # the demo's add and matmul, screened with --time-unchanged (`conftest`)
    assert canonical.read_json(root / "matrix.json")["time_unchanged"] is True
    latest = status.latest(status.read(root / "status.tsv")[0])
    assert {latest[f"{w}/r1/{c}"].rc_name for w in ("add", "matmul") for c in ("baseline", "control", "candidate")} \
        == {"ok"}
    table = _table(root)
    assert {w: r["verdict"] for w, r in table.items()} == {"add": "NO_IR_DIFF", "matmul": "IR_CHANGED"}
    assert "IR pass" not in table["add"]["note"] and table["add"]["fingerprint_control"]

    # The same evidence without the IR pass (round 0's tasks, rows and folders taken out of a copy)
    # is a screen as it ran before the IR pass existed: its table is byte for byte this one.
    bare = _writable_copy(root, tmp_path / "bare")
    matrix = Matrix.model_validate(canonical.read_json(bare / "matrix.json"))
    kept = tuple(t for t in matrix.tasks if t.round >= 1)
    (bare / "matrix.json").write_text(canonical.dumps(matrix.model_copy(
        update={"tasks": kept, "time_unchanged": False}).model_dump(mode="json")), encoding="utf-8")
    lines = (bare / "status.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    (bare / "status.tsv").write_text("".join(line for line in lines if "/r0/" not in line), encoding="utf-8")
    for workload in ("add", "matmul"):
        shutil.rmtree(bare / "cells" / workload / "r0")
    assert screentable.render(screenroot.table(bare)) == (root / "screen.tsv").read_text(encoding="utf-8")

    # On a device round 1 tunes by timing while the IR pass takes each key's first config: the
    # identities differ across rounds by design, and the IR pass is kept out of the timed caliber.
    device_like = _writable_copy(root, tmp_path / "device-like")
    for identity in device_like.glob("cells/*/r1/*/run_identity.json"):
        identity.write_text(json.dumps({**canonical.read_json(identity), "autotune_policy": "measured"}))
    assert evidence.load_root(device_like).caliber.findings == ()
    assert [r["verdict"] for r in screenroot.table(device_like)] == ["NO_IR_DIFF", "IR_CHANGED"]


def test_time_unchanged_is_refused_where_no_screen_is_frozen(tmp_path: Path):
    done = run_cli("screen", "--resume", tmp_path, "--time-unchanged")
    assert done.returncode == 2 and "--time-unchanged applies to a fresh screen" in done.stderr


# -- the table's edges, in-process --------------------------------------------------------

def _side(cell: str, fp: str, elapsed: float = 2.0) -> Side:
    return Side(cell=cell, rc=0, rc_name="ok", elapsed_s=elapsed, rows=4, fingerprint=fp, ir_files=1, scoped=0,
                unscoped=0)


def _facts(*sides: Side, **kw) -> Facts:
    return Facts(workload="w", op="add", backend="cuda", ir_stage="ttgir", dtypes=("float16",), dtypes_own=True,
                 sides={s.cell: s for s in sides}, caliber={}, **kw)


def test_a_row_from_the_ir_pass_has_no_range_and_no_weight():
    row = screentable.row(_facts(_side("baseline", "a"), _side("candidate", "a"), ir_pass_only=True))
    assert (row["verdict"], row["range"], row["range_label"], row["weight_s"]) == (
        "NO_IR_DIFF", "", screenrange.IR_PASS_RANGE, "")
    assert row["fingerprint_baseline"] == "a" and row["elapsed_baseline"] == "2.0" and row["fingerprint_control"] == ""
    assert row["note"].endswith(screening.IR_PASS_NOTE)
    empty = screentable.row(_facts(Side(cell="baseline", rc=0, rows=0), Side(cell="candidate", rc=0, rows=0),
                                 ir_pass_only=True))
    assert empty["verdict"] == "NO_ROWS" and empty["note"].endswith(screening.IR_PASS_SKIPPED)


def test_round_1_stands_where_the_ir_pass_disagreed_and_the_note_says_so():
    sides = (_side("baseline", "a"), _side("control", "a"), _side("candidate", "a"))
    row = screentable.row(_facts(*sides, ir_pass_change=irevidence.DIFFER))
    assert row["verdict"] == "NO_IR_DIFF" and "the IR pass" in row["note"] and "said IR_CHANGED" in row["note"]
    assert row["weight_s"] == "6.0", "a timed round 1 keeps its weight"
    agreed = screentable.row(_facts(*sides, ir_pass_change=irevidence.EQUAL))
    assert "IR pass" not in agreed["note"]
    moved = screentable.row(_facts(_side("baseline", "a"), _side("candidate", "b"), ir_pass_change=irevidence.EQUAL))
    assert moved["verdict"] == "IR_CHANGED" and "said NO_IR_DIFF: it disagreed" in moved["note"]


def test_an_untimed_task_runs_no_correctness_whatever_the_backend():
    assert cell.correctness_not_run({}, executes=True, timed=False) == cell.IR_PASS
    assert cell.correctness_not_run({}, executes=False, timed=False) == cell.IR_PASS
    assert cell.correctness_not_run({}, executes=True) is None


def test_an_untimed_task_on_a_backend_that_executes_runs_each_row_once_and_times_nothing(pytester, tmp_path):
    ctx = context(tmp_path, CudaBackend(), dtypes=("float16",))
    ctx = dataclasses.replace(ctx, plan=ctx.plan.model_copy(
        update={"task": ctx.task.model_copy(update={"timed": False})}))
    recorded = RecordedTimers()
    result, rows, log = session(pytester, ctx, BENCH_ADD, recorded)
    assert result.ret == 0 and len(rows) == 3
    assert {(r.status, r.timer, r.latency_ms) for r in rows} == {("compiled", "none", None)}
    assert recorded.graph_calls == 0 and recorded.direct_calls == []
    assert "timer=none (IR pass: untimed, each call runs once)" in log
    assert os.path.isfile(ctx.cell_dir / "rows.json")
