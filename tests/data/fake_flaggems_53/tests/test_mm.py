import pytest


@pytest.mark.mm
def test_mm():
    assert 2 * 3 == 6
