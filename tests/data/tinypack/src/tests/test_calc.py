import pytest

from calc import add, clamp, mean


def test_add():
    assert add(2, 3) == 5


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_high_edge():
    assert clamp(10, 0, 10) == 10
    assert clamp(11, 0, 10) == 10


def test_clamp_low_edge():
    assert clamp(-1, 0, 10) == 0


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


class TestParams:
    @pytest.mark.parametrize("a,b", [(1, 1), (2, 2)])
    def test_add_twice(self, a, b):
        assert add(a, b) == 2 * a
