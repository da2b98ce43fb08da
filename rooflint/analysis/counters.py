"""From Nsight Compute counters to the bytes and FLOPs a roofline point stands on.

Pure accounting, with the reasons written down:
- DRAM writes still sitting dirty in L2 when a kernel ends are not counted by
  ``dram__bytes_write`` (docs/architecture.md: a 256 MiB copy showed 21 MB missing).
  They reach DRAM later all the same, so the point counts at least the compulsory writes
  (the outputs the variant writes) and says how much it added.
- Counted FLOPs in the declared precision are shown beside the model's; a large
  difference is redundant work, or tensor operations the manifest did not declare.
- Fewer DRAM bytes than the compulsory ones means data served from L2 (observed AI
  above algorithmic): cache reuse, not magic; the L2 traffic is the evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from rooflint.common.sense import Amount, Count
from rooflint.analysis.roofline import IMPOSSIBLE_ABOVE_DATASHEET
from rooflint.common.units import format_bytes, format_rate
from rooflint.common.vocabularies import ON_TENSOR_CORES, Precision

FLOP_MISMATCH = 0.25      # counted vs model FLOPs differing by more than this is reported
CACHE_REUSE = 0.90        # measured DRAM bytes under this fraction of compulsory: L2 reuse
                          # (here a note; evidence.SERVED_FROM_CACHE, its inverse, a flag)
UNDECLARED_TENSOR = 0.50  # tensor ops above this share of counted FLOPs, precision not tensor
TENSOR_PIPE_BUSY = 1.0    # % of active cycles: above this, the tensor cores did real work


@dataclass
class Counters:
    """One variant's launches, summed (bytes, FLOPs, time) or duration-weighted (ratios)."""

    kernels: list[str]
    duration_s: Amount
    dram_read: Amount
    dram_write: Amount
    l2_bytes: Amount
    l1_bytes: Amount
    local_bytes: Amount                     # spill traffic through L1 (local loads + stores)
    flops: dict[str, Amount]                # counted, per precision; zero entries left out
    occupancy_pct: Amount                   # achieved: active warps / maximum, %
    waves: Amount                           # of the largest launch
    registers_per_thread: Count             # the most any launch uses
    grid_size: Count                        # blocks of the largest launch
    stalls: dict[str, Amount] = field(default_factory=dict)  # cycles per issued instruction
    xu_pipe_pct: Amount = 0.0               # special-function pipe, % of its peak (0: not read)
    tensor_pipe_pct: Amount = 0.0           # tensor pipe busy, % of active cycles (0: not read)
    l1_pct: Amount = 0.0                    # L1/shared-memory throughput, % of its peak
    shared_loads: Amount = 0.0              # shared-memory load instructions (per warp)
    shared_wavefronts: Amount = 0.0         # shared-memory data-pipe wavefronts
    bank_conflicts: Amount = 0.0            # of those, extra wavefronts from bank conflicts
    hmma_instructions: Amount = 0.0         # mma.sync tensor instructions (per warp)
    gmma_instructions: Amount = 0.0         # wgmma (Hopper warpgroup) tensor instructions
    # Read since issue 24 (0 in older results: not read). How a warp's accesses use what
    # they move, per direction; what bounds the resident warps; how busy the issue slots are.
    shared_stores: Amount = 0.0             # shared-memory store instructions (per warp)
    shared_store_wavefronts: Amount = 0.0   # of shared_wavefronts, the stores'
    store_bank_conflicts: Amount = 0.0      # of bank_conflicts, the stores'
    global_load_sectors: Amount = 0.0       # 32-byte sectors global loads moved through L1
    global_store_sectors: Amount = 0.0
    global_load_requests: Amount = 0.0      # the warp requests that moved them
    global_store_requests: Amount = 0.0
    theoretical_occupancy_pct: Amount = 0.0  # resident warps the launch allows, % of the maximum
    blocks_per_sm: Count = 0                # resident blocks the tightest limit allows
    occupancy_limiter: str = ""             # that limit: registers, shared memory, warps, blocks
    issue_active_pct: Amount = 0.0          # cycles a scheduler issued an instruction, %
    instructions: Amount = 0.0              # warp instructions executed

    @property
    def dram_bytes(self) -> float:
        return self.dram_read + self.dram_write

    @property
    def counted_flops(self) -> float:
        return sum(self.flops.values())


@dataclass
class Traffic:
    dram_bytes: float             # what the roofline point uses
    dram_read: float
    dram_write: float
    dirty_l2_writes: float        # compulsory writes ncu did not see, added to dram_bytes
    counted_flops: float
    notes: list[str] = field(default_factory=list)


def _model_notes(counters: Counters, model_flops: float, precision: str) -> list[str]:
    """The model's FLOPs against those counted in the precision the variant declares.

    Not against every precision counted: the compiler moves registers with half-precision
    FMAs (``HFMA2.MMA Rx, -RZ, RZ, ...``), which Nsight Compute counts as fp16 FLOPs in
    kernels with no half arithmetic at all (an fp32 strided read counted 268 MFLOP of
    fp16 and no fp32, H100 and H200), and the counters cannot tell those from real half
    arithmetic: a model is not blamed for leaving out what nobody wrote, and a precision
    the variant does not declare is not reported as its work."""
    declared = counters.flops.get(precision, 0.0)
    if not (model_flops and declared and abs(declared / model_flops - 1) > FLOP_MISMATCH):
        return []
    kind = "redundant work" if declared > model_flops else "less work than the model"
    return [f"counted {precision} FLOPs are {declared / model_flops:.2f}x the model's ({kind}, "
            f"or a wrong flops expression)"]


def traffic(counters: Counters, model_flops: float, model_bytes: float, written_bytes: float,
            precision: str) -> Traffic:
    dirty = max(0.0, written_bytes - counters.dram_write)
    result = Traffic(dram_bytes=counters.dram_read + counters.dram_write + dirty,
                     dram_read=counters.dram_read, dram_write=counters.dram_write,
                     dirty_l2_writes=dirty, counted_flops=counters.counted_flops)
    if dirty > 0.001 * result.dram_bytes:
        result.notes.append(
            f"{format_bytes(dirty)} of output still in L2 at kernel end (not in "
            f"dram__bytes_write); counted as DRAM writes")
    result.notes += _flop_notes(counters, model_flops, precision)
    if model_bytes and result.dram_bytes < CACHE_REUSE * model_bytes:
        result.notes.append(
            f"DRAM moved {result.dram_bytes / model_bytes:.0%} of the compulsory bytes: the "
            f"data was served from L2 ({format_bytes(counters.l2_bytes)} of L2 traffic); "
            f"observed AI above algorithmic is cache reuse, so the DRAM roof understates "
            f"what limits it")
    return result


def _flop_notes(counters: Counters, model_flops: float, precision: str) -> list[str]:
    counted = counters.counted_flops
    notes = _model_notes(counters, model_flops, precision)
    tensor = sum(v for k, v in counters.flops.items() if k in ON_TENSOR_CORES)
    if counted and tensor > UNDECLARED_TENSOR * counted and precision not in ON_TENSOR_CORES:
        main = max((k for k in counters.flops if k in ON_TENSOR_CORES), key=counters.flops.get)
        notes.append(f"{tensor / counted:.0%} of counted FLOPs ran on tensor cores ({main}) but "
                     f"the manifest declares {precision}: judge it against the {main} roof")
    elif (not tensor and counters.tensor_pipe_pct > TENSOR_PIPE_BUSY
          and precision not in ON_TENSOR_CORES and not counters.flops.get(Precision.FP16)):
        # (Half-precision FMAs the compiler issues to the tensor pipe, HFMA2.MMA, keep it
        # busy too, 1-15 % in PyTorch's and Triton's bf16 GELU and layer norms on an H200,
        # and count as fp16 FLOPs: no tensor FLOPs went uncounted there.)
        notes.append(f"the tensor pipe was busy {counters.tensor_pipe_pct:.0f} % of active cycles "
                     f"in a precision whose FLOPs were not read, so its operations are not "
                     f"counted and its point sits below and left of where it ran (a run reads "
                     f"the tensor precisions its manifest declares: declare fp16-tensor, "
                     f"bf16-tensor...; a profile those its kernels' operators take as inputs)")
    return notes


def implausible(c: Counters, dram_bandwidth: float, fastest_flops: float) -> str | None:
    """Why counters cannot be taken as read, or None: a value that is not a finite number
    or is negative (a profiler release that returned NaN counters; a cell ncu left "n/a"),
    no duration, or more DRAM bytes or FLOPs than the kernel's time allows at the GPU's
    datasheet peaks (``dram_bandwidth``, ``fastest_flops``)."""
    for name, value in _numbers(c):
        if not math.isfinite(value) or value < 0:
            return f"{name} is {value:g}"
    if c.duration_s <= 0:
        return "the profiled launches took no time"
    for what, rate, peak, unit in (("DRAM", c.dram_bytes / c.duration_s, dram_bandwidth, "B/s"),
                                   ("FLOP", c.counted_flops / c.duration_s, fastest_flops,
                                    "FLOP/s")):
        if rate > IMPOSSIBLE_ABOVE_DATASHEET * peak:
            return (f"{what} rate {format_rate(rate, unit)} is {rate / peak:.3g}x the "
                    f"datasheet's {format_rate(peak, unit)}")
    return None


def _numbers(c: Counters) -> list[tuple[str, float]]:
    """Every number the counters hold, by field (a mapping's entries as field.key)."""
    found = []
    for f in fields(c):
        value = getattr(c, f.name)
        if isinstance(value, dict):
            found += [(f"{f.name}.{key}", float(v)) for key, v in value.items()]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append((f.name, float(value)))
    return found
