"""Which of a profile's chosen kernels need pass 2, and which the counter cache serves
(issue 50).

Pass 2 costs Nsight Compute's replay passes on every launch shape of every chosen kernel's
function, about 0.2 s each: most of a profile beyond the program's own run. A kernel of
PyTorch's own operators (``aten::``: its elementwise, reduction, normalisation kernels and
the cuBLAS and cuDNN kernels they call) runs code that the PyTorch, CUDA and cuDNN
versions fix, so at the same launch shape, on inputs of the same dims and types, on the
same GPU, driver and Nsight Compute, reading the same counters, it counts the same bytes,
FLOPs and stalls as in an earlier profile; its time is measured again in pass 1. Those
are kept (rooflint.formats.counter_cache) under kernel_key and read back. Kernels any
other code launched are always profiled: a Triton kernel, a custom operator or a program's
own CUDA keeps its name when its code changes.

Nsight Compute selects launches by name, so a function is left out of pass 2 only when all
its chosen launch shapes are served; otherwise all of them are profiled afresh.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, fields

from rooflint.analysis.counters import Counters
from rooflint.formats.gpus import DeviceInfo
from rooflint.judge.kernel_times import Identity, KernelTime


def reuse_context(libraries: dict | None, device: DeviceInfo, ncu_version: str | None
                  ) -> dict | None:
    """What every served kernel's counters depend on beside its own launch: the library
    versions pass 1's trace names, the GPU and driver, Nsight Compute, and the fields
    rooflint keeps; None where the trace names no versions (nothing is served)."""
    if libraries is None:
        return None
    return {"libraries": libraries, "device": asdict(device) | {"index": None},
            "ncu": ncu_version, "counters": sorted(f.name for f in fields(Counters))}


def kernel_key(k: KernelTime, context: dict, metrics: list[str]) -> str | None:
    """The counter cache's key of ``k``'s counters read as ``metrics``; None where they
    cannot be served: a launch of it came from no ATen operator, or its inputs were not
    recorded."""
    if not k.inputs:
        return None
    described = {"kernel": k.kernel, "grid": k.grid, "block": k.block,
                 "inputs": sorted(k.inputs), "metrics": metrics, **context}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def served(chosen: list[KernelTime], held: dict[Identity, Counters]
           ) -> tuple[dict[Identity, Counters], list[KernelTime]]:
    """The counters ``held`` serves and the kernels pass 2 still profiles: a function's
    kernels are served together, when every one of them is held, or profiled together."""
    functions: dict[str, list[KernelTime]] = {}
    for k in chosen:
        functions.setdefault(k.identity[0], []).append(k)
    whole = {name for name, mine in functions.items() if all(k.identity in held for k in mine)}
    return ({k.identity: held[k.identity] for k in chosen if k.identity[0] in whole},
            [k for k in chosen if k.identity[0] not in whole])
