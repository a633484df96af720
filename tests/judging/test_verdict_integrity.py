"""The audit's reproductions (issue: verdicts that survive an adversarial audit), one root each.

Each test rebuilds the small root that published a wrong class before the rule was fixed and
pins the class the evidence supports."""
from __future__ import annotations

import json

import rootbuilder as rb

from campaign.contract.records import WorkloadVerdict
from campaign.judging.classify import classify_root, holm_pass

ROUNDS = ("r2", "r3", "r4")


def one(tmp_path, workload, options=None, **kw):
    root = rb.build(tmp_path, [workload], options)
    return classify_root(root, **kw)["workloads"][workload.name]


def test_failed_rows_are_compared_per_shape_not_as_totals(tmp_path):
    # baseline fails shape 0, candidate fails shapes 1 and 2: was G from the one shape left
    w = one(tmp_path, rb.mm(failed_rows={"baseline": (0,), "candidate": (1, 2)}))
    assert w["class"] == "F"
    assert w["reason"].startswith("candidate fails 2 benchmark row(s) that baseline runs: "
                                  "test_bench_matmul[2048x2048x2048,float16], test_bench_matmul[4096x4096x4096,float16]")
    assert w["rows_failed"]["baseline"] == ["test_bench_matmul[1024x1024x1024,float16]"]


def test_a_row_failing_in_the_baseline_only_is_counted_not_compared(tmp_path):
    w = one(tmp_path, rb.mm(failed_rows={"baseline": (0,), "candidate": (0,), "control": (0,)}))
    assert w["class"] == "X" and "coverage 75% < 90%" in w["reason"] and "1 shape(s) X: baseline fails them" in w["reason"]


def test_shapes_missing_on_the_candidate_side_are_named_in_the_coverage_reason(tmp_path):
    # the candidate's rows of two shapes never came back (no row, no failure): coverage said 50 %
    # and nothing about which shapes
    root = rb.build(tmp_path, [rb.mm()])
    for rows in root.glob("cells/matmul/*/candidate/rows.json"):
        data = json.loads(rows.read_text(encoding="utf-8"))
        data["rows"] = [row for row in data["rows"] if row["shape"][0] not in (1024, 8192)]
        rows.write_text(json.dumps(data), encoding="utf-8")
    w = classify_root(root)["workloads"]["matmul"]
    assert (w["class"], w["reason"]) == ("X", "coverage 50% < 90%: too few shapes paired in every round (candidate "
                                              "lacks 2 shape(s) the baseline timed: "
                                              "test_bench_matmul[1024x1024x1024,float16], "
                                              "test_bench_matmul[8192x4096x1024,float16]) "
                                              "(scoped topology 12 -> 4)")


def test_control_failing_a_row_the_baseline_runs_is_f(tmp_path):
    w = one(tmp_path, rb.mm(failed_rows={"control": (3,)}))
    assert w["class"] == "F" and w["reason"].startswith("control fails 1 benchmark row(s) that baseline runs")


def test_correctness_is_compared_per_node_not_as_totals(tmp_path):
    # baseline fails node 0, candidate fails node 1 (which the baseline passes): was X "baseline
    # fails 4 node(s)", the candidate's own failure hidden behind the baseline's
    w = one(tmp_path, rb.mm(failing_nodes={"baseline": (0,), "candidate": (1,), "control": (0,)}))
    assert (w["class"], w["reason"]) == ("F", "candidate incorrect: 1 correctness node(s) fail where baseline passes: "
                                              "test_demo.py::test_matmul[float16-2048x2048x2048]")


def test_a_candidate_failing_only_what_the_baseline_fails_is_x_naming_the_nodes(tmp_path):
    w = one(tmp_path, rb.mm(failing_nodes={"baseline": (0, 2), "candidate": (0,), "control": (2,)}))
    assert (w["class"], w["reason"]) == ("X", "baseline fails 2 node(s) of its correctness target: "
                                              "test_demo.py::test_matmul[float16-1024x1024x1024], "
                                              "test_demo.py::test_matmul[float16-4096x4096x4096]: "
                                              "nothing to compare against")


def test_equal_ir_with_timing_moved_is_x_naming_the_stage_to_try(tmp_path):
    # was B "+29.89 % (noise floor)": a switch acting below the IR stage is not inert
    w = one(tmp_path, rb.pointwise(effect=1.2))
    assert w["class"] == "X", w["reason"]
    assert w["reason"].startswith("IR equal at ttgir but timing moved: slower, geomean +20.")
    assert w["reason"].endswith("the switch acts below ttgir (try llir, ptx, sass)")
    assert w["rests_on_timing"] is True


def test_identical_code_never_reads_faster_or_slower_in_an_order(tmp_path):
    w = one(tmp_path, rb.pointwise(effect=1.0015))       # within the noise: a lean, never a direction
    assert w["class"] == "B"
    assert set(w["timing"]["primary"]["order_verdicts"].values()) == {"noise floor"}


def test_a_candidate_falling_back_from_capture_drops_pairs_and_is_x(tmp_path):
    # was G from the one shape left in the graph regime
    w = one(tmp_path, rb.mm(fallback_rows={"candidate": (0, 1, 2)}))
    assert w["class"] == "X"
    assert w["reason"].startswith("12 pair(s) dropped: baseline and candidate were timed differently")


def test_two_rounds_never_give_a_direction(tmp_path):
    w = one(tmp_path, rb.mm(effect=1.06), rb.Options(rounds=2))
    assert w["class"] == "X"
    assert w["reason"].startswith("direction not established: 1 baseline-first, 1 candidate-first round(s)")
    assert one(tmp_path / "four", rb.mm(effect=1.06))["class"] == "R"


def test_three_rounds_are_still_one_short_in_candidate_first(tmp_path):
    w = one(tmp_path, rb.mm(effect=1.06), rb.Options(rounds=3))
    assert w["class"] == "X" and "2 baseline-first, 1 candidate-first" in w["reason"]


def test_a_warm_tuner_cache_in_an_isolated_cell_keeps_the_workload_from_g(tmp_path):
    warm = {"matmul/r3/candidate": {"tuner_cache_at_start": {"files": 3, "bytes": 4096}}}
    w = one(tmp_path, rb.mm(), rb.Options(identity=warm))
    assert w["class"] == "X"
    assert w["reason"].startswith("would be G (faster in both orders")
    assert "matmul/r3/candidate started on a warm tuner cache (3 file(s)) though labelled isolated" in w["reason"]
    shared = one(tmp_path / "shared", rb.mm(), rb.Options(identity=warm, tuner_cache="shared"))
    assert shared["class"] == "G"                          # a shared cache is a caliber, warned elsewhere


def test_an_isolated_cell_without_its_tuner_cache_record_is_unknown_not_clean(tmp_path):
    # a run identity without tuner_cache_at_start (the first H200 roots, or a worker that did not
    # write it) was read as an empty cache: nothing shows the cell was isolated
    unknown = {"matmul/r2/baseline": {"tuner_cache_at_start": None}}
    w = one(tmp_path, rb.mm(), rb.Options(identity=unknown))
    assert w["class"] == "X" and w["reason"].startswith("would be G (faster in both orders")
    assert w["taints"] == ["matmul/r2/baseline: tuner cache at start unknown (its run identity has no "
                           "tuner_cache_at_start) though labelled isolated"]


def test_a_harness_change_during_the_run_keeps_the_workload_from_r(tmp_path):
    w = one(tmp_path, rb.mm(effect=1.06), harness_drift=("plugins/timing.py",))
    assert w["class"] == "X" and "harness file plugins/timing.py changed during the run" in w["reason"]
    assert w["taints"] == ["harness file plugins/timing.py changed during the run"]


def _inert_autotuned() -> rb.Workload:
    shapes = (((1024, 4096), "float16", 0.0101), ((4096, 4096), "float16", 0.0342), ((8192, 8192), "float16", 0.1207))
    kernel = (rb.Kernel("layer_norm_kernel", 2, 300, "norm"),)
    return rb.Workload("layer_norm", "layer_norm", shapes, {"baseline": kernel}, 1.0, tuning_configs=3)


def test_an_inert_autotuned_workload_is_b_when_the_control_stands_in(tmp_path):
    # was X "no comparable IR in baseline": round 2 skipped (control equals candidate), round 1's
    # baseline only recorded; the screen of the same root said NO_IR_DIFF
    skip = {f"layer_norm/{r}/{c}" for r in ROUNDS for c in ("baseline", "control", "candidate")}
    w = one(tmp_path, _inert_autotuned(), rb.Options(skip=skip))
    assert w["class"] == "B", w["reason"]
    assert (w["ir"]["reference"], w["ir"]["control_matches"], w["screen"]) == ("control", True, "NO_IR_DIFF")


def test_a_control_not_among_the_recording_variants_is_not_checkable(tmp_path):
    skip = {f"layer_norm/{r}/{c}" for r in ROUNDS for c in ("baseline", "control", "candidate")}
    wl = _inert_autotuned()
    leaked = (rb.Kernel("layer_norm_kernel", 2, 300, "norm_leaked"),)
    wl.kernels = {"baseline": wl.kernels["baseline"], "control": leaked, "candidate": leaked}
    w = one(tmp_path, wl, rb.Options(skip=skip))
    assert w["class"] == "X" and w["reason"].startswith("control not checkable: the baseline only recorded")


def test_the_recording_round_is_timed_against_the_control(tmp_path):
    # H200: mm's identical control read -11.4 % against the recording baseline
    w = one(tmp_path, rb.mm(effect=1.0, recording_bias=1.13))
    assert w["class"] == "C", w["reason"]
    assert w["timing"]["references"] == {"1": "control"}
    assert abs(w["timing"]["primary"]["rounds"][0][2]) < 0.01


def _holm(ws: dict, claims: dict) -> dict:
    """`holm_pass` over the parts of a verdict it reads, the rest filled in; the verdicts back as JSON."""
    def model(w):
        cells = {c: {"task": c, "scoped": t["scoped"], "unscoped": 0, "excluded": [], "unjoinable": []}
                 for c, t in w["topology"]["cells"].items()}
        return WorkloadVerdict.model_validate({
            **w, "screen": "IR_CHANGED", "ir": {"stage": "ttir", "fingerprints": {}, "control_matches": None, "files": {},
                                               **w["ir"]},
            "topology": {"floor": 0, "cells": cells}, "correctness": {}, "markers": {},
            "rounds": {"planned": [], "done": [], "skipped": [], "missing": []}, "timing": None, "caliber": []})
    return {n: w.dump() for n, w in holm_pass({n: model(w) for n, w in ws.items()}, claims).items()}


def test_holm_takes_back_claims_that_do_not_survive_the_campaign():
    def verdict(klass, before, after, on_timing=True, changed=True):
        cells = {"baseline": {"scoped": before}, "candidate": {"scoped": after}}
        return {"class": klass, "reason": "timed", "rests_on_timing": on_timing,
                "ir": {"changed": changed, "reference": "baseline"}, "topology": {"cells": cells}}
    # a timing claim taken back falls to its timing-neutral class: reduced C, unchanged B, increased R
    ws = {f"w{i}": verdict("G", 12, 4) for i in range(9)}
    ws.update(flat=verdict("R", 4, 4), up=verdict("G", 4, 9), equal=verdict("X", 0, 0, changed=False))
    ws["topo"] = verdict("R", 4, 9, on_timing=False)
    ws = _holm(ws, {**{n: 0.0009 for n in ws if n != "topo"}, "topo": None})
    assert {ws[f"w{i}"]["class"] for i in range(9)} == {"C"}
    assert "not held after Holm over 12 timed workload(s): p = 0.0009 >= 0.001, so G -> C" in ws["w0"]["reason"]
    assert "p = 0.0009 >= 0.00083, so X -> B" in ws["equal"]["reason"], "the smallest level goes to the first in order"
    assert (ws["flat"]["class"], ws["up"]["class"], ws["equal"]["class"]) == ("B", "R", "B")
    assert ws["topo"]["class"] == "R" and "Holm" not in ws["topo"]["reason"]


def test_holm_counts_every_timed_workload_not_only_those_that_claim():
    # one borderline G (p = 0.0009) beside eleven timed workloads that claim nothing (B, C, X):
    # the family is twelve, its first level 0.01 / 12 = 0.00083, so the G is taken back. A
    # family of claimers only (one) would hold it at 0.001.
    def verdict(klass, on_timing):
        return {"class": klass, "reason": "timed", "rests_on_timing": on_timing, "ir": {"changed": True, "reference": "baseline"},
                "topology": {"cells": {"baseline": {"scoped": 12}, "candidate": {"scoped": 4}}}}
    ws = {"mm": verdict("G", True)}
    ws.update({f"quiet{i}": verdict("B", False) for i in range(11)})
    ws = _holm(ws, {"mm": 0.0009, **{f"quiet{i}": 0.4 for i in range(11)}})
    assert ws["mm"]["class"] == "C"
    assert "not held after Holm over 12 timed workload(s): p = 0.0009 >= 0.00083, so G -> C" in ws["mm"]["reason"]
    assert {ws[f"quiet{i}"]["class"] for i in range(11)} == {"B"}


def _telemetry(root, clock=lambda task_id: (1980.0, "")) -> None:
    """Give every timed row a one-second window and put one sample inside it, at the SM clock and
    reasons ``clock(task_id)`` names (the H200 sealed sw_power_cap at 870-1965 MHz)."""
    from campaign.contract import telemetryfile
    from campaign.contract.telemetryfile import Sample
    samples, t = [], 1_764_500_000.0
    for rows_file in sorted(root.glob("cells/*/*/*/rows.json")):
        task_id = "/".join(rows_file.parent.relative_to(root / "cells").parts)
        data = json.loads(rows_file.read_text(encoding="utf-8"))
        mhz, reasons = clock(task_id)
        for row in data["rows"]:
            row.update(window_start_unix=t, window_end_unix=t + 1.0)
            samples.append(Sample(t + 0.5, "0", mhz, 2619.0, 41.0, 690.0, 100.0, reasons))
            t += 2.0
        rows_file.chmod(0o644)
        rows_file.write_text(json.dumps(data), encoding="utf-8")
    (root / "telemetry.tsv").write_text("\t".join(telemetryfile.COLUMNS) + "\n"
                                        + "".join(telemetryfile.format_sample(s) for s in samples), encoding="utf-8")


def _one_task(task: str, mhz: float, reasons: str):
    return lambda task_id: (mhz, reasons) if task_id == task else (1980.0, "")


def test_an_environmental_throttle_not_cleared_is_x_and_clocks_are_shown_per_side(tmp_path):
    root = rb.build(tmp_path, [rb.mm()])
    _telemetry(root, _one_task("matmul/r3/candidate", 1605.0, "hw_slowdown"))
    w = classify_root(root)["workloads"]["matmul"]
    assert w["class"] == "X"
    assert w["reason"].startswith("environmental throttle while timed, not cleared by re-timing: candidate 4 of 16 "
                                  "timed row(s) (hw_slowdown)")
    assert w["clocks"]["candidate"]["sm_clock_min_mhz"] == 1605.0
    assert w["clocks"]["candidate"]["environmental_rows"] == 4 and w["clocks"]["candidate"]["capped_rows"] == 0
    assert w["clocks"]["baseline"]["throttled_rows"] == 0 and w["clocks"]["baseline"]["sm_clock_median_mhz"] == 1980.0


def test_the_power_cap_on_every_side_keeps_a_direction_its_cycles_confirm(tmp_path):
    # was X "throttled while timed": on the H200 sw_power_cap is dense GEMM's operating point
    root = rb.build(tmp_path, [rb.mm()])
    _telemetry(root, lambda task_id: (1605.0, "sw_power_cap"))
    w = classify_root(root)["workloads"]["matmul"]
    assert w["class"] == "G", w["reason"]
    assert "cycles -8." in w["reason"] and "faster too" in w["reason"]
    assert w["cycles"]["verdict"] == "faster" and abs(w["cycles"]["point"] - w["timing"]["primary"]["point"]) < 1e-6
    assert {c: k["capped_rows"] for c, k in w["clocks"].items()} == {"baseline": 16, "candidate": 16, "control": 16}


def test_a_gap_the_clock_difference_explains_is_x_with_both_figures(tmp_path):
    # the candidate 8 % faster in time, but its card ran 8.7 % faster too: the same cycles
    root = rb.build(tmp_path, [rb.mm()])
    _telemetry(root, lambda task_id: (1980.0, "") if task_id.endswith("candidate") else (1980.0 * 0.92, "sw_power_cap"))
    w = classify_root(root)["workloads"]["matmul"]
    assert w["class"] == "X", w["reason"]
    assert w["reason"].startswith("the clock difference explains the gap: time -8.")
    assert "cycles +0.0" in w["reason"] or "cycles -0.0" in w["reason"], w["reason"]
    assert w["cycles"]["verdict"] == "neutral"


def test_a_clock_fact_in_one_round_leaves_a_gap_not_established_in_cycles(tmp_path):
    # one candidate cell at 1605 MHz: its cycles move 19 % in that round only, too spread to establish
    root = rb.build(tmp_path, [rb.mm()])
    _telemetry(root, _one_task("matmul/r3/candidate", 1605.0, "sw_power_cap"))
    w = classify_root(root)["workloads"]["matmul"]
    assert w["class"] == "X", w["reason"]
    assert w["reason"].startswith("the gap is not established in cycles (it leans faster, short of the rule)")


def test_equal_ir_with_timing_moved_under_an_environmental_throttle_says_so(tmp_path):
    root = rb.build(tmp_path, [rb.pointwise(effect=1.2)])
    _telemetry(root, _one_task("add/r2/candidate", 1700.0, "hw_thermal_slowdown"))
    w = classify_root(root)["workloads"]["add"]
    assert w["class"] == "X" and w["rests_on_timing"] is False, "not a timing claim Holm could turn into B"
    assert w["reason"].startswith("IR equal at ttgir, timing moved under an environmental throttle not cleared")


def test_clean_clocks_leave_the_class_alone(tmp_path):
    root = rb.build(tmp_path, [rb.mm()])
    _telemetry(root)
    w = classify_root(root)["workloads"]["matmul"]
    assert w["class"] == "G", w["reason"]
    assert {c: k["throttled_rows"] for c, k in w["clocks"].items()} == {"baseline": 0, "candidate": 0, "control": 0}


def test_a_floor_that_excludes_every_variant_leaves_nothing_to_judge(tmp_path):
    # a sealed R (scoped topology 4 -> 9) at a floor above every launch count: was B "not reduced; correct"
    w = one(tmp_path, rb.mm(before=4, after=9, effect=1.0), rb.Options(floor=1000))
    assert (w["class"], w["reason"]) == ("X", "floor 1000 excludes every launched variant: nothing to judge "
                                              "(baseline and candidate scope none)")


def test_inherited_code_paths_and_a_switch_over_a_pin_are_shown(tmp_path):
    from campaign.reporting import report
    ids = {"matmul/r1/baseline": {"inherited_env": {"PYTHONPATH": "/tmp/site"}},
           "matmul/r2/candidate": {"pinned_env": {"TRITON_DEFAULT_FP_FUSION": "1", "DISABLE_MMA_V3": "0"}}}
    root = rb.build(tmp_path, [rb.mm()], rb.Options(identity=ids))
    verdicts = classify_root(root)
    assert verdicts["environment"] == {"inherited": ["PYTHONPATH=/tmp/site"],
                                       "switch_overrides_pin": {"name": "DISABLE_MMA_V3", "pinned": ["0"]},
                                       "cells_set": {"baseline": {}, "control": {"DISABLE_MMA_V3": "0"},
                                                     "candidate": {"DISABLE_MMA_V3": "1"}},
                                       "declared": {}}
    text = report.markdown(verdicts)
    assert "Each cell set: baseline: nothing; control: `DISABLE_MMA_V3=0`; candidate: `DISABLE_MMA_V3=1`." in text
    assert "Inherited by the cells (code paths, not caliber): `PYTHONPATH=/tmp/site`" in text
    assert "The switch `DISABLE_MMA_V3` is a variable the harness pins (to 0" in text
