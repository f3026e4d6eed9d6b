"""Speeds."""


def speed(distance, seconds):
    return distance // seconds
