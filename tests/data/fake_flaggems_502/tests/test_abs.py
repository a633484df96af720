import pytest


@pytest.mark.abs
@pytest.mark.parametrize("n", [1, 2])
def test_abs(n):
    assert abs(-n) == n
