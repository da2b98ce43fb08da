"""A variant as one call that launches it: its compiled kernels with their arguments, or
its python function.

A python variant's function runs on the session's stream; when its file imports PyTorch
or Triton it runs inside ``torch.cuda.stream`` of that stream, so PyTorch ops and Triton
kernels (which launch on PyTorch's current stream) are timed, checked and profiled like
CUDA launches.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import cupy
import numpy as np

from rooflint.formats.jobs import DeviceInfo, FamilyJob, LaunchJob, VariantJob, uses_torch
from rooflint.measure.build import BuildError
from rooflint.measure.faults import VariantFailed
from rooflint.measure.kernels import Kernels, load_kernels
from rooflint.measure.python_modules import FamilyModules

_SCALARS = {"i32": np.int32, "i64": np.int64, "u32": np.uint32, "u64": np.uint64,
            "f32": np.float32, "f64": np.float64}


class VariantRunners:
    """Makes each variant of a family its run(): builds shared by the variants that build
    alike, and which compiler built each."""

    def __init__(self, job: FamilyJob, device: DeviceInfo, stream: cupy.cuda.Stream,
                 modules: FamilyModules, buffers: dict[str, cupy.ndarray]):
        self.job = job
        self.stream = stream
        self.modules = modules
        self.buffers = buffers   # the device buffers the launches read and write
        self.directory = Path(job.directory)
        self.arch = "sm_" + device.compute_capability.replace(".", "")
        self.compilers: dict[str, str] = {}   # variant -> the compiler that built it
        self.builds: dict[tuple, Kernels | None] = {}   # shared builds (None: failed)

    def runner(self, variant: VariantJob) -> Callable[[], None]:
        if variant.python:
            return self._python_runner(variant)
        built = self._kernels(variant)
        self.compilers[variant.name] = built.compiler
        kernels = built.kernels
        launches = [(kernels[launch.entry], launch, self._arguments(launch))
                    for launch in variant.launches]

        def run() -> None:
            for kernel, launch, args in launches:
                kernel(tuple(launch.grid), tuple(launch.block), args,
                       shared_mem=launch.shared_mem)
        return run

    def _kernels(self, variant: VariantJob) -> Kernels:
        """The variant's kernels from one build of its source shared by every variant of
        the family that builds it alike (five GEMM variants of one file were five NVRTC
        compiles). A shared build that fails is retried for this variant alone, so one bad
        entry costs only its own row."""
        key = _build_key(variant)
        if key not in self.builds:
            together = replace(variant, launches=[launch for v in self.job.variants
                                                  if v.source and _build_key(v) == key
                                                  for launch in v.launches])
            try:
                self.builds[key] = load_kernels(together, self.directory, self.arch)
            except BuildError:
                self.builds[key] = None
        try:
            return self.builds[key] or load_kernels(variant, self.directory, self.arch)
        except BuildError as exc:
            raise VariantFailed(str(exc)) from None

    def _python_runner(self, variant: VariantJob) -> Callable[[], None]:
        """``fn(cupy, bufs, params)``, called where CuPy's current stream is the timed one,
        and PyTorch's current stream too when its module uses PyTorch or Triton (which
        launches on PyTorch's stream). Only then is PyTorch imported: the import alone
        takes seconds, twice per run with counters."""
        call = self.modules.function(variant.module, variant.python)
        params = dict(self.job.params)
        torch_stream = self.torch_stream if uses_torch(Path(variant.module)) else None
        if torch_stream is None:
            return lambda: call(cupy, self.buffers, params)
        import torch

        def run() -> None:
            with torch.cuda.stream(torch_stream):
                call(cupy, self.buffers, params)
        return run

    @cached_property
    def torch_stream(self) -> Any | None:
        """PyTorch's handle on the timed stream, made once per session; None without a
        CUDA PyTorch."""
        if importlib.util.find_spec("torch") is None:
            return None
        import torch
        if not torch.cuda.is_available():
            return None
        wrap = getattr(torch.cuda, "get_stream_from_external", None) or torch.cuda.ExternalStream
        return wrap(self.stream.ptr, torch.device("cuda", cupy.cuda.Device().id))

    def _arguments(self, launch: LaunchJob) -> tuple:
        return tuple(self.buffers[a.buffer] if a.buffer else _SCALARS[a.ctype](a.value)
                     for a in launch.args)


def _build_key(variant: VariantJob) -> tuple:
    return variant.source, tuple(variant.options), variant.compiler
