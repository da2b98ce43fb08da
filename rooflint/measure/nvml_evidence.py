"""What NVML tells beside a variant's timing: the clocks and throttle reasons read while
its samples run, and GPM utilizations over back-to-back runs (where the GPU has GPM and
the run asked for it)."""

from __future__ import annotations

import time
from typing import Callable

import cupy

from rooflint.formats.jobs import Clocks, FamilyJob
from rooflint.measure.faults import guarded
from rooflint.measure.nvml import GPM_MIN_INTERVAL_S, Nvml


class NvmlEvidence:
    """The clocks and GPM readings of one family's variants, on the session's stream; none
    without NVML."""

    def __init__(self, job: FamilyJob, nvml: Nvml | None, stream: cupy.cuda.Stream):
        self.nvml = nvml
        self.stream = stream
        self.sample_gpm = bool(nvml and job.mode == "measure" and job.timing.gpm
                               and nvml.gpm_supported())

    def read_clocks(self, clocks: Clocks) -> None:
        if not self.nvml:
            return
        reading = self.nvml.read()
        if reading.sm_mhz:
            clocks.sm_mhz.append(float(reading.sm_mhz))
        if reading.mem_mhz:
            clocks.mem_mhz.append(float(reading.mem_mhz))
        clocks.throttle_reasons = sorted(set(clocks.throttle_reasons) | set(reading.reasons))

    def gpm(self, run: Callable[[], None]) -> dict[str, float]:
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
            guarded(run, self.stream)
