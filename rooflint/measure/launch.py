"""One family's variants measured with CuPy: each compiled (runners), checked against its
reference (buffers, references), timed (event_timing) and given NVML's evidence
(nvml_evidence), or run once under the profiler. The parts share the session's one
non-blocking stream: the null stream would not wait for it, nor it for the null stream.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import cupy
import numpy as np

from rooflint.common.phases import Stopwatch
from rooflint.formats.jobs import (
    REFERENCE_FILE, Clocks, DeviceInfo, FamilyJob, Measurement, OutputCheck, VariantJob
)
from rooflint.formats.status import Status
from rooflint.measure import ncu
from rooflint.measure.buffers import FamilyBuffers
from rooflint.measure.checks import compare, failure_message
from rooflint.measure.event_timing import GRAPH_REPLAY_BELOW_S, EventTimer
from rooflint.measure.faults import CudaFault, VariantFailed, guarded, raise_if_context_lost
from rooflint.measure.nvml import Nvml
from rooflint.measure.nvml_evidence import NvmlEvidence
from rooflint.measure.python_modules import FamilyModules, missing_module_note
from rooflint.measure.references import References
from rooflint.measure.runners import VariantRunners
from rooflint.measure.sampling import time_interleaved

NO_NVTX = ("this CuPy has no NVTX (cupy.cuda.nvtx.available is False), which the counter "
           "pass needs to tell variants apart; install a CuPy wheel, or run with --counters off")


class FamilySession:
    """Everything shared by the variants of one family, and the steps of measuring or
    profiling one of them."""

    def __init__(self, job: FamilyJob, device: DeviceInfo, nvml: Nvml | None):
        self.job = job
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.modules = FamilyModules(Path(job.directory) / REFERENCE_FILE)
        self.watch = Stopwatch()    # where this family's seconds go (rooflint run --timings)
        with self.stream, self.watch.phase("inputs"):
            self.buffers = FamilyBuffers(job, self.modules.reference_function)
            self.stream.synchronize()
        self.runners = VariantRunners(job, device, self.stream, self.modules, self.buffers.device)
        self.evidence = NvmlEvidence(job, nvml, self.stream)
        self.timer = EventTimer(self.stream, device, job.timing, self.evidence)
        self.references = References(job, self.modules, self.buffers, self.watch)

    def measure(self, variant: VariantJob) -> Measurement:
        checked = self.checked_runner(variant)
        if isinstance(checked, Measurement):
            return checked
        run, checks = checked
        self.references.wait_for_ahead()
        with self.watch.phase("timing"):
            [(samples, clocks)] = time_interleaved([(self.timer, run)], self.job.timing)
        return self.finish(variant, run, checks, samples, clocks)

    def checked_runner(self, variant: VariantJob
                       ) -> tuple[Callable[[], None], list[OutputCheck]] | Measurement:
        """The variant's launches and its passing checks, or the row saying why not."""
        try:
            with self.watch.phase("compile"):
                run = self.runners.runner(variant)
            with self.stream:
                expected = self.references.on_gpu(variant.reference)
            with self.watch.phase("check"):
                checks = self._check(run, expected)
        except VariantFailed as exc:
            raise_if_context_lost()
            return Measurement(variant.name, Status.ERROR, str(exc))
        except ImportError as exc:  # a python variant whose library (triton, ...) is missing
            return Measurement(variant.name, Status.SKIPPED, missing_module_note(exc))
        except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
            raise CudaFault(str(exc)) from None
        except Exception as exc:  # user code (a python variant, a reference) raised: this row only
            raise_if_context_lost()
            return Measurement(variant.name, Status.ERROR, f"{type(exc).__name__}: {exc}")
        failed = [c for c in checks if c.nonfinite or not c.rel_l2 <= variant.tolerance]
        if failed:
            return Measurement(variant.name, Status.FAIL,
                               failure_message(failed, variant.tolerance), checks)
        return run, checks

    def _check(self, run: Callable[[], None], expected: dict[str, cupy.ndarray]
               ) -> list[OutputCheck]:
        """The variant's outputs against its reference's, compared on the GPU."""
        with self.stream:
            self.buffers.reset()
            guarded(run, self.stream)
            return [compare(name, self.buffers.device[name], ref, cupy)
                    for name, ref in expected.items()]

    def finish(self, variant: VariantJob, run: Callable[[], None], checks: list[OutputCheck],
               samples: list[float], clocks: Clocks) -> Measurement:
        """The timed row, with graph-replay timing for short kernels and GPM evidence."""
        with self.watch.phase("graph"):
            graph_samples = (self.timer.graph_samples(run)
                             if float(np.median(samples)) < GRAPH_REPLAY_BELOW_S else [])
        with self.watch.phase("gpm"):
            gpm = self.evidence.gpm(run)
        return Measurement(variant.name, Status.OK, "", checks, samples, clocks, gpm,
                           graph_samples, self.runners.compilers.get(variant.name, ""))

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
                run = self.runners.runner(variant)
        except VariantFailed as exc:
            return Measurement(variant.name, Status.ERROR, str(exc))
        with self.stream, self.watch.phase("profiled"):
            self.buffers.reset()
            guarded(run, self.stream)
            cupy.cuda.runtime.profilerStart()
            nvtx.RangePush(ncu.variant_range(index))
            try:
                guarded(run, self.stream)
            finally:
                nvtx.RangePop()
                cupy.cuda.runtime.profilerStop()
        return Measurement(variant.name, Status.OK, "profiled")
