"""Whether a kernel's output matches its reference: one function, for numpy or CuPy.

The worker compares on the GPU (``xp`` = CuPy): for a 2^27-element output the host's
float64 passes took seconds per variant, the GPU's take milliseconds. The same code runs
on numpy in the CPU tests.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from rooflint.formats.jobs import OutputCheck


def compare(name: str, output: Any, expected: Any, xp: ModuleType) -> OutputCheck:
    """``output`` against the float64 ``expected``: the relative L2 error (the check),
    the largest absolute and relative differences, and how many elements are NaN/inf
    (unwritten outputs are NaN-poisoned, so those count as wrong, with a zero value)."""
    output = output.astype(xp.float64).reshape(expected.shape)
    finite = xp.isfinite(output)
    diff = xp.abs(xp.where(finite, output, 0.0) - expected)
    reference_norm = float(xp.sqrt(xp.sum(expected * expected)))
    scale = float(xp.max(xp.abs(expected))) if expected.size else 0.0
    max_abs = float(diff.max()) if diff.size else 0.0
    return OutputCheck(
        buffer=name,
        rel_l2=float(xp.sqrt(xp.sum(diff * diff))) / (reference_norm or 1.0),
        max_abs=max_abs,
        max_rel=max_abs / (scale or 1.0),
        nonfinite=int(output.size - int(xp.count_nonzero(finite))),
    )


def poison(dtype: np.dtype) -> float | int:
    """What an output buffer is filled with before a checked run, so that an element the
    kernel never writes cannot pass: NaN, or the largest integer."""
    dtype = np.dtype(dtype)
    return math.nan if dtype.kind == "f" else np.iinfo(dtype).max


def failure_message(failed: list[OutputCheck], tolerance: float) -> str:
    parts = []
    for c in failed:
        if c.nonfinite:
            parts.append(f"{c.buffer}: {c.nonfinite} elements NaN/inf (unwritten output is "
                         f"NaN-poisoned; if the kernel reads {c.buffer}, declare it role: inout)")
        else:
            parts.append(f"{c.buffer}: relative error {c.rel_l2:.2e} > tolerance {tolerance:.1e}")
    return "; ".join(parts)
