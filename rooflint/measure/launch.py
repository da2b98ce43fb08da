"""Compile, launch, check and time one family's variants with CuPy.

Inputs are drawn once per family on the GPU (seeded, non-zero) and kept there pristine,
so every variant and the reference see the same values; outputs are poisoned before each checked run so
an unwritten element cannot pass. A host reference's outputs are kept on disk between
runs (rooflint.formats.reference_cache): an unchanged family reads them instead of
computing them. Timing uses CUDA events on a non-blocking stream and keeps every sample;
in cold-cache mode a read-only sweep over twice the L2 size runs before each sample
(reads leave no dirty lines whose write-back would be billed to the kernel).

A python variant's function runs on the same timed stream; when its file imports PyTorch
or Triton it runs inside ``torch.cuda.stream`` of that stream, so PyTorch ops and Triton kernels (which
launch on PyTorch's current stream) are timed, checked and profiled like CUDA launches.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import cupy
import numpy as np

from rooflint.measure import inputs as input_rules, ncu
from rooflint.measure.build import BuildError
from rooflint.measure.checks import compare, failure_message, poison
from rooflint.measure.inputs import HostCopies, RandomInputs, read_only, read_only_hint
from rooflint.measure.kernels import Kernels, load_kernels
from rooflint.measure.nvml import GPM_MIN_INTERVAL_S, Nvml
from rooflint.measure.python_modules import load_module, missing_module_note
from rooflint.measure.sampling import time_interleaved
from rooflint.formats.jobs import (
    REFERENCE_FILE, Clocks, DeviceInfo, FamilyJob, LaunchJob, Measurement, OutputCheck,
    VariantJob, uses_torch
)
from rooflint.measure.protocol import flush_bytes
from rooflint.common.phases import (
    REFERENCE_CACHE_HIT, REFERENCE_CACHE_MISS, REFERENCE_CACHE_WRITE, Phase, Stopwatch
)
from rooflint.formats.reference_cache import ReferenceCache
from rooflint.formats.reference_key import reference_key
from rooflint.formats.status import Status

_SCALARS = {"i32": np.int32, "i64": np.int64, "u32": np.uint32, "u64": np.uint64,
            "f32": np.float32, "f64": np.float64}
NO_NVTX = ("this CuPy has no NVTX (cupy.cuda.nvtx.available is False), which the counter "
           "pass needs to tell variants apart; install a CuPy wheel, or run with --counters off")
# Host references computed at once, from the session's start: numpy leaves the GIL in its
# loops, so a family of ten numpy references over 256 MiB-1 GiB arrays is not one core's
# sequence (bounded: each holds its own temporaries in host memory).
REFERENCES_AT_ONCE = 4
GRAPH_REPLAY_BELOW_S = 50e-6  # a median under this gets graph replay timed too: the evidence
                              # of launch overhead (evidence.GRAPH_SPEEDUP judges it)
_FLUSH_SOURCE = r"""
extern "C" __global__ void rooflint_l2_flush(const float4* p, size_t n, float* sink) {
    float acc = 0.f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float4 v = p[i];
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 1234.5f) sink[0] = acc;  // never true: keeps the loads alive
}
"""


class CudaFault(Exception):
    """A CUDA error after which the context cannot be trusted; the worker must exit."""


class VariantFailed(Exception):
    """The variant cannot be measured (compile error, bad launch); others can."""


class FamilySession:
    """Everything shared by the variants of one family: inputs, references, the stream."""

    def __init__(self, job: FamilyJob, device: DeviceInfo, nvml: Nvml | None):
        self.job = job
        self.nvml = nvml
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.directory = Path(job.directory)
        self.arch = "sm_" + device.compute_capability.replace(".", "")
        self.compilers: dict[str, str] = {}   # variant -> the compiler that built it
        self.builds: dict[tuple, Kernels | None] = {}   # shared builds (None: failed)
        self.reference_path = self.directory / REFERENCE_FILE
        self.reference_module = load_module(self.reference_path)
        self.modules = {str(self.reference_path): self.reference_module}  # by path, loaded once
        self.watch = Stopwatch()    # where this family's seconds go (rooflint run --timings)
        # Everything the session does on the GPU is ordered on its one non-blocking stream:
        # the null stream would not wait for it, nor it for the null stream.
        with self.stream, self.watch.phase("inputs"):
            # Inputs are drawn on the GPU and kept there pristine (a reset is a device copy);
            # the host sees copies, made when a reference or prepare reads one.
            self.pristine = RandomInputs([b for b in job.buffers if b.role != "out"],
                                         job.seed, xp=cupy)
            self.host = HostCopies(self.pristine)
            if job.prepare:
                for name, array in self._prepared_inputs(job, self.host).items():
                    self.host.copied[name] = array
                    self.pristine.drawn[name] = cupy.asarray(array)
            self.device_buffers = {b.name: cupy.empty(b.shape, dtype=b.dtype)
                                   for b in job.buffers}
            self.stream.synchronize()
        self.expected_on_gpu: tuple[str, dict[str, cupy.ndarray]] = ("", {})
        self.expected: dict[str, dict[str, np.ndarray]] = {}   # host references' outputs
        self.reference_cache = ReferenceCache.default() if job.reference_cache else None
        self.writes: list[threading.Thread] = []    # to the reference cache, behind the run
        self.l2_bytes = device.l2_bytes
        self.flush_grid = device.sms * 8
        self.sample_gpm = bool(nvml and job.mode == "measure" and job.timing.gpm
                               and nvml.gpm_supported())
        self.ahead: dict[str, Future] = self._host_references_ahead() if job.mode == "measure" else {}

    def _prepared_inputs(self, job: FamilyJob, inputs: HostCopies) -> dict[str, np.ndarray]:
        """Inputs derived by reference.py (quantized weights, scales) from the random ones;
        a buffer it derives is never drawn at random unless it reads it."""
        function = _function(self.reference_module, job.prepare, self.reference_path)
        derived = function(inputs, dict(job.params))
        buffers = {b.name: b for b in job.buffers if b.role != "out"}
        prepared = {}
        for name, array in derived.items():
            if name not in buffers:
                raise ValueError(f"{job.prepare}() returned {name!r}, which is not an input buffer")
            array = np.asarray(array)
            if list(array.shape) != buffers[name].shape:
                raise ValueError(f"{job.prepare}() returned {name} with shape {array.shape}; "
                                 f"the manifest says {buffers[name].shape}")
            prepared[name] = read_only(array.astype(buffers[name].dtype))
        return prepared

    # -- the steps of one measurement ------------------------------------------------

    def measure(self, variant: VariantJob) -> Measurement:
        checked = self.checked_runner(variant)
        if isinstance(checked, Measurement):
            return checked
        run, checks = checked
        self.wait_for_references()
        with self.watch.phase("timing"):
            [(samples, clocks)] = time_interleaved([(self, run)], self.job.timing)
        return self.finish(variant, run, checks, samples, clocks)

    def checked_runner(self, variant: VariantJob
                       ) -> tuple[Callable[[], None], list[OutputCheck]] | Measurement:
        """The variant's launches and its passing checks, or the row saying why not."""
        try:
            with self.watch.phase("compile"):
                run = self._runner(variant)
            with self.stream:
                expected = self._expected_on_gpu(variant.reference)
            with self.watch.phase("check"):
                checks = self._check(run, expected)
        except VariantFailed as exc:
            _raise_if_context_lost()
            return Measurement(variant.name, Status.ERROR, str(exc))
        except ImportError as exc:  # a python variant whose library (triton, ...) is missing
            return Measurement(variant.name, Status.SKIPPED, missing_module_note(exc))
        except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
            raise CudaFault(str(exc)) from None
        except Exception as exc:  # user code (a python variant, a reference) raised: this row only
            _raise_if_context_lost()
            return Measurement(variant.name, Status.ERROR, f"{type(exc).__name__}: {exc}")
        failed = [c for c in checks if c.nonfinite or not c.rel_l2 <= variant.tolerance]
        if failed:
            return Measurement(variant.name, Status.FAIL,
                               failure_message(failed, variant.tolerance), checks)
        return run, checks

    def finish(self, variant: VariantJob, run: Callable[[], None], checks: list[OutputCheck],
               samples: list[float], clocks: Clocks) -> Measurement:
        """The timed row, with graph-replay timing for short kernels and GPM evidence."""
        with self.watch.phase("graph"):
            graph_samples = (self._graph_samples(run)
                             if float(np.median(samples)) < GRAPH_REPLAY_BELOW_S else [])
        with self.watch.phase("gpm"):
            gpm = self._gpm(run)
        return Measurement(variant.name, Status.OK, "", checks, samples, clocks, gpm,
                           graph_samples, self.compilers.get(variant.name, ""))

    def profile(self, variant: VariantJob, index: int) -> Measurement:
        """One run with the profiler on, inside the NVTX range that names its position.

        A first, unprofiled run loads the module and lets libraries create their
        handles, so only the variant's own kernels are counted.
        """
        from cupy.cuda import nvtx   # only the counter pass needs it
        if not nvtx.available:
            return Measurement(variant.name, Status.ERROR, NO_NVTX)
        try:
            with self.watch.phase("compile"):
                run = self._runner(variant)
        except VariantFailed as exc:
            return Measurement(variant.name, Status.ERROR, str(exc))
        with self.stream, self.watch.phase("profiled"):
            self._reset_buffers()
            _guarded(run, self.stream)
            cupy.cuda.runtime.profilerStart()
            nvtx.RangePush(ncu.variant_range(index))
            try:
                _guarded(run, self.stream)
            finally:
                nvtx.RangePop()
                cupy.cuda.runtime.profilerStop()
        return Measurement(variant.name, Status.OK, "profiled")

    def _runner(self, variant: VariantJob) -> Callable[[], None]:
        if variant.python:
            return self._python_runner(variant)
        built = self._kernels(variant)
        self.compilers[variant.name] = built.compiler
        kernels = built.kernels
        launches = [(kernels[l.entry], l, self._arguments(l)) for l in variant.launches]

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
            together = replace(variant, launches=[l for v in self.job.variants if v.source and
                                                  _build_key(v) == key for l in v.launches])
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
        module = self._module(variant.module)
        call = _function(module, variant.python, Path(variant.module))
        params = dict(self.job.params)
        torch_stream = self.torch_stream if uses_torch(Path(variant.module)) else None
        if torch_stream is None:
            return lambda: call(cupy, self.device_buffers, params)
        import torch

        def run() -> None:
            with torch.cuda.stream(torch_stream):
                call(cupy, self.device_buffers, params)
        return run

    def _module(self, path: str) -> ModuleType | None:
        if path not in self.modules:
            self.modules[path] = load_module(Path(path))
        return self.modules[path]

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
        return tuple(self.device_buffers[a.buffer] if a.buffer else _SCALARS[a.ctype](a.value)
                     for a in launch.args)

    def _reset_buffers(self) -> None:
        """Inputs and in-out buffers to their initial values, outputs to poison."""
        for b in self.job.buffers:
            target = self.device_buffers[b.name]
            if b.role == "out":
                target.fill(poison(target.dtype))
            else:
                cupy.copyto(target, self.pristine[b.name])

    def _check(self, run: Callable[[], None], expected: dict[str, cupy.ndarray]
               ) -> list[OutputCheck]:
        """The variant's outputs against its reference's, compared on the GPU."""
        with self.stream:
            self._reset_buffers()
            _guarded(run, self.stream)
            return [compare(name, self.device_buffers[name], ref, cupy)
                    for name, ref in expected.items()]

    def _expected_on_gpu(self, reference: str) -> dict[str, cupy.ndarray]:
        """The reference's outputs on the GPU, in float64. A reference that takes ``xp``
        computes them there, from the inputs on the GPU (no host copies, GPU float64
        arithmetic); any other's outputs come from the host and are uploaded as they are,
        then widened on the GPU. Only the latest reference's outputs are kept on the GPU
        (variants sharing one follow each other); host outputs are kept on the host for
        all."""
        if self.expected_on_gpu[0] != reference:
            self.expected_on_gpu = ("", {})     # free the previous ones first
            function = _function(self.reference_module, reference, self.reference_path)
            with self.watch.phase("reference") as phase:
                if _takes_xp(function):
                    result = self._outputs(reference, function, self.pristine, xp=cupy)
                else:
                    result = self._host_outputs(reference, function, phase)
                self.expected_on_gpu = (reference, {
                    k: cupy.asarray(v).astype(cupy.float64, copy=False)
                    for k, v in result.items()})
        return self.expected_on_gpu[1]

    def _host_references_ahead(self) -> dict[str, Future]:
        """The family's host references, started together at the session's start (each
        variant's check then waits for its own) where there are two or more to overlap.
        The inputs they read are copied to the host first, here, so no two threads copy."""
        names = [r for r in dict.fromkeys(v.reference for v in self.job.variants if v.reference)
                 if self._host_reference(r)]
        if len(names) < 2:
            return {}
        for name in self.host:
            self.host[name]
        with ThreadPoolExecutor(min(REFERENCES_AT_ONCE, len(names)),
                                thread_name_prefix="rooflint-reference") as pool:
            ahead = {name: pool.submit(self._host_outputs_found, name) for name in names}
            pool.shutdown(wait=False)
        return ahead

    def _host_reference(self, reference: str) -> bool:
        """The reference runs on the host (one that cannot be found is no such reference:
        its variants' checks say why)."""
        try:
            return not _takes_xp(_function(self.reference_module, reference, self.reference_path))
        except VariantFailed:
            return False

    def wait_for_references(self) -> None:
        """Every host reference started ahead is done: timing runs with no reference
        competing for the host (a failed one is reported by its own variant's check)."""
        for future in self.ahead.values():
            future.exception()

    def _host_outputs(self, reference: str, function: Callable, phase: Phase
                      ) -> dict[str, np.ndarray]:
        """A host reference's outputs: kept from an earlier variant of this family, else
        from its computation started ahead or the reference cache (``phase`` says whether
        the cache had them), else computed."""
        if reference not in self.expected:
            found = (self.ahead[reference].result() if reference in self.ahead
                     else self._host_outputs_found(reference))
            self.expected[reference], cached = found
            if self.reference_cache is not None:
                phase.name = REFERENCE_CACHE_HIT if cached else REFERENCE_CACHE_MISS
        return self.expected[reference]

    def _host_outputs_found(self, reference: str) -> tuple[dict[str, np.ndarray], bool]:
        """A host reference's outputs and whether the reference cache had them; on a
        miss, computed on the host and written to the cache by a thread of its own, so the
        write overlaps the checks and timing that follow (`finish_writes` waits)."""
        function = _function(self.reference_module, reference, self.reference_path)
        if self.reference_cache is None:
            return self._outputs(reference, function, self.host), False
        key = reference_key(self.job, reference, _cache_environment())
        found = self.reference_cache.read(key)
        if found is not None:
            return found, True
        outputs = self._outputs(reference, function, self.host)
        writer = threading.Thread(target=self.reference_cache.write, args=(key, outputs),
                                  name=f"rooflint-reference-{reference}")
        writer.start()
        self.writes.append(writer)
        return outputs, False

    def finish_writes(self) -> None:
        """Wait for the reference cache's writes: a family's entries are whole on disk
        before its worker says it is done. The wait left after the overlap is timed."""
        if self.writes:
            with self.watch.phase(REFERENCE_CACHE_WRITE):
                for writer in self.writes:
                    writer.join()
            self.writes = []

    def _outputs(self, reference: str, function: Callable, inputs: Mapping,
                 **xp: ModuleType) -> dict:
        """The reference function's outputs, checked to be a dict of output buffers."""
        try:
            result = function(inputs, dict(self.job.params), **xp)
        except Exception as exc:
            raise VariantFailed(f"reference {reference}() raised "
                                f"{type(exc).__name__}: {exc}{read_only_hint(exc)}") from None
        unknown = set(result) - set(self.device_buffers) if isinstance(result, dict) else {}
        if not isinstance(result, dict) or unknown:
            raise VariantFailed(f"reference {reference}() must return a dict of output "
                                f"buffer names to arrays (unknown: {sorted(unknown)})")
        return result if xp else {k: _host_array(v) for k, v in result.items()}

    @cached_property
    def _flush(self) -> tuple[cupy.RawKernel, cupy.ndarray, cupy.ndarray]:
        """The L2 sweep's kernel, buffer and sink, made at the first cold sample (never in
        a profile run: Nsight Compute flushes, and would save every allocation each pass)."""
        return (cupy.RawKernel(_FLUSH_SOURCE, "rooflint_l2_flush"),
                cupy.zeros(flush_bytes(self.l2_bytes) // 4, dtype=cupy.float32),
                cupy.zeros(1, dtype=cupy.float32))

    def _flush_l2(self) -> None:
        kernel, buffer, sink = self._flush
        kernel((self.flush_grid,), (256,), (buffer, np.uint64(buffer.size // 4), sink))

    def batch(self, run: Callable[[], None], cold: bool, count: int, clocks: Clocks) -> list[float]:
        """``count`` event-timed samples enqueued back to back; clocks read while they run."""
        with self.stream:
            events = [self._enqueue_sample(run, cold) for _ in range(count)]
            self._read_clocks(clocks)
            _guarded(lambda: None, self.stream)
        return [_elapsed(start, end) for start, end in events]

    def _enqueue_sample(self, run: Callable[[], None], cold: bool) -> tuple:
        """Flush (cold), then the variant between two events; nothing waits here."""
        if cold:
            self._flush_l2()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(self.stream)
        run()
        end.record(self.stream)
        return start, end

    def warm_up(self, run: Callable[[], None], cold: bool) -> float:
        """Run until 3 launches and 20 ms have passed; the per-run time estimate."""
        runs, began = 0, time.perf_counter()
        with self.stream:
            while runs < 3 or time.perf_counter() - began < 0.02:
                start, end = self._enqueue_sample(run, cold)
                _guarded(lambda: None, self.stream)
                runs += 1
        return _elapsed(start, end)

    def _graph_samples(self, run: Callable[[], None]) -> list[float]:
        """The same launches captured in a CUDA graph and timed as replays: for a short
        kernel, eager timing much slower than replay means launch overhead is the limit."""
        try:
            self.stream.begin_capture()
            try:
                with self.stream:
                    run()
            finally:  # always leave capture mode, or every later call on the stream fails
                graph = self.stream.end_capture()
        except Exception:  # a library call that cannot be captured (cuBLAS in CuPy): no evidence
            return []
        [(samples, _)] = time_interleaved([(self, lambda: graph.launch(self.stream))],
                                          self.job.timing)
        return samples

    def _gpm(self, run: Callable[[], None]) -> dict[str, float]:
        """GPM utilizations over back-to-back runs (no flushes between) lasting >= 100 ms.

        The GPU is kept busy for another 100 ms before the first sample: on the H200 here,
        a window opened on an idle GPU read a copy's DRAM utilization as 34 % instead of 85 %.
        """
        if not self.sample_gpm:
            return {}
        with self.stream:
            self._run_for(run, GPM_MIN_INTERVAL_S)
            first = self.nvml.gpm_sample()
            self._run_for(run, GPM_MIN_INTERVAL_S)
            second = self.nvml.gpm_sample()
        try:
            return self.nvml.gpm_utilizations(first, second)
        except Exception:  # an NVML refusal costs the evidence, not the measurement
            return {}

    def _run_for(self, run: Callable[[], None], seconds: float) -> None:
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            _guarded(run, self.stream)

    def _read_clocks(self, clocks: Clocks) -> None:
        if not self.nvml:
            return
        reading = self.nvml.read()
        if reading.sm_mhz:
            clocks.sm_mhz.append(float(reading.sm_mhz))
        if reading.mem_mhz:
            clocks.mem_mhz.append(float(reading.mem_mhz))
        clocks.throttle_reasons = sorted(set(clocks.throttle_reasons) | set(reading.reasons))


# -- helpers ---------------------------------------------------------------------------

def _function(module: ModuleType | None, name: str, path: Path) -> Callable:
    if module is None:
        raise VariantFailed(f"{path} not found (needed for {name}())")
    function = getattr(module, name, None)
    if not callable(function):
        raise VariantFailed(f"{path} has no function {name}()")
    return function


def _host_array(value: Any) -> np.ndarray:
    """A host reference's output as it computed it when it is numeric (a float32 output
    stays float32: half the bytes to keep, read and upload), else in float64."""
    array = np.asarray(value)
    return array if array.dtype.kind in "biuf" else array.astype(np.float64)


@functools.cache
def _cache_environment() -> dict[str, str]:
    """Beside the family, what a host reference's outputs depend on (reference_key): the
    numpy that computes them, the CuPy that draws their inputs, and the rules it draws by."""
    rules = hashlib.sha256(Path(input_rules.__file__).read_bytes()).hexdigest()
    return {"numpy": np.__version__, "cupy": cupy.__version__, "input_rules": rules}


def _build_key(variant: VariantJob) -> tuple:
    return variant.source, tuple(variant.options), variant.compiler


def _takes_xp(function: Callable) -> bool:
    """A reference that takes ``xp`` computes on the GPU; any other, on the host."""
    return "xp" in inspect.signature(function).parameters


def _raise_if_context_lost() -> None:
    """A sticky CUDA error (an illegal address, a failed launch) breaks every later call in
    this context, whichever call happened to report it first: then the worker must exit
    rather than let the next variants fail in its place."""
    try:
        cupy.cuda.runtime.deviceSynchronize()
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
        raise CudaFault(str(exc)) from None


def _guarded(run: Callable[[], None], stream: cupy.cuda.Stream) -> None:
    """Run and synchronize; turn CUDA errors into CudaFault (the context is suspect)."""
    try:
        run()
        stream.synchronize()
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
        raise CudaFault(str(exc)) from None


def _elapsed(start: cupy.cuda.Event, end: cupy.cuda.Event) -> float:
    return cupy.cuda.get_elapsed_time(start, end) * 1e-3
