"""The explain document: a point placed under one GPU's roofs, with its verdict.

`rooflint explain` makes it (judge/explain.py); ``--json`` writes it, and the terminal
printer (output/roofs.py) shows it, so the record sits below both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rooflint.analysis.diagnose import Verdict
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.analysis.roofline import Floor, Point, Roofs


@dataclass
class Explanation:
    spec: GpuSpec
    roofs: Roofs
    point: Point
    verdict: Verdict
    floor: Floor | None = None      # the least time the algorithmic work can take

    def to_json(self) -> dict[str, Any]:
        return {"gpu": {"id": self.spec.id, "name": self.spec.name},
                "roofs": asdict(self.roofs), "point": asdict(self.point),
                "verdict": asdict(self.verdict),
                "floor": asdict(self.floor) if self.floor else None}
