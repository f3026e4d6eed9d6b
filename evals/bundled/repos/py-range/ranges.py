"""Inclusive ranges."""


def inclusive(a, b):
    return list(range(a, b))
