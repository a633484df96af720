"""Shapes accounted for (issue 37): a class never sums its shapes into a geomean that hides one.

Built roots of four matmul shapes (`rootbuilder.mm`, the switch's effect given per shape) judged by the
shipped classifier; each test names what the code before read for the same root."""
from __future__ import annotations

import re

import rootbuilder as rb

from campaign.contract.records import Verdicts
from campaign.judging.classify import classify_root
from campaign.reporting import mdhtml, report

SMALL, MID = "test_bench_matmul[1024x1024x1024,float16]", "test_bench_matmul[2048x2048x2048,float16]"
WIDE = "test_bench_matmul[8192x4096x1024,float16]"


def judged(tmp_path, workload, options=None) -> dict:
    return classify_root(rb.build(tmp_path, [workload], options))


def one(tmp_path, workload, options=None) -> dict:
    return judged(tmp_path, workload, options)["workloads"][workload.name]


def split(**kw) -> rb.Workload:
    """One shape +5 %, one -5 %, two unchanged (before: B "no measured change ... no change beyond ±0.20 %")."""
    return rb.mm(effect=lambda r, i: {0: 1.05, 1: 0.95}.get(i, 1.0), **kw)


def issue_example(**kw) -> rb.Workload:
    """Three shapes +0.3 %, one -8 % (before: B "geomean -1.85 % ... no change beyond ±0.20 %")."""
    return rb.mm(effect=lambda r, i: {3: 0.92}.get(i, 1.003), before=4, after=4, **kw)


def test_shapes_moved_in_opposite_directions_are_named_never_no_change(tmp_path):
    w = one(tmp_path, split(before=4, after=4))
    assert w["class"] == "X", w["reason"]
    assert w["reason"].startswith(f"shapes disagree: faster {MID} -4.97%; slower {SMALL} +4.96% (1 faster and 1 slower "
                                  "of 4 shapes, each by its own interval and floor): no one direction to claim; geomean")
    assert "no change" not in w["reason"] and not w["rests_on_timing"]


def test_a_topology_reduction_does_not_make_disagreeing_shapes_a_clean_reduction(tmp_path):
    # before: C "timing neutral"; the shapes moved both ways, whatever the topology did
    w = one(tmp_path, split())
    assert w["class"] == "X" and w["reason"].startswith("shapes disagree: ") and "12 -> 4" in w["reason"]


def test_three_shapes_up_and_one_down_is_named_not_a_geomean(tmp_path):
    w = one(tmp_path, issue_example())
    assert w["class"] == "X", w["reason"]
    assert w["reason"].startswith(f"shapes disagree: faster {WIDE} -8.03%; slower ")
    assert "geomean -1.85%" in w["reason"] and "no change beyond" not in w["reason"]


def test_a_gain_carried_by_one_shape_of_four_says_so(tmp_path):
    # before: G "faster in both orders: geomean -0.76% ..." with nothing on the shapes
    w = one(tmp_path, rb.mm(effect=lambda r, i: {3: 0.97}.get(i, 1.0), before=4, after=4))
    assert w["class"] == "G", w["reason"]
    assert w["reason"].endswith(f"; 1 of 4 shapes faster ({WIDE} -3.03%); correct")


def test_min_effect_pct_is_the_smallest_claim_and_is_recorded_in_the_rule(tmp_path):
    small = rb.mm(effect=lambda r, i: {3: 0.97}.get(i, 1.0), before=4, after=4)
    verdicts = judged(tmp_path, small, rb.Options(min_effect_pct=1.0))
    w = verdicts["workloads"]["matmul"]
    assert verdicts["rule"]["min_effect_pct"] == 1.0
    assert w["class"] == "B", w["reason"]
    assert w["reason"].endswith("; faster by the rule, but geomean -0.76% is under min_effect_pct 1.00%: no claim")
    assert judged(tmp_path / "default", small)["rule"]["min_effect_pct"] == 0.0


def test_the_bound_is_printed_only_where_it_holds_for_every_shape(tmp_path):
    # min_effect_pct 0.5: the +0.3 % shapes are no disagreement, but the -8 % one is no "no change beyond ±0.20 %"
    w = one(tmp_path, issue_example(), rb.Options(min_effect_pct=0.5))
    assert w["class"] == "B", w["reason"]
    assert "no change beyond" not in w["reason"]
    assert re.search(rf"; no bound holds for every shape: 1 of 4 shape\(s\) moved beyond ±0\.\d\d% by their own "
                     rf"interval: {re.escape(WIDE)} -8\.03% \(not established for the workload\)$", w["reason"]), w["reason"]
    plain = one(tmp_path / "plain", rb.mm(effect=1.0, before=4, after=4))
    assert plain["class"] == "B" and re.search(r"; no change beyond ±0\.\d\d% \(the smallest effect", plain["reason"])


def test_identical_code_whose_shapes_disagree_is_not_the_noise_floor(tmp_path):
    w = one(tmp_path, rb.pointwise(effect=lambda r, i: {0: 1.05, 1: 0.95}.get(i, 1.0)))
    assert w["class"] == "X", w["reason"]
    assert w["reason"].startswith("IR equal at ttgir but timing moved: shapes disagree: faster "
                                  "test_bench_add[16777216,float16] -4.94%; slower test_bench_add[1048576,float16] +4.90%")
    assert w["timing"]["label"] == "IR unchanged; timing moved (shapes disagree)"


def test_identical_code_20_percent_faster_in_every_round_of_two_or_three_is_x_not_b(tmp_path):
    # T36: before, B "IR unchanged ... (its timing range is the noise floor ...)"
    for rounds in (2, 3):
        w = one(tmp_path / str(rounds), rb.pointwise(effect=0.8), rb.Options(rounds=rounds))
        assert w["class"] == "X", w["reason"]
        assert w["reason"].startswith(f"IR equal at ttgir but timing moved: leaning faster, every round beyond the "
                                      f"±0.15% A/A floor, not established ({rounds} rounds): geomean -20.0")
        assert "noise floor" not in w["reason"] and not w["rests_on_timing"]
    assert one(tmp_path / "null", rb.pointwise(), rb.Options(rounds=3))["class"] == "B"
    # one round has no interval: under no effect its one delta lies beyond its one A/A about half the time (the
    # IR-unchanged workloads whose later rounds were skipped: 11 committed H200 workloads), so it is labelled, not X
    w = one(tmp_path / "1", rb.pointwise(effect=0.8), rb.Options(rounds=1))
    assert w["class"] == "B" and w["timing"]["label"] == "IR unchanged; timing moved (not established: 1 round)"


def test_the_report_and_the_page_list_each_moved_shape_with_its_delta_and_interval(tmp_path):
    verdicts = Verdicts.model_validate(judged(tmp_path, split(before=4, after=4)))
    text = report.markdown(verdicts)
    moved = [line for line in text.splitlines() if line.startswith("- shape moved: ")]
    assert [line.split("%, ")[0] + "%" for line in moved] == [f"- shape moved: {SMALL} slower +4.96%",
                                                      f"- shape moved: {MID} faster -4.97%"]
    assert all("(range of 4 rounds), beyond its ±" in line for line in moved), moved
    assert "- shapes: 1 faster, 1 slower, 2 neutral, 2 sign-flipping (" in text
    assert f"<li>shape moved: {SMALL} slower +4.96%" in mdhtml.to_html(text)
