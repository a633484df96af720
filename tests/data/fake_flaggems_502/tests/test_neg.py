import pytest


@pytest.mark.neg
def test_neg():
    assert -(-1) == 1
