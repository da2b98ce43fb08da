"""Which GPUs a run spreads its families over (``rooflint run --devices all|0,2``).

Each GPU gets its own worker, pinned with ``CUDA_VISIBLE_DEVICES`` to one entry of the
GPUs this process may use: those ``CUDA_VISIBLE_DEVICES`` already names (indices or
UUIDs, respected as given), else every GPU NVML counts. ``--devices`` indices count within
that visible set, as CUDA's own device numbers do.
"""

from __future__ import annotations

import os

from rooflint.common.errors import RooflintError

VISIBLE = "CUDA_VISIBLE_DEVICES"


def visible_devices() -> list[str]:
    """The GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` entries: none where
    there is no NVIDIA driver (NVML's library missing or the driver not loaded: nothing
    could run on a GPU, so no index exists); RooflintError where NVML fails otherwise, the
    GPUs perhaps there but uncounted, so that CUDA_VISIBLE_DEVICES must name them."""
    named = os.environ.get(VISIBLE)
    if named is not None:
        return [entry.strip() for entry in named.split(",") if entry.strip()]
    import pynvml
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError_LibraryNotFound, pynvml.NVMLError_DriverNotLoaded):
        return []
    except pynvml.NVMLError as exc:
        raise RooflintError(f"--devices: NVML cannot count the GPUs ({exc}); set {VISIBLE} "
                            f"to the ones to use (e.g. {VISIBLE}=0,1)") from None
    try:
        return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()


def device_indices(text: str) -> list[int] | None:
    """``all`` (None) or the distinct GPU indices of ``--devices``: what it says, checked
    before any GPU is counted, so nonsense is not reported as a missing GPU."""
    if text.strip() == "all":
        return None
    try:
        indices = [int(item) for item in text.split(",")]
    except ValueError:
        raise RooflintError(f"--devices {text!r}: expected 'all' or GPU indices such as "
                            f"0,2") from None
    negative = [i for i in indices if i < 0]
    if negative:
        raise RooflintError(f"--devices {text}: GPU indices count from 0 ({negative[0]} is "
                            f"not one)")
    if len(set(indices)) != len(indices):
        raise RooflintError(f"--devices {text}: a GPU is named twice")
    return indices


def parse_devices(text: str, visible: list[str]) -> list[str]:
    """``all`` or comma-separated indices into ``visible`` -> the entries to pin workers to."""
    indices = device_indices(text)
    if indices is None and not visible:
        raise RooflintError(f"--devices {text}: this process sees no GPU")
    if indices is None:
        return visible
    wrong = [i for i in indices if i >= len(visible)]
    if wrong:
        raise RooflintError(f"--devices {text}: no GPU {wrong[0]} ({_seen(visible)})")
    return [visible[i] for i in indices]


def _seen(visible: list[str]) -> str:
    """What exists instead of a GPU asked for: the indices there are, or none."""
    if not visible:
        return "this process sees no GPU"
    return f"this process sees {len(visible)}: indices 0 to {len(visible) - 1}"
