"""Aggregation shared by the benchmarks: 100 x mean, as the papers report scores."""

from __future__ import annotations

import math
from collections.abc import Iterable


def mean(values: Iterable[float]) -> float:
    vals = [float(v) for v in values]
    return sum(vals) / len(vals) if vals else float("nan")


def percent(values: Iterable[float], digits: int | None = 2) -> float:
    """100 x mean, rounded to `digits` (None: unrounded); NaN for no values."""
    m = mean(values)
    if math.isnan(m):
        return m
    return round(100 * m, digits) if digits is not None else 100 * m
