"""The p-values and the step-down behind every timing direction."""
from __future__ import annotations

import pytest

from campaign.judging import significance


@pytest.mark.parametrize("df,t", [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (7, 2.365), (30, 2.042)])
def test_t_p_values_match_the_published_95_percent_quantiles(df, t):
    assert significance.t_two_sided_p(t, df) == pytest.approx(0.05, abs=2e-4)


def test_t_p_value_at_the_workload_level():
    assert significance.t_two_sided_p(5.408, 7) == pytest.approx(0.001, rel=1e-3)
    assert significance.t_two_sided_p(0.0, 5) == pytest.approx(1.0)


def test_pooled_t_uses_the_aa_rounds_as_zero_mean_noise():
    p, df = significance.pooled_t([0.05, 0.05, 0.05, 0.05], [0.001, -0.001, 0.002, 0.0])
    assert df == 7 and p < 1e-9
    p_no_aa, df_no_aa = significance.pooled_t([0.05, 0.04, 0.06, 0.05], [])
    assert df_no_aa == 3 and 1e-4 < p_no_aa < 1e-2
    assert significance.pooled_t([0.05], [0.0]) == (None, None)


def test_pooled_t_without_spread_is_certain_either_way_even_where_the_spread_underflows():
    assert significance.pooled_t([0.0, 0.0, 0.0], [0.0, 0.0]) == (1.0, 4)
    assert significance.pooled_t([0.01, 0.01, 0.01], [0.0, 0.0]) == (0.0, 4)
    # positive, but its square divided by df and n is below the smallest float: no division by zero
    assert significance.pooled_t([-1e-7] * 6, [0.0] * 5 + [1.1641727485088852e-161]) == (0.0, 11)


def test_holm_steps_down_and_caps_each_level():
    held = significance.holm({"a": 0.0001, "b": 0.0004, "c": 0.002, "d": None})
    assert held["a"] == (True, pytest.approx(0.001))          # min(cap 0.001, 0.01 / 3)
    assert held["b"] == (True, pytest.approx(0.001))          # min(0.001, 0.01 / 2)
    assert held["c"] == (False, pytest.approx(0.001))
    assert "d" not in held
    many = significance.holm({str(i): 0.0009 for i in range(20)})
    assert not any(ok for ok, _ in many.values())             # 0.01 / 20 = 0.0005 < 0.0009
    stopped = significance.holm({"a": 0.006, "b": 0.007}, alpha=0.01, cap=0.01)
    assert stopped["a"] == (False, pytest.approx(0.005))
    assert stopped["b"] == (False, pytest.approx(0.01))      # below its own level, but the step-down stopped
