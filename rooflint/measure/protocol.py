"""The wire between the CLI process and the measurement worker: one JSON object per line
(the records are formats/jobs.py's), the worker's profiler argument, and the size of the
cold-cache sweep it allocates."""

from __future__ import annotations

import json
from typing import IO, Any


# The worker's argument when Nsight Compute runs it, followed by modules to import ahead.
PROFILER_ARG = "--profiler"


def flush_bytes(l2_bytes: int) -> int:
    """The cold-cache sweep's buffer: twice the L2 (and at least 4 MiB), so one read of it
    evicts whatever the kernel left there."""
    return max(2 * l2_bytes, 4 << 20)


def send(stream: IO[str], event: str, **payload: Any) -> None:
    """One protocol event from the worker (its jobs and calibration alike): a JSON object
    on one line, flushed, so the parent has it even if the worker dies next."""
    stream.write(json.dumps({"event": event, **payload}) + "\n")
    stream.flush()
