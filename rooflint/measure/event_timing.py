"""How long a variant's run takes: CUDA events around it on the session's non-blocking
stream, every sample kept. In cold-cache mode a read-only sweep over twice the L2 size
runs before each sample (reads leave no dirty lines whose write-back would be billed to
the kernel). A short kernel is timed as CUDA graph replays too: the evidence of launch
overhead."""

from __future__ import annotations

import time
from functools import cached_property
from typing import Callable

import cupy
import numpy as np

from rooflint.formats.jobs import Clocks, DeviceInfo, TimingJob
from rooflint.measure.faults import guarded
from rooflint.measure.nvml_evidence import NvmlEvidence
from rooflint.measure.protocol import flush_bytes
from rooflint.measure.sampling import time_interleaved

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


class EventTimer:
    """The sampler time_interleaved takes (sampling.Sampler) for one family: warm-up and
    batches of event-timed samples, the clocks read while they run."""

    def __init__(self, stream: cupy.cuda.Stream, device: DeviceInfo, timing: TimingJob,
                 evidence: NvmlEvidence):
        self.stream = stream
        self.timing = timing
        self.evidence = evidence
        self.l2_bytes = device.l2_bytes
        self.flush_grid = device.sms * 8

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
            self.evidence.read_clocks(clocks)
            guarded(lambda: None, self.stream)
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
                guarded(lambda: None, self.stream)
                runs += 1
        return _elapsed(start, end)

    def graph_samples(self, run: Callable[[], None]) -> list[float]:
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
                                          self.timing)
        return samples


def _elapsed(start: cupy.cuda.Event, end: cupy.cuda.Event) -> float:
    return cupy.cuda.get_elapsed_time(start, end) * 1e-3
