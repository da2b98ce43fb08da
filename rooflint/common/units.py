"""Parse the quantities users type: times, byte counts and plain numbers.

`rooflint explain` takes numbers straight from a profiler or a back-of-envelope, so it
accepts the spellings people use (``0.713ms``, ``128MiB``, ``537e6``) and rejects
anything ambiguous with a message instead of guessing.
"""

from __future__ import annotations

import math
import re

from rooflint.common.errors import RooflintError

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-z/]*)\s*$")

TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
BYTE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
COUNT_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}  # 537M, 2.5G, 137.4e9


def _split(text: str, what: str) -> tuple[float, str]:
    match = _QUANTITY.match(text.replace("µ", "u"))
    if not match:
        raise RooflintError(f"cannot read {what} {text!r}: expected a number with an optional unit")
    return float(match.group(1)), match.group(2)


def _scaled(text: str, what: str, units: dict[str, float], case_sensitive: bool = False) -> float:
    value, unit = _split(text, what)
    key = unit if case_sensitive else unit.lower()
    if key not in units:
        known = ", ".join(u for u in units if u)
        raise RooflintError(f"unknown unit {unit!r} in {what} {text!r} (use {known})")
    result = value * units[key]
    if not math.isfinite(result):
        raise RooflintError(f"{what} {text!r} is not a finite number")
    if result < 0:
        raise RooflintError(f"{what} {text!r} is negative")
    return result


SHORTEST_KERNEL_S = 1e-9   # a nanosecond, about one GPU clock cycle: no kernel is shorter


def parse_time(text: str) -> float:
    """Seconds from ``2.1ms``, ``713us``, ``40ns``, ``0.5s`` or a plain number of seconds;
    a time under SHORTEST_KERNEL_S is a slip of units (``1e-300``), refused as one: the
    rates it would give pass any float and read as inf."""
    seconds = _scaled(text, "time", TIME_UNITS, case_sensitive=True)
    if seconds == 0:
        raise RooflintError(f"time {text!r} must be greater than zero")
    if seconds < SHORTEST_KERNEL_S:
        raise RooflintError(f"time {text!r} is under a nanosecond: no kernel is that short "
                            f"(a GPU clock cycle takes about one); check the units (s, ms, "
                            f"us, ns)")
    return seconds


def parse_bytes(text: str) -> float:
    """Bytes from ``128MiB``, ``201MB``, ``8GiB``, ``4096`` (decimal and binary prefixes)."""
    return _scaled(text, "byte count", BYTE_UNITS)


def parse_count(text: str) -> float:
    """A plain count such as FLOPs: ``537e6``, ``137.4e9``, ``2G``."""
    return _scaled(text, "count", COUNT_UNITS)


def format_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_rate(value: float, unit: str) -> str:
    """``3.88 TB/s``, ``50.9 TFLOP/s``: SI prefixes, three significant digits."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_bytes(count: float) -> str:
    for prefix, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.3g} {prefix}"
    return f"{count:.0f} B"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 kernel``, ``3 kernels``, ``1 launch``, ``6 launches``: a count with its noun in
    the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def format_params(params: dict[str, float]) -> str:
    """``N=134217728, STRIDE=32``: whole numbers in full (a size read as 1.34218e+08 is
    no use to someone choosing --size values), others as short as they read."""
    return ", ".join(f"{name}={int(value) if float(value).is_integer() else f'{value:g}'}"
                     for name, value in params.items())
