"""Statistics of timing samples, written once for the worker and the documents alike.

The worker (measure/launch) stops sampling once the spread is small; the result
(results.TimeStats) flags a median whose spread is large. Both must mean the same spread,
so both take it from here. Pure: numpy only, no GPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def quartiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """The first quartile, the median and the third quartile of ``samples``."""
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return float(q1), float(median), float(q3)


def relative_spread(q1: float, median: float, q3: float) -> float:
    """IQR / median: how far the middle half of the samples spreads, relative to the
    median (0 for a median of 0, which has no scale to be relative to)."""
    return (q3 - q1) / median if median else 0.0
