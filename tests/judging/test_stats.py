"""Paired statistics: intervals say how they were made, floors gate directions, regimes never pool."""
from __future__ import annotations

import math

import pytest

from campaign.contract.cellfiles import Row
from campaign.judging import direction, stats
from campaign.judging.direction import BASELINE_FIRST as BF
from campaign.judging.direction import CANDIDATE_FIRST as CF
from campaign.judging.stats import Sample

KEY_A = ("test_bench_mm", (4096, 4096, 4096), "float16", 0)
KEY_B = ("test_bench_mm", (1024, 1024, 1024), "float16", 0)


def rounds(base: dict, cand: dict, ctrl: dict | None = None, regime: str = "graph"):
    """round -> cell -> samples from {round: {key: ms}} maps."""
    out = {}
    for r in base:
        out[r] = {"baseline": {k: Sample(v, regime) for k, v in base[r].items()},
                  "candidate": {k: Sample(v, regime) for k, v in cand[r].items()}}
        if ctrl is not None:
            out[r]["control"] = {k: Sample(v, regime) for k, v in ctrl[r].items()}
    return out


def test_interval_labels_say_how_they_were_made():
    assert direction.interval([0.92]) is None
    two = direction.interval([0.92, 0.94])
    assert two.method == "range of 2 rounds"
    assert (round(two.low, 6), round(two.high, 6)) == (-0.08, -0.06)
    six = direction.interval([0.834, 0.836, 0.835, 0.833, 0.837, 0.834])
    assert six.method == "95% t-interval of 6 rounds (log ratios)"
    assert -0.167 < six.low < six.high < -0.163      # router_gemm's six rounds: -16.6% ~ -16.2%


def test_the_t_interval_uses_n_minus_one_degrees_of_freedom():
    # five rounds: t(4) = 2.776, not t(5) = 2.571 (one degree too many makes every interval narrower)
    ratios = [0.90, 0.92, 0.91, 0.95, 0.89]
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / 5
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 4)
    iv = direction.interval(ratios)
    assert iv.low == pytest.approx(math.exp(mean - 2.776 * sd / math.sqrt(5)) - 1, rel=1e-12)
    assert iv.high == pytest.approx(math.exp(mean + 2.776 * sd / math.sqrt(5)) - 1, rel=1e-12)


def test_a_direction_needs_a_shape_for_it_and_none_against_it():
    # everything else holds (both orders, p); an aggregate carried by no shape, or hiding a shape moved
    # the other way (issue 37: 3 shapes +0.3 %, 1 shape -8 % read "geomean -1.85 %"), is not a finding
    def rule(faster, slower):
        counts = {"faster": faster, "slower": slower, "neutral": 2, "sign_flipping": 0}
        return direction.direction(direction.FASTER, "range of 4 rounds below -0.50% A/A floor",
                                   {BF: direction.FASTER, CF: direction.FASTER}, {BF: 2, CF: 2}, 1e-6, counts)[0]
    assert (rule(0, 0), rule(1, 1), rule(2, 2), rule(2, 1), rule(3, 1)) == (direction.NEUTRAL,) * 5
    assert (rule(1, 0), rule(3, 0)) == (direction.FASTER,) * 2


def test_faster_needs_interval_outside_aa_floor_in_two_rounds_of_each_order():
    orders = {1: BF, 2: CF, 3: BF, 4: CF}
    base = {r: {KEY_A: 0.250 + 0.001 * (r % 2)} for r in orders}
    cand = {r: {KEY_A: 0.230 + 0.001 * (r % 2)} for r in orders}
    ctrl = {1: {KEY_A: 0.2515}, 2: {KEY_A: 0.2508}, 3: {KEY_A: 0.2512}, 4: {KEY_A: 0.2496}}
    t = stats.timing(rounds(base, cand, ctrl), orders, True)
    shape = t.primary.shapes[0]
    assert shape.verdict == direction.FASTER
    assert shape.floor == pytest.approx(0.0032)             # max |A/A| over rounds: 0.2508/0.250 - 1
    assert t.primary.verdict == direction.FASTER, t.primary.reason
    assert t.primary.order_verdicts == {BF: direction.FASTER, CF: direction.FASTER}
    assert t.primary.p_value < 1e-6 and t.primary.df == 7     # (4 - 1) + 4 A/A rounds
    assert t.primary.rounds_per_order == {BF: 2, CF: 2}


def test_two_rounds_lean_but_never_claim_a_direction():
    """With one round per order a workload with no effect is called slower in both orders about
    3.5 % of the time (issue: simulated on Gaussian, t(3) and Laplace noise): never a direction."""
    orders = {1: BF, 2: CF}
    t = stats.timing(rounds({1: {KEY_A: 0.250}, 2: {KEY_A: 0.251}}, {1: {KEY_A: 0.230}, 2: {KEY_A: 0.231}},
                            {1: {KEY_A: 0.2505}, 2: {KEY_A: 0.2508}}), orders, True)
    assert t.primary.leaning == direction.FASTER
    assert t.primary.verdict == direction.NEUTRAL
    assert "direction not established: 1 baseline-first, 1 candidate-first" in t.primary.reason


def test_a_noisy_effect_beyond_the_floor_must_also_pass_the_pooled_t_test():
    orders = {1: BF, 2: CF, 3: BF, 4: CF}
    base = {r: {KEY_A: 1.0} for r in orders}
    cand = {1: {KEY_A: 1.011}, 2: {KEY_A: 1.25}, 3: {KEY_A: 1.011}, 4: {KEY_A: 1.25}}
    ctrl = {1: {KEY_A: 1.01}, 2: {KEY_A: 0.999}, 3: {KEY_A: 1.0}, 4: {KEY_A: 1.0}}
    t = stats.timing(rounds(base, cand, ctrl), orders, True)
    assert t.primary.leaning == direction.SLOWER and t.primary.order_verdicts == {BF: direction.SLOWER, CF: direction.SLOWER}
    assert t.primary.verdict == direction.NEUTRAL
    assert "pooled t-test p = " in t.primary.reason and ">= 0.001" in t.primary.reason


def test_a_round_taken_against_the_control_has_no_aa_and_the_floor_comes_from_the_others():
    orders = {1: BF, 2: CF, 3: BF, 4: CF}
    base = {1: {KEY_A: 0.90}, 2: {KEY_A: 1.0}, 3: {KEY_A: 1.0}, 4: {KEY_A: 1.0}}   # round 1 recorded: not comparable
    ctrl = {1: {KEY_A: 1.0}, 2: {KEY_A: 1.001}, 3: {KEY_A: 0.999}, 4: {KEY_A: 1.002}}
    cand = {r: {KEY_A: 1.05} for r in orders}
    per_round = rounds(base, cand, ctrl)
    t = stats.timing(per_round, orders, True, {1: "control"})
    assert t.references == {"1": "control"}
    assert t.primary.shapes[0].aa == ((2, pytest.approx(0.001)), (3, pytest.approx(-0.001)), (4, pytest.approx(0.002)))
    assert t.primary.floor == pytest.approx(0.002)
    assert [round(d, 4) for _, _, d in t.primary.rounds] == [0.05, 0.05, 0.05, 0.05]   # round 1: 1.05 / control 1.0
    assert t.primary.verdict == direction.SLOWER
    against_recording = stats.timing(per_round, orders, True)
    assert against_recording.primary.rounds[0][2] == pytest.approx(1.05 / 0.90 - 1)


def test_coverage_counts_shapes_paired_in_every_round():
    orders = {1: BF, 2: CF}
    base = {1: {KEY_A: 1.0, KEY_B: 1.0}, 2: {KEY_A: 1.0}}
    t = stats.timing(rounds(base, base, base), orders, True)
    assert t.coverage == pytest.approx(0.5)
    assert stats.coverage(t, [("f", (1,), "float16", 0)]) == pytest.approx(1 / 3)


def test_effect_inside_the_aa_floor_is_neutral_and_says_so():
    orders = {1: BF, 2: CF}
    # candidate 1% faster, but the A/A control moved 2%: the floor swallows it
    t = stats.timing(rounds({1: {KEY_A: 1.00}, 2: {KEY_A: 1.00}}, {1: {KEY_A: 0.99}, 2: {KEY_A: 0.988}},
                            {1: {KEY_A: 1.02}, 2: {KEY_A: 0.99}}), orders, True)
    shape = t.primary.shapes[0]
    assert shape.verdict == direction.NEUTRAL
    assert "not the ±2.00% A/A floor" in shape.reason


def test_no_control_means_floor_unknown_and_neutral():
    t = stats.timing(rounds({1: {KEY_A: 1.0}, 2: {KEY_A: 1.0}}, {1: {KEY_A: 0.8}, 2: {KEY_A: 0.8}}), {1: BF, 2: CF}, False)
    assert t.primary.verdict == direction.NEUTRAL
    assert t.primary.floor is None
    assert "A/A floor unknown" in t.primary.shapes[0].reason


def test_single_round_claims_no_direction():
    t = stats.timing(rounds({1: {KEY_A: 1.0}}, {1: {KEY_A: 0.5}}, {1: {KEY_A: 1.0}}), {1: BF}, True)
    assert t.primary.shapes[0].interval is None
    assert t.primary.verdict == direction.NEUTRAL
    assert "one round" in t.primary.shapes[0].reason


def test_sign_flips_are_counted_and_named():
    base = {1: {KEY_A: 1.0, KEY_B: 1.0}, 2: {KEY_A: 1.0, KEY_B: 1.0}}
    cand = {1: {KEY_A: 1.01, KEY_B: 0.9}, 2: {KEY_A: 0.99, KEY_B: 0.9}}
    ctrl = {1: {KEY_A: 1.001, KEY_B: 1.001}, 2: {KEY_A: 1.0, KEY_B: 1.0}}
    t = stats.timing(rounds(base, cand, ctrl), {1: BF, 2: CF}, True)
    assert t.primary.counts.sign_flipping == 1
    assert t.primary.sign_flips == ("test_bench_mm[4096x4096x4096,float16]",)
    assert t.primary.counts.faster == 1 and t.primary.counts.neutral == 1


def test_within_side_and_delta_spreads_are_separate():
    base = {1: {KEY_A: 1.00}, 2: {KEY_A: 1.10}}          # the machine drifted 10 %
    cand = {1: {KEY_A: 0.90}, 2: {KEY_A: 0.99}}          # the delta did not move
    t = stats.timing(rounds(base, cand, base), {1: BF, 2: CF}, True)
    shape = t.primary.shapes[0]
    assert shape.side_spread["baseline"] == pytest.approx(0.10 / 1.05)
    assert shape.delta_spread == pytest.approx(0.0, abs=1e-9)


def test_orders_are_judged_separately():
    base = {1: {KEY_A: 1.0}, 2: {KEY_A: 1.0}, 3: {KEY_A: 1.0}, 4: {KEY_A: 1.0}}
    cand = {1: {KEY_A: 0.90}, 2: {KEY_A: 1.10}, 3: {KEY_A: 0.90}, 4: {KEY_A: 1.10}}
    t = stats.timing(rounds(base, cand, base), {1: BF, 2: CF, 3: BF, 4: CF}, True)
    assert t.primary.order_verdicts == {BF: direction.FASTER, CF: direction.SLOWER}
    assert t.primary.verdict == direction.NEUTRAL


def test_fallback_rows_are_never_pooled_with_graph_rows():
    def row(shape, ms, fallback):
        return Row(test="t", function="test_bench_mm", op="mm", shape=shape, dtype="float16",
                   timer="direct" if fallback else "graph", latency_ms=ms, status="ok",
                   markers=("BENCHMARK_DIRECT_NO_CUDAGRAPH",) if fallback else ())
    base = stats.samples([row((1,), 1.0, False), row((2,), 1.0, True), row((3,), 1.0, True)])
    cand = stats.samples([row((1,), 0.9, False), row((2,), 0.9, True), row((3,), 0.9, False)])
    t = stats.timing({1: {"baseline": base, "candidate": cand}}, {1: BF}, False)
    assert t.primary.regime == "graph" and len(t.primary.shapes) == 1
    assert [o.regime for o in t.others] == ["direct+fallback"]
    assert t.mixed_pairs == 1                          # shape 3: baseline fell back, candidate captured


def test_repeated_keys_get_an_occurrence_and_failed_rows_are_left_out():
    rows = [Row(test="t", function="f", op="mm", shape=(8, 8), dtype="float16", timer="graph", latency_ms=ms,
                status=status) for ms, status in ((1.0, "ok"), (2.0, "ok"), (None, "failed"))]
    got = stats.samples(rows)
    assert sorted(got) == [("f", (8, 8), "float16", 0), ("f", (8, 8), "float16", 1)]
    assert stats.key_name(("f", (8, 8), "float16", 1)) == "f[8x8,float16]#2"


def test_workload_geomean_over_common_shapes():
    base = {1: {KEY_A: 1.0, KEY_B: 2.0}, 2: {KEY_A: 1.0, KEY_B: 2.0}}
    cand = {1: {KEY_A: 0.81, KEY_B: 2.0}, 2: {KEY_A: 0.81, KEY_B: 2.0}}
    t = stats.timing(rounds(base, cand, base), {1: BF, 2: CF}, True)
    assert t.primary.point == pytest.approx(math.sqrt(0.81) - 1)
    d = t.dump()
    assert d["primary"]["interval"]["method"] == "range of 2 rounds"
    assert d["orders"] == {"1": BF, "2": CF}


def test_a_shape_whose_control_is_missing_in_a_round_has_no_floor():
    orders = {1: BF, 2: CF, 3: BF, 4: CF}
    base = {r: {KEY_A: 1.0} for r in orders}
    cand = {r: {KEY_A: 0.9} for r in orders}
    ctrl = {1: {KEY_A: 1.001}, 2: {}, 3: {KEY_A: 1.0}, 4: {KEY_A: 0.999}}
    t = stats.timing(rounds(base, cand, ctrl), orders, True)
    shape = t.primary.shapes[0]
    assert shape.floor is None and shape.verdict == direction.NEUTRAL
    assert "A/A floor unknown" in shape.reason
