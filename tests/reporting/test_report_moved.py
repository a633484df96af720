"""What a number is, in the report: a workload whose IR is unchanged but whose timing moved beyond the
A/A floor in every round is never "noise floor", established or not; and a run order reads plain
faster/slower only where the workload's direction is established, otherwise as a leaning."""
from __future__ import annotations

import re

import pytest
import rootbuilder as rb

from campaign.judging import direction

BARE_ORDER = re.compile(r"(baseline|candidate)-first [^,;]* round\(s\) \((faster|slower)\)")


def _report(cli, root) -> str:
    done = cli("report", root)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_ir_unchanged_and_20_percent_faster_in_every_round_is_not_the_noise_floor(tmp_path, cli, rounds):
    text = _report(cli, rb.build(tmp_path, [rb.pointwise(effect=0.8)], rb.Options(rounds=rounds)))
    row = _line(text, "| add |")
    assert "noise floor" not in row
    assert f"(IR unchanged; timing moved, not established: {rounds} round" in row
    timing = _line(text, "- timing [graph, ")
    assert f"IR unchanged; timing moved (not established: {rounds} round" in timing
    assert "(noise floor)" not in timing and "leaning faster" in timing
    assert not BARE_ORDER.search(text), BARE_ORDER.search(text)
    moved = _line(text, "- the IR is unchanged at ttgir but the timing moved -")
    assert "leaning faster" in moved and "set the IR stage to llir or ptx or sass" in moved


def test_an_established_move_with_the_ir_unchanged_reads_plain_faster_per_order(tmp_path, cli):
    text = _report(cli, rb.build(tmp_path, [rb.pointwise(effect=0.8)], rb.Options(rounds=4)))
    assert "| add | X |" in text and "(IR unchanged; timing moved, faster in both orders)" in _line(text, "| add |")
    timing = _line(text, "- timing [graph, ")
    assert "baseline-first" in timing and BARE_ORDER.search(timing) and "leaning" not in timing


def test_ir_unchanged_and_unmoved_stays_the_noise_floor(tmp_path, cli):
    text = _report(cli, rb.build(tmp_path, [rb.pointwise()], rb.Options(rounds=4)))
    assert "(noise floor)" in _line(text, "| add |")
    assert "- the IR is unchanged" not in text
    assert "baseline-first" in text and "(noise floor)" in _line(text, "- timing [graph, noise floor (IR unchanged)]")


def test_an_ir_changed_workload_without_an_established_direction_reads_leanings(tmp_path, cli):
    text = _report(cli, rb.build(tmp_path, [rb.mm(effect=0.8)], rb.Options(rounds=3)))
    timing = _line(text, "- timing [graph, result]")
    assert "leaning faster" in timing
    assert not BARE_ORDER.search(text)


def test_moved_is_the_interval_against_the_floor_and_with_one_round_its_one_delta():
    assert direction.moved([-0.2], None, 0.01) == direction.FASTER
    assert direction.moved([0.2], None, 0.01) == direction.SLOWER
    assert direction.moved([-0.005], None, 0.01) == direction.NEUTRAL
    assert direction.moved([-0.2], None, None) == direction.NEUTRAL
    assert direction.moved([-0.2, 0.1], direction.interval([0.8, 1.1]), 0.01) == direction.NEUTRAL
