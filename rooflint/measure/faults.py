"""What a failure on the GPU costs: one variant's row (VariantFailed), or the worker's CUDA
context (CudaFault), after which the worker must exit and a fresh one takes the variants
that remain."""

from __future__ import annotations

from typing import Callable

import cupy


class CudaFault(Exception):
    """A CUDA error after which the context cannot be trusted; the worker must exit."""


class VariantFailed(Exception):
    """The variant cannot be measured (compile error, bad launch); others can."""


def raise_if_context_lost() -> None:
    """A sticky CUDA error (an illegal address, a failed launch) breaks every later call in
    this context, whichever call happened to report it first: then the worker must exit
    rather than let the next variants fail in its place."""
    try:
        cupy.cuda.runtime.deviceSynchronize()
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
        raise CudaFault(str(exc)) from None


def guarded(run: Callable[[], None], stream: cupy.cuda.Stream) -> None:
    """Run and synchronize; turn CUDA errors into CudaFault (the context is suspect)."""
    try:
        run()
        stream.synchronize()
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
        raise CudaFault(str(exc)) from None
