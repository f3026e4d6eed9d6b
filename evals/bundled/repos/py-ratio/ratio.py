"""Ratios."""


def share(part, whole):
    return part // whole
