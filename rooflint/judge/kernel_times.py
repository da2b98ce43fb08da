"""A program's kernels from pass 1's launches: one KernelTime per identity (name_key, grid,
block), each with its launches' durations, ranked by total GPU time. Launches as PyTorch's
profiler trace (formats/trace_events.py) or Nsight Compute's rows (formats/ncu_log.py)
record them in, kernels out; the trace's launches are filtered here as Nsight Compute
filters its own."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from rooflint.formats.ncu_log import BLOCK, DURATION, GRID, KERNEL_NAME as NAME
from rooflint.formats.trace_events import COPY, Launch, Origin, origins, tensor_precisions
from rooflint.judge.kernel_names import name_key

# What a launch is, whichever run of the program it came from: its name's key (see
# name_key), the grid and the block. Pass 2's launches are matched to pass 1's kernels by
# it, never by position, since two runs of one program need not launch in the same order.
Identity = tuple[str, str, str]


@dataclass
class KernelTime:
    """One kernel at one grid shape in the duration pass: a library kernel launched at two
    sizes (cuBLAS's GEMM for the QKV and the MLP projections) is two of these, each with
    its own time and its own verdict."""

    kernel: str                     # the demangled name
    grid: str                       # "(1056, 1, 1)"
    durations_s: list[float] = field(default_factory=list)
    block: str = ""                 # "(256, 1, 1)"
    origins: list[Origin] = field(default_factory=list)   # from the profiler's trace
    # The tensor-core precisions its launches' operators name (the profiler's trace);
    # None: any (launched outside PyTorch's ATen operators, or timed by ncu).
    tensor_precisions: frozenset[str] | None = None
    # Most launches are forward copies to a wider dtype: the input autocast widens for an
    # operator it runs in fp32 (the loss), never a weight cast (those narrow; in backward,
    # gradients widen on their way back to fp32, weights' and activations' alike).
    upcasts: bool = False
    # The (source, destination) dtypes most of its launches' copies had (aten::copy_'s
    # inputs in the trace), naming a cast by what it converts; None: no copy recorded.
    cast: tuple[str, str] | None = None
    # Launches of repeated calls past the first ones the trace recorded (a do_bench run's,
    # a DataLoader epoch's: trace_events.SAMPLED_RANGE), and their GPU time, counted from
    # the recorded ones.
    unrecorded_launches: int = 0
    unrecorded_s: float = 0.0
    # Its launches' ATen operators with their input dims and types (trace_events.Launch's
    # inputs); None where a launch came from no ATen operator, or any was not recorded.
    inputs: frozenset[str] | None = None

    @property
    def identity(self) -> Identity:
        return name_key(self.kernel), self.grid, self.block

    @property
    def launches(self) -> int:
        return len(self.durations_s) + self.unrecorded_launches

    @property
    def total_s(self) -> float:
        return sum(self.durations_s) + self.unrecorded_s

    @property
    def blocks(self) -> int:
        return math.prod(int(n) for n in re.findall(r"\d+", self.grid)) if self.grid else 0

    @property
    def threads(self) -> int:
        """Threads per block."""
        return math.prod(int(n) for n in re.findall(r"\d+", self.block)) if self.block else 0


def identity(row: dict) -> Identity:
    return name_key(str(row[NAME])), str(row.get(GRID, "")), str(row.get(BLOCK, ""))


def kernel_times(rows: list[dict]) -> list[KernelTime]:
    """Every distinct kernel, grid and block with its launch durations, the most GPU time
    first."""
    kernels: dict[Identity, KernelTime] = {}
    for row in rows:
        k = kernels.setdefault(identity(row), KernelTime(str(row[NAME]), str(row.get(GRID, "")),
                                                        block=str(row.get(BLOCK, ""))))
        k.durations_s.append(float(row[DURATION]) * 1e-9)
    return sorted(kernels.values(), key=lambda k: k.total_s, reverse=True)


def kernel_times_from_trace(launches: list[Launch]) -> list[KernelTime]:
    """kernel_times for the launches of PyTorch's profiler trace, each kernel with the
    operators and Python lines its launches came from."""
    groups: dict[Identity, list[Launch]] = {}
    for launch in launches:
        groups.setdefault((name_key(launch.name), launch.grid, launch.block), []).append(launch)
    kernels = [KernelTime(mine[0].name, mine[0].grid, [x.duration_s for x in mine],
                          block=mine[0].block, origins=origins(mine),
                          tensor_precisions=tensor_precisions(mine),
                          upcasts=2 * sum(x.widens and not x.backward_of for x in mine)
                          > len(mine), cast=copied_dtypes(mine),
                          unrecorded_launches=round(sum(x.weight - 1 for x in mine)),
                          unrecorded_s=sum(x.duration_s * (x.weight - 1) for x in mine),
                          inputs=_inputs(mine))
               for mine in groups.values()]
    return sorted(kernels, key=lambda k: k.total_s, reverse=True)


def _inputs(launches: list[Launch]) -> frozenset[str] | None:
    """The distinct inputs of these launches' operators; None unless every launch has some."""
    found = [x.inputs for x in launches]
    return None if None in found else frozenset(found)


def copied_dtypes(launches: list[Launch]) -> tuple[str, str] | None:
    """The (source, destination) dtypes most of these launches' copies had; None where no
    launch is a copy with both recorded."""
    pairs = Counter((x.dtypes[1], x.dtypes[0]) for x in launches
                    if x.operator == COPY and x.dtypes and len(x.dtypes) == 2)
    return pairs.most_common(1)[0][0] if pairs else None


def selected(launches: list[Launch], nvtx: str | None, kernel: str | None,
             skip: int) -> list[Launch]:
    """The trace's launches that pass the same filters Nsight Compute applies to pass 2:
    inside the range ``nvtx``, a name matching ``kernel``, after the first ``skip``."""
    kept = [x for x in launches if (not nvtx or nvtx in x.ranges)
            and (not kernel or re.search(kernel, x.name))]
    return kept[skip:]
