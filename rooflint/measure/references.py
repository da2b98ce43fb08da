"""What a family's variants are checked against: its references' outputs, on the GPU in
float64. A reference that takes ``xp`` computes them on the GPU; any other on the host,
where its outputs are kept for the whole family and, between runs, on disk
(rooflint.formats.reference_cache): an unchanged family reads them instead of computing
them. A family's host references start together at the session's start."""

from __future__ import annotations

import functools
import hashlib
import inspect
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import cupy
import numpy as np

from rooflint.common.phases import (
    REFERENCE_CACHE_HIT, REFERENCE_CACHE_MISS, REFERENCE_CACHE_WRITE, Phase, Stopwatch
)
from rooflint.formats.jobs import FamilyJob
from rooflint.formats.reference_cache import ReferenceCache
from rooflint.formats.reference_key import reference_key
from rooflint.measure import inputs as input_rules
from rooflint.measure.buffers import FamilyBuffers
from rooflint.measure.faults import VariantFailed
from rooflint.measure.inputs import read_only_hint
from rooflint.measure.python_modules import FamilyModules

# Host references computed at once, from the session's start: numpy leaves the GIL in its
# loops, so a family of ten numpy references over 256 MiB-1 GiB arrays is not one core's
# sequence (bounded: each holds its own temporaries in host memory).
REFERENCES_AT_ONCE = 4


class References:
    """A family's references' outputs: the latest one's on the GPU, every host one's on
    the host, and the reference cache's writes still running behind the measurements."""

    def __init__(self, job: FamilyJob, modules: FamilyModules, buffers: FamilyBuffers,
                 watch: Stopwatch):
        self.job = job
        self.modules = modules
        self.buffers = buffers
        self.watch = watch
        self.latest_on_gpu: tuple[str, dict[str, cupy.ndarray]] = ("", {})
        self.on_host: dict[str, dict[str, np.ndarray]] = {}   # host references' outputs
        self.cache = ReferenceCache.default() if job.reference_cache else None
        self.writes: list[threading.Thread] = []    # to the reference cache, behind the run
        self.ahead: dict[str, Future] = (self._host_references_ahead()
                                         if job.mode == "measure" else {})

    def on_gpu(self, reference: str) -> dict[str, cupy.ndarray]:
        """The reference's outputs on the GPU, in float64. A reference that takes ``xp``
        computes them there, from the inputs on the GPU (no host copies, GPU float64
        arithmetic); any other's outputs come from the host and are uploaded as they are,
        then widened on the GPU. Only the latest reference's outputs are kept on the GPU
        (variants sharing one follow each other); host outputs are kept on the host for
        all."""
        if self.latest_on_gpu[0] != reference:
            self.latest_on_gpu = ("", {})     # free the previous ones first
            function = self.modules.reference_function(reference)
            with self.watch.phase("reference") as phase:
                if _takes_xp(function):
                    result = self._outputs(reference, function, self.buffers.pristine, xp=cupy)
                else:
                    result = self._host_outputs(reference, function, phase)
                self.latest_on_gpu = (reference, {
                    k: cupy.asarray(v).astype(cupy.float64, copy=False)
                    for k, v in result.items()})
        return self.latest_on_gpu[1]

    def _host_references_ahead(self) -> dict[str, Future]:
        """The family's host references, started together at the session's start (each
        variant's check then waits for its own) where there are two or more to overlap.
        The inputs they read are copied to the host first, here, so no two threads copy."""
        names = [r for r in dict.fromkeys(v.reference for v in self.job.variants if v.reference)
                 if self._host_reference(r)]
        if len(names) < 2:
            return {}
        host = self.buffers.host
        with self.watch.phase("inputs"):
            for name in host:
                host[name]
        pool = ThreadPoolExecutor(min(REFERENCES_AT_ONCE, len(names)),
                                  thread_name_prefix="rooflint-reference")
        ahead = {name: pool.submit(self._host_outputs_found, name) for name in names}
        pool.shutdown(wait=False)   # not a with-block, whose exit waits for them all
        return ahead

    def _host_reference(self, reference: str) -> bool:
        """The reference runs on the host (one that cannot be found is no such reference:
        its variants' checks say why)."""
        try:
            return not _takes_xp(self.modules.reference_function(reference))
        except VariantFailed:
            return False

    def wait_for_ahead(self) -> None:
        """Every host reference started ahead is done: timing runs with no reference
        competing for the host (a failed one is reported by its own variant's check). The
        wait is the references' time (a family of ten numpy references over GiB arrays
        spent most of its first run here, uncounted by any phase), named by whether the
        reference cache had them all."""
        with self.watch.phase("reference") as phase:
            failed = [future.exception() for future in self.ahead.values()]
            if self.cache is not None and self.ahead:
                missed = any(error is None and not future.result()[1]
                             for future, error in zip(self.ahead.values(), failed))
                phase.name = REFERENCE_CACHE_MISS if missed else REFERENCE_CACHE_HIT

    def _host_outputs(self, reference: str, function: Callable, phase: Phase
                      ) -> dict[str, np.ndarray]:
        """A host reference's outputs: kept from an earlier variant of this family, else
        from its computation started ahead or the reference cache (``phase`` says whether
        the cache had them), else computed."""
        if reference not in self.on_host:
            found = (self.ahead[reference].result() if reference in self.ahead
                     else self._host_outputs_found(reference))
            self.on_host[reference], cached = found
            if self.cache is not None:
                phase.name = REFERENCE_CACHE_HIT if cached else REFERENCE_CACHE_MISS
        return self.on_host[reference]

    def _host_outputs_found(self, reference: str) -> tuple[dict[str, np.ndarray], bool]:
        """A host reference's outputs and whether the reference cache had them; on a
        miss, computed on the host and written to the cache by a thread of its own, so the
        write overlaps the checks and timing that follow (`finish_writes` waits)."""
        function = self.modules.reference_function(reference)
        if self.cache is None:
            return self._outputs(reference, function, self.buffers.host), False
        key = reference_key(self.job, reference, _cache_environment())
        found = self.cache.read(key)
        if found is not None:
            return found, True
        outputs = self._outputs(reference, function, self.buffers.host)
        writer = threading.Thread(target=self.cache.write, args=(key, outputs),
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
        unknown = set(result) - set(self.buffers.device) if isinstance(result, dict) else {}
        if not isinstance(result, dict) or unknown:
            raise VariantFailed(f"reference {reference}() must return a dict of output "
                                f"buffer names to arrays (unknown: {sorted(unknown)})")
        return result if xp else {k: _host_array(v) for k, v in result.items()}


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


def _takes_xp(function: Callable) -> bool:
    """A reference that takes ``xp`` computes on the GPU; any other, on the host."""
    return "xp" in inspect.signature(function).parameters
