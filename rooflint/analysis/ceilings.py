"""The roofs a kernel is judged against: its GPU's datasheet, or the ceilings measured on it.

Measured ceilings beat datasheet ones (the Empirical Roofline Toolkit's lesson): an
H200's 4.8 TB/s datasheet DRAM bandwidth is not reachable by any kernel, so judging a
kernel against it understates how close to the real roof it is. ``rooflint calibrate``
measures them (the calibration document is formats/calibration.py's); ``run`` and
``explain`` judge against them when present and show the datasheet figures beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rooflint.analysis.evidence import FP8_UPGRADE, TENSOR_UPGRADE
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.analysis.roofline import Roofs
from rooflint.common.sense import Amount, Positive


@dataclass
class Ceiling:
    value: Positive              # bytes/s for dram, l2 and l1, FLOP/s for a precision
    method: str
    sm_clock_mhz: Amount | None  # NVML's reading while it ran


class MeasuredCeilings(Protocol):
    """What the roofs take from a calibration (formats/calibration.py's document): the
    ceilings measured for DRAM, L2 and L1, and by precision, and when they were measured."""

    dram: Ceiling
    l2: Ceiling | None
    l1: Ceiling | None
    compute: dict[str, Ceiling]
    created: str


def bandwidth(calibration: MeasuredCeilings | None, level: str) -> float | None:
    """The calibrated bandwidth of a memory level ("l2", "l1"); None where not measured."""
    ceiling = getattr(calibration, level) if calibration else None
    return ceiling.value if ceiling else None


def roofs(spec: GpuSpec, precision: str, calibration: MeasuredCeilings | None) -> Roofs:
    """The roofs for a precision: calibrated where measured, datasheet otherwise."""
    peak = spec.peak(precision).flops_per_s
    measured = calibration.compute.get(precision) if calibration else None
    dram = calibration.dram.value if calibration else spec.dram_bandwidth
    parts = []
    if calibration:
        parts.append(f"DRAM calibrated {calibration.created[:10]}")
        parts.append(f"{precision} {'calibrated' if measured else 'datasheet'}")
    return Roofs(precision=precision, compute=measured.value if measured else peak,
                 dram_bandwidth=dram, source=", ".join(parts) or "datasheet",
                 datasheet_compute=peak, datasheet_dram_bandwidth=spec.dram_bandwidth)


def tensor_roof(spec: GpuSpec, precision: str, calibration: MeasuredCeilings | None
                ) -> float | None:
    """The tensor-core roof a CUDA-core kernel of this precision could move to, if any."""
    return _roof_of(spec, TENSOR_UPGRADE.get(precision), calibration)


def fp8_roof(spec: GpuSpec, precision: str, calibration: MeasuredCeilings | None
             ) -> float | None:
    """The fp8 tensor roof a 16-bit tensor kernel could move to, where the GPU has one."""
    return _roof_of(spec, FP8_UPGRADE.get(precision), calibration)


def _roof_of(spec: GpuSpec, precision: str | None, calibration: MeasuredCeilings | None
             ) -> float | None:
    return roofs(spec, precision, calibration).compute if precision in spec.peaks else None


def fraction_of_datasheet_at_clock(spec: GpuSpec, precision: str, ceiling: Ceiling) -> float | None:
    """Measured / datasheet peak rescaled to the SM clock seen (the peak assumes its own)."""
    peak = spec.peaks.get(precision)
    if not peak or not ceiling.sm_clock_mhz:
        return None
    return ceiling.value / (peak.flops_per_s * ceiling.sm_clock_mhz / peak.clock_mhz)
