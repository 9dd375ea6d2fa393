"""A tiny library used by evalharness's own tests."""


def add(a, b):
    return a + b


def clamp(value, low, high):
    """Limit value to the closed interval [low, high]."""
    if value < low:
        return low
    if value > high:
        return high
    return value


def mean(values):
    values = list(values)
    if not values:
        raise ValueError("mean of an empty sequence")
    return sum(values) / len(values)
