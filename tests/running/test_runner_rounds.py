"""Adaptive rounds: later rounds run only where round 1's baseline and candidate IR differ."""
from __future__ import annotations

from pathlib import Path

from conftest import run_cli
from runroots import by_id, demo, fault, manifest, prepare, rows, run


def test_later_rounds_only_where_the_ir_changed(tmp_path: Path):
    # add at both its dtypes (its four rows are counted below); matmul's IR change at float16 alone
    root = prepare(tmp_path, [demo("add"), demo("matmul", float16=True), fault("noir", "test_bench_noop")], rounds=2)
    done = run(root)
    assert done.returncode == 0, done.stderr
    found = by_id(root)
    assert len(rows(root)) == len(found) == 12

    # compile-only rows are counted apart from timed ones: the row says what ran and that nothing was timed
    assert found["add/r1/baseline"].rows_ok == 0
    assert "4 rows compiled, not timed (compile-only)" in found["add/r1/baseline"].note

    # DISABLE_MMA_V3 turns matmul's wgmma into mma v2 on sm_90: round 2 is measured.
    assert {found[f"matmul/r2/{cell}"].rc_name for cell in ("baseline", "candidate")} == {"ok"}

    # add carries no tl.dot: identical code, the rounds would measure noise.
    for cell in ("baseline", "candidate"):
        skipped = found[f"add/r2/{cell}"]
        assert (skipped.rc, skipped.rc_name, skipped.failed) == (None, "skipped", False)
        assert skipped.note.startswith("SWITCH_NO_IR_DIFF: round 1 baseline and candidate ttgir fingerprints are equal")
        assert not (root / "cells" / "add" / "r2" / cell).exists()

    # No IR at all is no comparable IR, never "identical".
    noir = found["noir/r2/baseline"]
    assert noir.rc_name == "skipped"
    assert noir.note == ("NO_COMPARABLE_IR: round 1 baseline and candidate has no *.ttgir file: "
                         "no comparable IR (this does not mean the switch is inert)")
    assert "SWITCH_NO_IR_DIFF" not in noir.note

    line = (root / "status.tsv").read_text().splitlines()[0]
    assert line.split("\t")[:6] == ["task_id", "round", "workload", "cell", "rc", "rc_name"]


def _round2_notes(root: Path) -> list[str]:
    """What the rounds policy does with round 2 of ``add`` before round 1 ran: a note when it
    asks round 1's IR (the policy is on), none when every later round runs regardless."""
    from campaign.contract.runroot import RunRoot
    from campaign.running.rounds import Rounds
    frame = RunRoot(root)
    manifest, matrix = frame.frame()
    notes: list[str] = []
    task = next(t for t in matrix.tasks if t.id == "add/r2/baseline")
    assert Rounds(root, matrix, manifest, notes.append).skip(task, {}) is None
    return notes


def _edit_manifest_copy(root: Path, old: str, new: str) -> None:
    copy = root / "manifest.yaml"
    text = copy.read_text(encoding="utf-8")
    assert old in text
    copy.write_text(text.replace(old, new), encoding="utf-8")


def test_the_rounds_policy_is_the_matrix_not_an_edited_manifest_copy(tmp_path: Path):
    on = prepare(tmp_path, [demo("add")], rounds=2)
    assert "later_only_if_ir_changed" not in (on / "matrix.json").read_text()   # the default: old roots' bytes
    _edit_manifest_copy(on, "later_only_if_ir_changed: true", "later_only_if_ir_changed: false")
    assert _round2_notes(on) == ["add: round 1 baseline has not finished; later rounds run"]

    path = manifest(tmp_path, [demo("add")], rounds=2, campaign="rounds-off")
    path.write_text(path.read_text().replace("later_only_if_ir_changed: true", "later_only_if_ir_changed: false"))
    done = run_cli("prepare", path, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    off = Path(done.stdout.strip().splitlines()[-1])
    assert '"later_only_if_ir_changed":false' in (off / "matrix.json").read_text().replace(" ", "")
    _edit_manifest_copy(off, "later_only_if_ir_changed: false", "later_only_if_ir_changed: true")
    assert _round2_notes(off) == []
