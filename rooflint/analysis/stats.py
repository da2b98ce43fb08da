"""Statistics of timing samples, written once for the worker and the documents alike.

The worker (measure/launch) stops sampling once the spread is small; TimeStats, which a
result records, flags a median whose spread is large. Both must mean the same spread,
so both take it from here. Pure: numpy only, no GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rooflint.common.sense import Seconds, Size

# IQR / median above this and the median itself is in doubt (the w4a16 cuBLAS baseline on
# the H200 read 17.5 us with an IQR of 88 %): flagged wherever such a time is shown.
NOISY_SPREAD = 0.10


def quartiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """The first quartile, the median and the third quartile of ``samples``."""
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return float(q1), float(median), float(q3)


def relative_spread(q1: float, median: float, q3: float) -> float:
    """IQR / median: how far the middle half of the samples spreads, relative to the
    median (0 for a median of 0, which has no scale to be relative to)."""
    return (q3 - q1) / median if median else 0.0


@dataclass
class TimeStats:
    median_s: Seconds
    q1_s: Seconds
    q3_s: Seconds
    min_s: Seconds
    n: Size                             # how many samples were taken
    # Why the samples spread where it is not noise (a profiled kernel whose work changes
    # along the program's run): such a spread does not make the median uncertain.
    varies: str = ""

    @property
    def iqr_s(self) -> float:
        return self.q3_s - self.q1_s

    @property
    def spread(self) -> float:
        """The relative spread (stats.relative_spread) that decides whether the median is
        trusted."""
        return relative_spread(self.q1_s, self.median_s, self.q3_s)

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD and not self.varies

    @property
    def noise(self) -> str:
        """What makes it noisy, in words: the spread against the limit, and the sample count."""
        return (f"IQR ±{100 * self.spread:.0f}% of the median over {self.n} samples "
                f"(limit ±{100 * NOISY_SPREAD:.0f}%)")

    @classmethod
    def of(cls, samples: list[float]) -> "TimeStats":
        q1, median, q3 = quartiles(samples)
        return cls(median, q1, q3, float(min(samples)), len(samples))
