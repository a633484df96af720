"""The A/A floor (`campaign.judging.direction.aa_floor`): the largest |A/A| up to 4 rounds, the 80th
percentile beyond, so that adding rounds from the same noise never raises it in expectation."""
from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from campaign.contract.plans import Stopping
from campaign.judging import direction, stats, stopping
from campaign.judging.stats import Sample

AA = st.floats(min_value=-0.3, max_value=0.3, allow_nan=False)


@given(st.lists(AA, min_size=1, max_size=4))
def test_up_to_four_rounds_the_floor_is_the_largest_aa_bit_for_bit(aa):
    assert direction.aa_floor(aa, len(aa), True) == math.exp(max(abs(math.log1p(d)) for d in aa)) - 1
    assert direction.floor_note(len(aa)) == ""


@given(st.lists(AA, min_size=1, max_size=40))
def test_the_floor_is_the_kth_smallest_distance_k_ceil_four_fifths_of_n(aa):
    n, floor = len(aa), direction.aa_floor(aa, len(aa), True)
    distances = [abs(math.log1p(d)) for d in aa]
    at = math.log1p(floor)
    k = direction.floor_rank(n)
    assert k == math.ceil(0.8 * n - 1e-9)
    assert sum(x <= at + 1e-12 for x in distances) >= k and sum(x < at - 1e-12 for x in distances) < k
    # symmetric in log ratio: a control r fast is as far as one 1/r slow
    assert direction.aa_floor([1 / (1 + d) - 1 for d in aa], n, True) == pytest.approx(floor, rel=1e-9)


def test_the_expected_position_never_exceeds_that_of_the_largest_of_four():
    """k/(n + 1) is where the k-th of n order statistics lies in expectation, whatever the distribution."""
    positions = {n: direction.floor_rank(n) / (n + 1) for n in range(1, 201)}
    assert [direction.floor_rank(n) for n in (1, 2, 3, 4, 5, 6, 8, 10, 12)] == [1, 2, 3, 4, 4, 5, 7, 8, 10]
    assert max(positions[n] for n in range(4, 201)) == positions[4] == 4 / 5
    # the largest rank that keeps it: one more would pass 4/5 at every n from 4 on
    assert all((direction.floor_rank(n) + 1) / (n + 1) > 4 / 5 for n in range(4, 201))


def _draw(kind: str, rng: random.Random) -> float:
    if kind == "gaussian":
        return rng.gauss(0, 0.003)
    if kind == "t3":
        return rng.gauss(0, 0.003) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)
    return (rng.expovariate(1) - rng.expovariate(1)) * 0.003


@pytest.mark.parametrize("kind", ["gaussian", "t3", "laplace"])
def test_more_rounds_from_the_same_noise_never_raise_the_floor_in_expectation(kind):
    rng = random.Random(20261206)
    trials = 4000
    mean = {}
    for n in range(4, 13):
        mean[n] = sum(direction.aa_floor([_draw(kind, rng) for _ in range(n)], n, True) for _ in range(trials)) / trials
    # each count above 4 gives a lower floor on average than 4 rounds (at 9: 6 % lower for Gaussian A/A);
    # the largest |A/A| would have grown by 25-60 % from 4 to 12 rounds
    assert all(mean[n] < 0.97 * mean[4] for n in range(5, 13)), mean


def _timing(aa: list[float], effect: float) -> stats.Timing:
    key = ("test_mm", (64,), "float16", 0)
    per_round, orders = {}, {}
    for r, a in enumerate(aa, start=1):
        wobble = 1 + (0.0005 if r % 3 else -0.0005)
        per_round[r] = {"baseline": {key: Sample(1.0, "graph")}, "control": {key: Sample(1.0 + a, "graph")},
                        "candidate": {key: Sample((1 + effect) * wobble, "graph")}}
        orders[r] = direction.ORDERS[(r - 1) % 2]
    return stats.timing(per_round, orders, True)


def test_one_wild_control_round_among_twelve_no_longer_hides_a_one_percent_slowdown():
    """A 1 % slowdown, A/A within 0.2 % but one control 3 % off: at 4 rounds the floor is that 3 %
    (as it always was), at 12 it is the 3rd largest |A/A| and the slowdown clears it."""
    aa = [0.03, 0.002, -0.0015, 0.001, -0.002, 0.0012, 0.0018, -0.001, 0.0005, -0.0019, 0.0016, -0.0008]
    four, twelve = _timing(aa[:4], 0.01).primary, _timing(aa, 0.01).primary
    assert four.floor == pytest.approx(0.03) and four.verdict == direction.NEUTRAL
    assert "A/A floor (" not in four.reason
    assert twelve.floor == pytest.approx(0.002, rel=1e-9)
    assert twelve.verdict == direction.SLOWER, twelve.reason
    assert "A/A floor (the 80th-percentile |A/A| of 12 rounds: their 3rd largest)" in twelve.reason
    shape = twelve.shapes[0]
    assert shape.floor == pytest.approx(0.002, rel=1e-9) and shape.verdict == direction.SLOWER


def test_a_workload_decided_neutral_past_four_rounds_says_which_aa_its_floor_is():
    aa = [0.004, -0.003, 0.0035, -0.0025, 0.003, -0.004, 0.0032, -0.0028, 0.0031, -0.0033, 0.0029, -0.0036]
    t = _timing(aa, 0.0)
    decision = stopping.decide(t, 12, Stopping(min=4, max=12))
    assert decision.state == stopping.DECIDED, decision.why
    assert decision.why.endswith("A/A floor (the 80th-percentile |A/A| of 12 rounds: their 3rd largest))")
    assert "A/A floor (" not in stopping.decide(_timing(aa[:4], 0.0), 4, Stopping(min=4, max=12)).why
