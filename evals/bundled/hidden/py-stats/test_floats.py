from stats import mean


def test_mean_of_floats():
    assert mean([1, 2]) == 1.5


def test_mean_of_ints():
    assert mean([2, 4]) == 3
