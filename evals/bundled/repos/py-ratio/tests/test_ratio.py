from ratio import share


def test_share():
    assert share(1, 4) == 0.25
