"""The report's FlagGems-vs-torch section over timed rows: torch / FlagGems latency per pair,
median per cell side, reference rows paired only with the FlagGems row of their own shape."""
from __future__ import annotations

from campaign.contract.cellfiles import Row
from campaign.reporting import speedup


def _row(shape, role, ms, dtype="float16", status="ok", test="b/test_x.py::test_abs"):
    return Row(test=test, function="test_abs", op="abs", shape=shape, dtype=dtype, timer="graph",
               latency_ms=ms if status == "ok" else None, status=status, role=role)


def test_pairs_are_torch_over_flaggems_within_one_shape_and_dtype():
    rows = [_row((64,), "reference", 2.0), _row((64,), "measured", 1.0),
            _row((128,), "reference", 3.0), _row((128,), "measured", 4.0),
            _row((64,), "reference", 9.0, dtype="float32"),              # no FlagGems row of its own: no pair
            _row((256,), "reference", 1.0), _row((256,), "measured", 0, status="failed")]
    assert sorted(speedup.pairs(rows)) == [0.75, 2.0]


def test_a_cell_side_is_the_median_over_its_rounds_and_shapes_and_is_labelled():
    r1 = [_row((64,), "reference", 2.0), _row((64,), "measured", 1.0), _row((8,), "reference", 1.0), _row((8,), "measured", 1.0)]
    r2 = [_row((64,), "reference", 3.0), _row((64,), "measured", 1.0)]
    own = [_row((64,), "measured", 1.0)]                                   # a workload with no reference rows
    table = speedup.summary({("abs", "baseline"): [r1, r2], ("abs", "candidate"): [r2],
                             ("mine", "baseline"): [own]})
    assert table == {"abs": {"baseline": (2.0, 3), "candidate": (3.0, 1)}}
    lines = speedup.markdown(table, ("baseline", "candidate"), executes=True)
    assert lines[:3] == ["## FlagGems vs torch", "", speedup.LABEL]
    assert "| abs | 2.000× (n=3) | 3.000× (n=1) |" in lines
    assert speedup.markdown({}, ("baseline",), executes=True) == []


def test_untimed_sides_say_so_instead_of_a_number():
    table = speedup.summary({("abs", "baseline"): [[_row((64,), "reference", 0, status="compiled"),
                                                      _row((64,), "measured", 0, status="compiled")]]})
    assert table == {"abs": {"baseline": None}}
    assert "| abs | not timed |" in speedup.markdown(table, ("baseline",), executes=True)
    untimed = speedup.markdown(table, ("baseline",), executes=False)
    assert any(line.startswith("Not timed: this backend executes nothing") for line in untimed)
    assert not any("×" in line for line in untimed)
