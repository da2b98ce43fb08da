"""Gate thresholds written as percentages (``5%``), read one way wherever they are written.

A manifest's ``gate:`` fields and `rooflint gate`'s options (``--max-slowdown``) take the
same thresholds; reading both here keeps them from drifting apart again (a bare ``5`` was
once read as the fraction 5).
"""

from __future__ import annotations

import math
from typing import Any

from rooflint.common.errors import RooflintError

# The gate's thresholds where neither the option nor the manifest sets one; the time one is
# also compare's minimum clear gap (judge/comparison.py), so the two never disagree.
DEFAULT_MAX_SLOWDOWN = 0.05
DEFAULT_MAX_GROWTH = 0.02        # DRAM bytes and counted FLOPs
DEFAULTS = {"max_slowdown": DEFAULT_MAX_SLOWDOWN, "max_bytes_growth": DEFAULT_MAX_GROWTH,
            "max_flops_growth": DEFAULT_MAX_GROWTH}


def as_percent(fraction: float) -> str:
    """A threshold as it is written: 0.05 -> ``5%``."""
    return f"{fraction * 100:g}%"


def parse_fraction(value: Any) -> float:
    """A threshold, ``5%``, as the fraction 0.05. It is written with ``%`` and nothing else
    is read: a bare ``5`` could mean 5 % or 500 % (rooflint once read it as the fraction
    5, so ``--max-slowdown 5`` let a kernel get six times slower), and ``0.05`` reads as
    0.05 % to some. It is finite and zero or more, since a negative one fails every
    variant. The error starts with "is" so that callers put the option or field first."""
    text = str(value).strip()
    number = _number(text.removesuffix("%"))
    if number is None:
        raise RooflintError(f"is {value!r}, not a percentage (write e.g. 5%)")
    if not math.isfinite(number) or number < 0:
        raise RooflintError(f"is {value!r}: a threshold is a finite percentage, zero or more "
                            f"(e.g. 5%)")
    if not text.endswith("%"):
        raise RooflintError(f"is {value!r}, a bare number: write the threshold as a "
                            f"percentage, e.g. {_as_percentage(number, text)}")
    return number / 100


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _as_percentage(number: float, text: str) -> str:
    """What a bare number most likely meant: 0.05 was a fraction (as rooflint once read
    it), so 5%; 5 was 5%."""
    return f"{number * 100:g}%" if 0 < number < 1 else f"{text}%"


def threshold_option(option: str, value: str) -> float:
    """A threshold typed on the command line (``--max-slowdown 5%``) as a fraction, read
    as the manifest's are; an error names the option (gate's and compare's alike)."""
    try:
        return parse_fraction(value)
    except RooflintError as exc:
        raise RooflintError(f"{option} {exc}") from None
