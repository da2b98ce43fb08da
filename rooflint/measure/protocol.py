"""The wire between the CLI process and the measurement worker: one JSON object per line
(the records are formats/jobs.py's), the worker's profiler argument, the size of the
cold-cache sweep it allocates, and whether a family's buffers fit beside it (asked in the
CLI process, before a worker allocates anything)."""

from __future__ import annotations

import json
import math
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from rooflint.common.errors import RooflintError
from rooflint.common.units import format_bytes, format_params

if TYPE_CHECKING:
    from rooflint.formats.family_job import ResolvedFamily
    from rooflint.formats.gpus import DeviceInfo


# The worker's argument when Nsight Compute runs it, followed by modules to import ahead.
PROFILER_ARG = "--profiler"


def flush_bytes(l2_bytes: int) -> int:
    """The cold-cache sweep's buffer: twice the L2 (and at least 4 MiB), so one read of it
    evicts whatever the kernel left there."""
    return max(2 * l2_bytes, 4 << 20)


def check_fits(family: ResolvedFamily, device: DeviceInfo) -> None:
    """Refuse, before the worker allocates anything, a family that cannot fit in the GPU's
    memory: its buffers, a pristine copy of each input (a reset is a device copy), the
    expected outputs in float64 (checks run on the GPU) and the cold-cache flush buffer."""
    needed = flush_bytes(device.l2_bytes)
    for b in family.job.buffers:
        elements = math.prod(b.shape)
        needed += elements * np.dtype(b.dtype).itemsize
        needed += elements * np.dtype(b.dtype).itemsize if b.role != "out" else 0
        needed += elements * 8 if b.role != "in" else 0
    if needed > device.memory_bytes:
        sizes = format_params(family.params)
        raise RooflintError(f"{family.manifest.path}: with {sizes} the family needs "
                            f"{format_bytes(needed)} of GPU memory (buffers, a pristine copy "
                            f"of each input, float64 expected outputs), more than the "
                            f"{format_bytes(device.memory_bytes)} of the {device.name}; "
                            f"choose smaller --size values")


def send(stream: IO[str], event: str, **payload: Any) -> None:
    """One protocol event from the worker (its jobs and calibration alike): a JSON object
    on one line, flushed, so the parent has it even if the worker dies next."""
    stream.write(json.dumps({"event": event, **payload}) + "\n")
    stream.flush()
