from velocity import speed


def test_speed():
    assert speed(3, 2) == 1.5
