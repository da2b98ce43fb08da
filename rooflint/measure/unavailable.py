"""Why a calibration step cannot be measured here (calibrate.py's ceilings and the
interconnect's, interconnect.py): the one exception whose message is the step's skip
line, and PyTorch, which several steps need and a machine may lack. Imports no CuPy, so
that the interconnect's processes, which run without it, can raise it too."""

from __future__ import annotations

from typing import Any


class Unavailable(Exception):
    """A ceiling this GPU, host or environment cannot measure; the message says why."""


def import_torch(needed_for: str) -> Any:
    """PyTorch, or Unavailable saying what is measured through it (``needed_for``: "the
    bf16, fp8 and int8 tensor roofs are")."""
    try:
        import torch
    except ImportError as exc:
        raise Unavailable(f"PyTorch is not installed ({exc}); {needed_for} measured through "
                          f"it") from None
    return torch
