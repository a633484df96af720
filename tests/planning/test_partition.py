"""LPT over the cards of one host: a golden partition, the 4/3 bound, and where weights come from."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaign.planning import partition
from campaign.planning.partition import EQUAL, ROOT, SCREEN, Weight


def _w(**seconds: float) -> dict[str, Weight]:
    return {name: Weight(s, SCREEN) for name, s in seconds.items()}


def test_golden_partition_heaviest_first_to_the_least_loaded_card():
    # one heavy workload outweighs three light ones: a count split would put two beside it
    p = partition.lpt(_w(topk=70.6, mm=30.0, addmm=28.0, softmax=8.0, add=6.0, sum=6.0, abs=5.0), cards=2)
    # by hand: topk | mm, addmm (58), softmax (66), add (72); then sum to card 0 (76.6), abs to card 1 (77)
    assert p.cards == (("topk", "sum"), ("mm", "addmm", "softmax", "add", "abs"))
    assert [p.load(0), p.load(1)] == pytest.approx([76.6, 77.0])
    assert p.critical_path_s == pytest.approx(77.0)
    assert p.floor_s == pytest.approx(max(70.6, 153.6 / 2))


def test_ties_break_by_card_then_name_so_the_partition_is_reproducible():
    p = partition.lpt(_w(b=1.0, a=1.0, d=1.0, c=1.0), cards=3)
    assert p.cards == (("a", "d"), ("b",), ("c",))


def test_the_floor_is_the_heaviest_workload_when_it_dominates():
    p = partition.lpt(_w(big=100.0, s1=1.0, s2=1.0), cards=2)
    assert p.floor_s == 100.0 and p.critical_path_s == 100.0


def test_more_cards_than_workloads_leaves_cards_empty_not_an_error():
    p = partition.lpt(_w(a=2.0), cards=3)
    assert p.cards == (("a",), (), ())
    with pytest.raises(ValueError, match="0 cards"):
        partition.lpt(_w(a=2.0), cards=0)


def _best(seconds: list[float], cards: int) -> float:
    best = float("inf")
    for assignment in itertools.product(range(cards), repeat=len(seconds)):
        loads = [0.0] * cards
        for card, s in zip(assignment, seconds):
            loads[card] += s
        best = min(best, max(loads))
    return best


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(min_value=0.5, max_value=500, allow_nan=False), min_size=1, max_size=7),
       st.integers(min_value=1, max_value=3))
def test_lpt_is_within_four_thirds_of_the_best_placement(seconds, cards):
    p = partition.lpt({f"w{i}": Weight(s, SCREEN) for i, s in enumerate(seconds)}, cards)
    best = _best(seconds, cards)
    assert p.floor_s <= best + 1e-9
    assert p.critical_path_s <= (4 / 3 - 1 / (3 * cards)) * best + 1e-9
    assert sorted(n for card in p.cards for n in card) == sorted(f"w{i}" for i in range(len(seconds)))


def test_weights_trust_a_sealed_root_over_the_screen_and_say_so():
    got = partition.weights(["a", "b", "c"], rounds=4, from_root={"a": 300.0}, weight_s={"a": 10.0, "b": 20.0})
    assert got["a"] == Weight(300.0, ROOT)          # an earlier root of the same manifest: all its rounds
    assert got["b"] == Weight(80.0, SCREEN)         # one screened round, four rounds
    assert got["c"] == Weight(190.0, EQUAL)         # unknown: the mean of the known ones, labelled


def test_no_weight_anywhere_is_equal_weights_labelled():
    got = partition.weights(["a", "b"], rounds=4)
    assert got == {"a": Weight(1.0, EQUAL), "b": Weight(1.0, EQUAL)}
    assert partition.lpt(got, 2).sources == (EQUAL,)


def test_root_seconds_counts_every_attempt_and_rows_without_time_add_nothing():
    rows = [("a", 10.0), ("a", 12.5), ("b", None), ("a", 3.0), ("b", 4.0)]
    assert partition.root_seconds(rows) == {"a": 25.5, "b": 4.0}


def test_fewest_within_takes_the_fewest_bins_whose_heaviest_fits_the_budget():
    weights = _w(a=900.0, b=500.0, c=400.0, d=300.0)
    # the even share says 3 bins of 2100 / 1000; LPT puts a | b | c, d (700): within 1000
    placed = partition.fewest_within(weights, 1000.0)
    assert placed.cards == (("a",), ("b",), ("c", "d"))
    assert partition.fewest_within(weights, 2100.0).cards == (("a", "b", "c", "d"),)
    # even share 2 bins of 1200, but LPT over 2 gives a, d (1200) | b, c (900): fits; over 1100 it needs 3
    assert len(partition.fewest_within(weights, 1200.0).cards) == 2
    assert len(partition.fewest_within(weights, 1100.0).cards) == 3
    with pytest.raises(ValueError, match=r"a \(900 s\) alone exceeds 800 s"):
        partition.fewest_within(weights, 800.0)
