"""The worker side of `rooflint run`, replayed from the recorded H200 run (no GPU, no
process): each variant's samples, checks and clocks as the worker measured them."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from rooflint.measure.protocol import DeviceInfo, FamilyJob, Measurement
from rooflint.phases import Stopwatch
from rooflint.results import read_result

RESULT = Path(__file__).parent / "fixtures" / "results" / "h200-bundled.json"
RECORDED = read_result(RESULT)
MEASURED = {(f.name, v.name): Measurement(v.name, v.status, v.message, v.checks, v.samples_s,
                                          v.clocks, v.gpm)
            for f in RECORDED.families for v in f.variants}


# What a worker reports per variant, in seconds (its "done" event carries their sum).
WORKER_PHASES_PER_VARIANT = {"compile": 0.25, "check": 0.5, "timing": 1.0}


class RecordedPool:
    """Stands in for run's WorkerPool. ``log`` gets ("measure", family) as a family starts;
    ``on_start(family, variant)`` runs as each variant starts (where a test looks at what
    the screen shows at that moment, or interrupts)."""

    def __init__(self, on_start: Callable[[str, str], None] = lambda family, variant: None,
                 env: dict[str, str] | None = None):
        self.env = env
        self.log: list[tuple[str, str]] = []
        self.on_start = on_start
        self.worker = None
        self.phases = Stopwatch()

    def start(self) -> DeviceInfo:
        return RECORDED.gpu

    def measure(self, job: FamilyJob, timeout: float, progress) -> Iterator[Measurement]:
        self.log.append(("measure", job.family))
        for variant in job.variants:
            progress("start", variant.name)
            self.on_start(job.family, variant.name)
            progress("measured", variant.name)
            self.phases.add(WORKER_PHASES_PER_VARIANT)
            yield MEASURED[job.family, variant.name]

    def close(self) -> None:
        pass
