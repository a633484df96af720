"""Each guard of the classifier, broken on a built root the way a real cell breaks it.

The audit removed each of these protections in turn and no test failed; every test here
fails when its guard is removed (tests/bench/mutations.py checks that)."""
from __future__ import annotations

import json
from pathlib import Path

import rootbuilder as rb

from campaign.judging.classify import classify_root


def cell(root: Path, task_id: str) -> Path:
    return root / "cells" / task_id


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.chmod(0o644)
    path.write_text(json.dumps(data), encoding="utf-8")


def verdict(root: Path, name: str = "matmul") -> dict:
    return classify_root(root)["workloads"][name]


def test_ir_that_differs_between_rounds_of_one_cell_is_x(tmp_path):
    root = rb.build(tmp_path, [rb.mm()])
    ttgir = next((cell(root, "matmul/r3/candidate") / "ir").glob("*-matmul_kernel.ttgir"))
    ttgir.write_text(ttgir.read_text(encoding="utf-8").replace("// body: mma_v2", "// body: mma_v2 again"),
                     encoding="utf-8")
    w = verdict(root)
    assert (w["class"], w["reason"]) == ("X", "IR of candidate differs between rounds")


def test_a_baseline_crash_is_x_never_a_candidate_failure(tmp_path):
    w = verdict(rb.build(tmp_path, [rb.mm()], rb.Options(rc={"matmul/r2/baseline": 139})))
    assert w["class"] == "X"
    assert w["reason"] == "baseline crashes (rc 139 exit_139) in matmul/r2/baseline: nothing to compare against"


def test_a_baseline_failing_its_correctness_target_is_x(tmp_path):
    w = verdict(rb.build(tmp_path, [rb.mm(failing={"baseline": 1, "candidate": 1, "control": 1})]))
    assert w["class"] == "X"
    assert w["reason"] == ("baseline fails 1 node(s) of its correctness target: "
                           "test_demo.py::test_matmul[float16-1024x1024x1024]: nothing to compare against")


def test_no_node_of_the_target_passing_is_no_correctness_evidence(tmp_path):
    root = rb.build(tmp_path, [rb.mm()])
    for r in (1, 2, 3, 4):
        edit_json(cell(root, f"matmul/r{r}/control") / "outcomes.json",
                  lambda d: [o.update(outcome="skipped") for o in d["outcomes"]])
    w = verdict(root)
    assert (w["class"], w["reason"]) == ("X", "no correctness evidence in control: no node of the target passed")


def test_correctness_not_run_on_a_gpu_is_x(tmp_path):
    root = rb.build(tmp_path, [rb.mm()])
    for r in (1, 2, 3, 4):
        edit_json(cell(root, f"matmul/r{r}/candidate") / "outcomes.json",
                  lambda d: d.update(state="not_run", reason="BENCHMARK_CAPTURE_POISONED: outputs not trusted",
                                     outcomes=[]))
    w = verdict(root)
    assert w["class"] == "X"
    assert w["reason"] == "correctness not run in candidate: BENCHMARK_CAPTURE_POISONED: outputs not trusted"


def test_ir_changed_with_no_timed_row_is_x(tmp_path):
    root = rb.build(tmp_path, [rb.mm()])
    for rows in root.glob("cells/matmul/*/*/rows.json"):
        edit_json(rows, lambda d: [row.update(latency_ms=None) for row in d["rows"]])
    w = verdict(root)
    assert (w["class"], w["reason"]) == ("X", "IR changed but no timed rows paired: nothing to judge the change by")


def test_a_failed_preflight_is_x(tmp_path):
    root = rb.build(tmp_path, [rb.mm()])
    edit_json(cell(root, "matmul/r2/control") / "result.json",
              lambda d: d["preflight"].update(ok=False, failed_check="device"))
    w = verdict(root)
    assert (w["class"], w["reason"]) == ("X", "preflight failed in matmul/r2/control check=device")


def test_an_unreadable_artifact_is_x(tmp_path):
    root = rb.build(tmp_path, [rb.mm()])
    path = cell(root, "matmul/r4/candidate") / "outcomes.json"
    path.write_text("{not json", encoding="utf-8")
    w = verdict(root)
    assert w["class"] == "X" and w["reason"].startswith("unreadable artifact in matmul/r4/candidate: outcomes.json")


def test_g_needs_faster_in_both_orders(tmp_path):
    # eight rounds (a t-interval): faster by 10 % in baseline-first rounds only, the overall
    # interval clears the floor, the candidate-first rounds measured nothing
    w = verdict(rb.build(tmp_path, [rb.mm(effect=lambda r, i: 0.90 if r % 2 else 1.0)], rb.Options(rounds=8)))
    assert w["class"] == "C", w["reason"]
    assert "not faster in candidate-first (neutral)" in w["reason"]


def test_r_needs_slower_in_both_orders(tmp_path):
    w = verdict(rb.build(tmp_path, [rb.mm(effect=lambda r, i: 1.0 if r % 2 else 1.10)], rb.Options(rounds=8)))
    assert w["class"] == "C", w["reason"]
    assert "not slower in baseline-first (neutral)" in w["reason"]


def test_an_erroring_correctness_node_counts_as_failing(tmp_path):
    # M4: a node that errors (its fixture raised) is no pass; without the rule this root reads G
    root = rb.build(tmp_path, [rb.mm(erroring_nodes={"candidate": (1,)})])
    w = verdict(root)
    assert w["class"] == "F", w["reason"]
    assert w["reason"] == ("candidate incorrect: 1 correctness node(s) fail where baseline passes: "
                           "test_demo.py::test_matmul[float16-2048x2048x2048]")


def test_the_aa_floor_comes_only_from_a_control_timed_in_the_baselines_regime(tmp_path):
    # M5: every control row fell back from capture (direct-timed): no A/A of the graph pairs, so the floor
    # is unknown and a -10 % claims nothing; with the rule gone the direct rows' A/A makes it G
    w = verdict(rb.build(tmp_path, [rb.mm(effect=0.9, tuning_configs=0, fallback_rows={"control": (0, 1, 2, 3)})]))
    assert w["class"] == "C", w["reason"]
    assert "control missing in a round: A/A floor unknown" in w["reason"]
    assert all(s["floor"] is None and s["aa"] == [] for s in w["timing"]["primary"]["shapes"])


def test_compile_only_topology_increase_is_r_on_ir_evidence_alone(tmp_path):
    # M9: nothing timed, nothing executed; the scoped topology 4 -> 6 is the claim (without the rule: X)
    w = verdict(rb.build(tmp_path, [rb.mm(before=4, after=6)], rb.Options(backend="cpu")))
    assert (w["class"], w["reason"]) == ("R", "scoped topology 4 -> 6: increased (IR evidence alone: not timed)")
    assert not w["rests_on_timing"]
    reduced = verdict(rb.build(tmp_path / "reduced", [rb.mm(before=6, after=4)], rb.Options(backend="cpu")))
    assert reduced["class"] == "X" and reduced["reason"].startswith("compile-only: not timed, correctness not executed")
