from ranges import inclusive


def test_inclusive():
    assert inclusive(1, 3) == [1, 2, 3]
