"""`rooflint explain`: the roofline verdict from numbers a user types. No GPU needed.

The same `place` + `diagnose` as a measured run, fed from a profiler's numbers or a
back-of-envelope estimate, so a what-if and a measurement are judged alike.
"""

from __future__ import annotations

from rooflint.analysis.diagnose import diagnose
from rooflint.common.errors import RooflintError
from rooflint.analysis.evidence import LaunchFacts
from rooflint.formats.explanation import Explanation
from rooflint.analysis.ceilings import roofs as roofs_for, tensor_roof
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.formats.calibration import Calibration
from rooflint.analysis.roofline import IMPOSSIBLE_ABOVE_DATASHEET, floor, place
from rooflint.common.units import format_rate, format_time


def explain(spec: GpuSpec, time_s: float, flops: float, dram_bytes: float,
            algorithmic_bytes: float | None, precision: str,
            calibration: Calibration | None = None) -> Explanation:
    check_possible(spec, time_s, flops, dram_bytes, precision)
    roofs = roofs_for(spec, precision, calibration)
    point = place(time_s, flops, dram_bytes,
                  dram_bytes if algorithmic_bytes is None else algorithmic_bytes, roofs,
                  bytes_source="given")
    facts = LaunchFacts.of(spec.sms, precision,
                           tensor_roof=tensor_roof(spec, precision, calibration))
    return Explanation(spec, roofs, point, diagnose(point, facts),
                       floor(flops, point.algorithmic_bytes, roofs))


def check_possible(spec: GpuSpec, time_s: float, flops: float, dram_bytes: float,
                   precision: str) -> None:
    """RooflintError for numbers no kernel on this GPU could have produced: above its DRAM
    bandwidth, or above its fastest compute peak (a fast fp16 GEMM typed with the default
    --precision fp32 is a wrong precision, which the verdict shows, not an impossibility)."""
    fastest = max(spec.peaks, key=lambda p: spec.peaks[p].flops_per_s)
    amounts = (("DRAM bandwidth", dram_bytes, spec.dram_bandwidth, "B/s", "--bytes"),
               (f"fastest peak ({fastest})", flops, spec.peaks[fastest].flops_per_s,
                "FLOP/s", "--flops"))
    for what, amount, roof, unit, option in amounts:
        shortest = amount / roof      # a time, where amount / time_s could pass any float
        if shortest / time_s > IMPOSSIBLE_ABOVE_DATASHEET:
            raise RooflintError(
                f"{option} in --time gives {shortest / time_s:.3g}x the {spec.id} datasheet "
                f"{what} ({format_rate(roof, unit)}): at that rate it takes "
                f"{format_time(shortest)}, not {format_time(time_s)}; no kernel can; check "
                f"the units (ms vs us, GB vs MB)")
