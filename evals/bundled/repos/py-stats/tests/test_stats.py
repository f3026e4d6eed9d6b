from stats import mean


def test_mean_of_ints():
    assert mean([2, 4]) == 3
