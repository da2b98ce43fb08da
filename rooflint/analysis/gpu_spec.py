"""A GPU as the roofline sees it: its datasheet peaks and DRAM bandwidth.

Peaks are dense (never the sparse 2x figure) and each records the SM clock it assumes,
because the clock a kernel actually runs at is often lower and a peak at the wrong clock
misplaces every roof. The spec files that hold them are read in formats/gpus.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from rooflint.common.errors import RooflintError
from rooflint.common.sense import one_of
from rooflint.common.vocabularies import Precision

# a roof a kernel is judged against, in a document
PrecisionWord = Annotated[str, one_of(Precision)]


@dataclass(frozen=True)
class Peak:
    """A compute peak in FLOP/s (ops/s for int8) and the SM clock it assumes."""

    flops_per_s: float
    clock_mhz: float


@dataclass(frozen=True)
class GpuSpec:
    id: str
    name: str
    nvml_names: tuple[str, ...]
    architecture: str
    compute_capability: str
    sms: int
    boost_clock_mhz: float
    memory_type: str
    memory_gb: float
    dram_bandwidth: float  # bytes/s
    l2_bytes: float
    peaks: dict[str, Peak]
    source: str
    notes: str = ""
    path: Path | None = field(default=None, compare=False)

    def peak(self, precision: str) -> Peak:
        if precision not in self.peaks:
            have = ", ".join(self.peaks)
            raise RooflintError(f"{self.name} has no {precision} peak in its spec (it has: {have})")
        return self.peaks[precision]

    def ridge(self, precision: str) -> float:
        """Machine balance in FLOP/byte: where the DRAM roof meets this compute roof."""
        return self.peak(precision).flops_per_s / self.dram_bandwidth
