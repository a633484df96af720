"""One root per class and per trap, built with realistic numbers; each asserts class and reason."""
from __future__ import annotations

import shutil

import rootbuilder as rb

from campaign.judging.classify import classify_root


def verdict(tmp_path, workloads, options=None, **kw):
    root = rb.build(tmp_path, workloads, options)
    return classify_root(root, **kw)


def one(tmp_path, workload, options=None, **kw):
    v = verdict(tmp_path, [workload], options, **kw)
    return v["workloads"][workload.name]


def test_gain_needs_correctness_and_speed_in_both_orders(tmp_path):
    w = one(tmp_path, rb.mm())
    assert w["class"] == "G", w["reason"]
    assert w["reason"].startswith("faster in both orders: geomean -8.")
    assert w["reason"].endswith("(scoped topology 12 -> 4); 4 of 4 shapes faster; correct")
    p = w["timing"]["primary"]
    assert p["order_verdicts"] == {"baseline-first": "faster", "candidate-first": "faster"}
    assert -0.09 < p["point"] < -0.07
    assert w["correctness"]["candidate"]["outside_target"] == 4     # one failing node outside the target a round, ignored


def test_clean_reduction_is_timing_neutral(tmp_path):
    w = one(tmp_path, rb.mm(effect=1.0))
    assert w["class"] == "C" and "timing neutral" in w["reason"]


def test_unchanged_ir_is_b_and_its_range_is_the_noise_floor(tmp_path):
    w = one(tmp_path, rb.pointwise())
    assert (w["class"], w["screen"]) == ("B", "NO_IR_DIFF")
    assert w["timing"]["label"] == "noise floor (IR unchanged)"


def test_changed_ir_without_reduction_is_b_when_timing_is_neutral(tmp_path):
    w = one(tmp_path, rb.mm(before=6, after=6, effect=1.0))
    assert w["class"] == "B" and "not reduced" in w["reason"]


def test_a_speedup_is_g_whatever_the_topology_did(tmp_path):
    # was B "not reduced" (topology 0 -> 0, mm 31.6 % faster on the H200) and R on an increase
    w = one(tmp_path, rb.mm(before=6, after=6))
    assert w["class"] == "G" and w["reason"].startswith("faster in both orders"), w["reason"]
    w = one(tmp_path / "up", rb.mm(before=4, after=9))
    assert w["class"] == "G", w["reason"]
    assert "topology increased but faster: the timing decides" in w["reason"]


def test_a_slowdown_with_the_topology_reduced_is_r_and_says_they_disagree(tmp_path):
    w = one(tmp_path, rb.mm(effect=1.06))
    assert w["class"] == "R"
    assert "(scoped topology 12 -> 4); topology reduced but slower: the timing decides" in w["reason"]


def test_slower_in_both_orders_is_r(tmp_path):
    w = one(tmp_path, rb.mm(effect=1.06))
    assert w["class"] == "R" and w["reason"].startswith("slower in both orders: geomean +6.")


def test_topology_increase_is_r(tmp_path):
    w = one(tmp_path, rb.mm(before=4, after=9, effect=1.0))
    assert w["class"] == "R" and w["rests_on_timing"] is False
    assert w["reason"].startswith("scoped topology 4 -> 9: increased (IR evidence alone); correct; timing neutral")


def test_candidate_incorrect_is_f(tmp_path):
    w = one(tmp_path, rb.mm(failing={"candidate": 2}))
    assert w["class"] == "F"
    # the same two nodes fail in each of four rounds: two nodes, named
    assert w["reason"] == ("candidate incorrect: 2 correctness node(s) fail where baseline passes: "
                           "test_demo.py::test_matmul[float16-1024x1024x1024], "
                           "test_demo.py::test_matmul[float16-2048x2048x2048]")


def test_candidate_crash_is_f(tmp_path):
    w = one(tmp_path, rb.mm(), rb.Options(rc={"matmul/r2/candidate": -11}))
    assert w["class"] == "F" and "candidate crashes (rc -11 signal_SIGSEGV)" in w["reason"]


def test_control_leak_is_f(tmp_path):
    leak = rb.mm()
    leak.kernels["control"] = leak.kernels["candidate"]
    w = one(tmp_path, leak)
    assert w["class"] == "F" and "switch leaks" in w["reason"]
    assert w["ir"]["control_matches"] is False


def test_record_vs_record_released_is_x(tmp_path):
    w = one(tmp_path, rb.mm("router_gemm"),
            rb.Options(identity={"router_gemm/r1/candidate": {"autotune_mode": "record", "autotune_source": None}}),
            allow_caliber_mismatch=True)
    assert w["class"] == "X" and w["reason"].startswith("caliber mismatch (released): ")


def test_timer_mismatch_is_x_and_latencies_are_not_read(tmp_path):
    root = rb.build(tmp_path, [rb.mm()], rb.Options(identity={"matmul/r2/baseline": {"timer": {"kind": "event"}}}))
    shutil.copy(root / "matrix.json", root / "cells/matmul/r2/baseline/rows.json")   # unreadable as rows
    w = classify_root(root)["workloads"]["matmul"]
    assert w["class"] == "X" and "timer.kind: graph vs event" in w["reason"]
    assert w["timing"] is None


def test_missing_reversed_order_round_is_x(tmp_path):
    # a kernel with one config: the recording cell benchmarks nothing, its IR is comparable
    w = one(tmp_path, rb.mm(tuning_configs=0), rb.Options(rounds=1))
    assert w["class"] == "X"
    assert w["reason"] == ("direction not established: 1 baseline-first, 0 candidate-first round(s); a timing claim "
                           "needs >= 2 rounds in each order (scoped topology 12 -> 4)")


def test_an_unfinished_task_is_x(tmp_path):
    w = one(tmp_path, rb.mm(), rb.Options(drop={"matmul/r2/candidate"}))
    assert (w["class"], w["reason"]) == ("X", "not run: matmul/r2/candidate did not finish (never started; `campaign run` "
                                          "resumes an unsealed root)")


def test_timeout_is_x_not_a_verdict(tmp_path):
    w = one(tmp_path / "r2", rb.mm(), rb.Options(rc={"matmul/r2/baseline": 124}))
    assert w["class"] == "X" and w["reason"].startswith("timeout in matmul/r2/baseline")
    assert w["screen"] == "IR_CHANGED"      # the screen column judges round 1's pair, which finished
    w = one(tmp_path / "r1", rb.mm(), rb.Options(rc={"matmul/r1/candidate": 124}))
    assert w["class"] == "X" and w["reason"].startswith("timeout in matmul/r1/candidate")
    assert w["screen"] == "TIMEOUT"


def test_sign_flips_are_named_and_the_claim_stays_neutral(tmp_path):
    # topk on an S5000: 32 converts gone, 17 of 42 shapes flipping sign between valid runs
    flip = rb.mm("topk", effect=lambda r, i: 1.012 if (r + i) % 2 else 0.988, noise=0.0005)
    w = one(tmp_path, flip)
    assert w["class"] == "C"
    p = w["timing"]["primary"]
    assert p["counts"]["sign_flipping"] == 4 and len(p["sign_flips"]) == 4


def test_orders_that_disagree_are_x(tmp_path):
    drift = rb.mm("drift", effect=lambda r, i: 0.95 if r % 2 else 1.05, noise=0.0005)
    w = one(tmp_path, drift)
    assert w["class"] == "X" and w["reason"].startswith("orders disagree: faster baseline-first, slower candidate-first")


def test_replay_fallbacks_are_x(tmp_path):
    w = one(tmp_path, rb.mm(), rb.Options(replay_fallbacks={"matmul/r2/candidate": 3}))
    assert w["class"] == "X"
    assert w["reason"] == "AUTOTUNE_REPLAY_FALLBACK x3 in matmul/r2/candidate: configs not pinned"


def test_no_ir_at_all_is_x_never_identical(tmp_path):
    aten = rb.pointwise("fft", "fft")
    aten.kernels = {"baseline": ()}
    w = one(tmp_path, aten)
    assert w["screen"] == "NO_TRITON"
    assert (w["class"], w["reason"]) == ("X", "no comparable IR in baseline and candidate: nothing reached the Triton compiler")
    assert w["ir"]["changed"] is None


def test_unjoinable_index_is_x(tmp_path):
    w = one(tmp_path, rb.mm(), rb.Options(no_index={"matmul/r1/candidate"}))
    assert w["class"] == "X" and w["reason"].startswith("unjoinable index in matmul/r1/candidate")


def test_fallback_rows_are_flagged_not_pooled(tmp_path):
    w = one(tmp_path, rb.mm(fallback_rows={"baseline": (0,), "candidate": (0,), "control": (0,)}))
    assert w["class"] == "G"
    assert w["timing"]["primary"]["regime"] == "graph" and len(w["timing"]["primary"]["shapes"]) == 3
    assert [o["regime"] for o in w["timing"]["others"]] == ["direct+fallback"]
    assert w["markers"]["candidate"]["BENCHMARK_DIRECT_NO_CUDAGRAPH"] == 4


def test_no_control_cell_is_conservative(tmp_path):
    w = one(tmp_path, rb.mm(), rb.Options(control=False))
    assert w["class"] == "C" and "A/A floor unknown" in w["reason"]


def test_cpu_campaign_shows_topology_but_claims_nothing_timed(tmp_path):
    v = verdict(tmp_path, [rb.mm(), rb.pointwise()], rb.Options(backend="cpu", floor=0))
    mm, add = v["workloads"]["matmul"], v["workloads"]["add"]
    assert (mm["class"], mm["reason"]) == ("X", "compile-only: not timed, correctness not executed "
                                                "(scoped topology 12 -> 4, IR changed)")
    assert mm["topology"]["cells"]["candidate"]["scoped"] == 4 and mm["timing"] is None
    assert (add["class"], add["reason"]) == ("X", "compile-only: not timed, correctness not executed "
                                                  "(scoped topology 0 -> 0, IR unchanged)")
    assert v["counts"] == {"G": 0, "C": 0, "B": 0, "R": 0, "F": 0, "X": 2}


def test_recording_cell_tuning_variants_are_not_ir_evidence(tmp_path):
    """Measured on the H200: FlagGems mm's recording baseline held 162 TTGIR variants (one per
    config it benchmarked), every replaying cell 2. Compared as IR, the control looked like a
    leak (F) and converts of configs no timer saw were counted. IR and topology come from the
    replaying baseline of round 2 instead."""
    w = one(tmp_path, rb.mm(tuning_configs=3))
    assert w["class"] != "F" and w["ir"]["control_matches"] is True
    assert w["ir"]["from"]["baseline"] == "matmul/r2/baseline"
    assert w["topology"]["cells"]["baseline"]["scoped"] == 12   # the winner's converts, not 12 + 10 + 11 + 12


def test_recording_cell_alone_is_no_comparable_ir(tmp_path):
    w = one(tmp_path, rb.mm(tuning_configs=3), rb.Options(rounds=1, control=False))
    assert w["class"] == "X"
    assert w["reason"].startswith("no comparable IR in baseline: its only cell benchmarked autotune configs")


def test_b_and_c_say_the_smallest_effect_they_could_have_resolved(tmp_path):
    # a B or C is not "no change": it is "no change beyond what this floor and these rounds resolve"
    c = one(tmp_path, rb.mm(effect=1.0))
    bound = c["timing"]["primary"]["resolvable"]
    assert c["class"] == "C" and 0 < bound < 0.05
    assert c["reason"].endswith(f"; no change beyond ±{bound * 100:.2f}% (the smallest effect this floor and these "
                                "rounds resolve)")
    b = one(tmp_path / "b", rb.pointwise(), rb.Options(rounds=4))
    assert b["class"] == "B" and "no change beyond ±" in b["reason"], b["reason"]
    one_round = one(tmp_path / "one", rb.pointwise(), rb.Options(rounds=1))
    assert one_round["reason"].endswith("(its timing range is the noise floor)"), one_round["reason"]
    assert one_round["timing"]["primary"]["resolvable"] is None
    short = one(tmp_path / "short", rb.mm(effect=1.0), rb.Options(rounds=2))
    assert short["class"] == "X", "one round in each order: no timing-neutral class to bound"
