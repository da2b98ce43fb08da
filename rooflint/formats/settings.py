"""How a result was measured: the typed record every result carries as its ``settings``.

`run`, `compare`'s measured sides and `profile` write it; the printers (which source the
bytes came from, a profile's GPU time and kernels left out), the plot (the calibrated L2
and L1 roofs) and the baseline (the git revision) read it. No command reads it back to
decide what to do: a run keeps its own state (whether it still takes counters) and
writes it here. In the document it is one flat mapping, as results have always held it:
a field with no value is left out, and a document written before a field existed reads
with its default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Any

from rooflint.common.sense import one_of
from rooflint.common.vocabularies import CacheMode, CountersMode
from rooflint.formats.trace_events import Unrecorded

# The share of the GPU time whose kernels a profile's pass 2 profiles, unless --coverage
# or --top says otherwise (judge/kernel_choice.choose).
DEFAULT_COVERAGE = 0.90
# A profile's window: a Python program is ended at its first optimizer's step this many,
# in both passes, unless --stop-after says otherwise (0: at its own end; trace_bootstrap.py).
# Enough steps for the warm-up to be the first of many (cuDNN's benchmark, autotuning and
# compilation run in the first one or two), few enough that a training run of hours is
# profiled in the time of its start-up and a few seconds.
DEFAULT_STOP_AFTER = 20
DEFAULT_CACHE = CacheMode.COLD         # run's --cache
DEFAULT_COUNTERS = CountersMode.AUTO   # --counters of run, gate and compare
DEFAULT_TIMEOUT_S = 120.0              # a variant's worker is abandoned after this


@dataclass
class Settings:
    cache: Annotated[str, one_of(CacheMode)] = CacheMode.COLD
    # off once they were unavailable
    counters: Annotated[str, one_of(CountersMode)] = CountersMode.OFF
    counters_unavailable: str | None = None   # why a run went on without counters
    calibration: str | None = None        # when the calibration judged with was made
    l2_bandwidth: float | None = None     # its L2 and L1 bandwidths (B/s): the plot's roofs
    l1_bandwidth: float | None = None
    git_revision: str | None = None       # the families' checkout (the gate's --recheck)
    devices: list[str] | None = None      # the CUDA_VISIBLE_DEVICES entries of --devices
    ncu_version: str | None = None        # the Nsight Compute that took the counters
    nvcc_version: str | None = None       # the CUDA toolkit's nvcc, where one was found
    source_reader: str | None = None      # how --source read ncu's reports: ncu_report | csv
    mode: str | None = None               # "profile" for `rooflint profile`; else a run
    # A profile: the program, its filters, the two passes, and the GPU time it covered.
    command: list[str] | None = None
    nvtx: str | None = None
    kernel_filter: str | None = None
    skip: int | None = None
    stop_after: int | None = None         # --stop-after: the optimizer step the program ends at
    model: str | None = None              # the kernel_models file given with --model
    coverage: float | None = None         # pass 2's kernels: those covering this share of
    top: int | None = None                # the GPU time, or the top N
    pass1_timer: str | None = None        # torch | cupti | ncu
    pass1_wall_s: float | None = None
    pass2_wall_s: float | None = None
    pass2_profiled_launches: int | None = None
    pass2_kernels: list[str] | None = None    # the patterns ncu selected pass 2's launches by
    pass2_selection: list[str] | None = None  # the ncu options that did (to profile again)
    pass2_kernel_filter: str | None = None    # before pass2_selection: ncu's -k expression
    pass2_tensor_precisions: list[str] | None = None   # None: every precision
    pass2_started_early: bool | None = None
    pass2_stopped: str | None = None      # why pass 2 ended early (a failure, Ctrl-C)
    pass2_rotated: bool | None = None     # its counters by rotation (measure/rotation.py)
    # the chosen kernels whose counters the counter cache served, not pass 2 (their names)
    pass2_cached_kernels: list[str] | None = None
    gpu_time_s: float | None = None       # the GPU time of every kernel pass 1 kept
    kernels: int | None = None
    other_kernels: int | None = None      # kernels not chosen, and their share of that time
    other_share: float | None = None
    autotuning_launches: int | None = None    # benchmarking's launches, left out of the kernels
    autotuning_s: float | None = None         # and their GPU time
    autotuners: list[str] | None = None       # whose: "XLA's autotuner", ...
    unrecorded: list[Unrecorded] | None = None  # repeated calls pass 1 did not record
    # `rooflint import`: the files the result was made from (a trace, a report), and the
    # torch.profiler options the trace was recorded without (trace_events.recorded_without)
    imported: list[str] | None = None
    trace_lacks: list[str] | None = None

    @property
    def counting(self) -> bool:
        """Whether the result's bytes came from counters (for a result read from a file)."""
        return self.counters != CountersMode.OFF

    def to_json(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if value is not None}
