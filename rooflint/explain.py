"""`rooflint explain`: the roofline verdict from numbers a user types. No GPU needed.

The same `place` + `diagnose` as a measured run, fed from a profiler's numbers or a
back-of-envelope estimate, so a what-if and a measurement are judged alike.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rooflint.diagnose import Verdict, diagnose
from rooflint.evidence import LaunchFacts
from rooflint.gpus import GpuSpec
from rooflint.calibration import Calibration, roofs as roofs_for, tensor_roof
from rooflint.roofline import Point, Roofs, place


@dataclass
class Explanation:
    spec: GpuSpec
    roofs: Roofs
    point: Point
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {"gpu": {"id": self.spec.id, "name": self.spec.name},
                "roofs": asdict(self.roofs), "point": asdict(self.point),
                "verdict": asdict(self.verdict)}


def explain(spec: GpuSpec, time_s: float, flops: float, dram_bytes: float,
            algorithmic_bytes: float | None, precision: str,
            calibration: Calibration | None = None) -> Explanation:
    roofs = roofs_for(spec, precision, calibration)
    point = place(time_s, flops, dram_bytes,
                  dram_bytes if algorithmic_bytes is None else algorithmic_bytes, roofs,
                  bytes_source="given")
    facts = LaunchFacts(grid_blocks=0, threads_per_block=0, launches=1, sms=spec.sms,
                        precision=precision,
                        tensor_roof=tensor_roof(spec, precision, calibration))
    return Explanation(spec, roofs, point, diagnose(point, facts))
