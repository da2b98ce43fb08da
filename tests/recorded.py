"""The worker side of `rooflint run`, replayed from the recorded H200 run (no GPU, no
process): each variant's samples, checks and clocks as the worker measured them."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from rooflint.formats.jobs import DeviceInfo, FamilyJob, Measurement
from rooflint.common.phases import Stopwatch
from rooflint.formats.results import read_result

RESULT = Path(__file__).parent / "fixtures" / "results" / "h200-bundled.json"
RECORDED = read_result(RESULT)
MEASURED = {(f.name, v.name): Measurement(v.name, v.status, v.message, v.checks, v.samples_s,
                                          v.clocks, v.gpm)
            for f in RECORDED.families for v in f.variants}
COUNTED = {(f.name, v.name): v.counters for f in RECORDED.families for v in f.variants
           if v.counters}


# What a worker reports per variant, in seconds (its "done" event carries their sum).
WORKER_PHASES_PER_VARIANT = {"compile": 0.25, "check": 0.5, "timing": 1.0}


def report(job: FamilyJob, variant: str, progress, on_start: Callable[[str, str], None]) -> None:
    """A variant's events as a worker sends them, with the test's hook between."""
    progress("start", variant)
    on_start(job.family, variant)
    progress("measured", variant)


def use_stand_in_pools(monkeypatch, factory: Callable[..., object]) -> None:
    """Timing workers made by ``factory(env=...)``, one for each device and pinned as the
    real ones are (no process is started), wherever a run starts them: in ``run`` itself,
    or early in the CLI."""
    from rooflint.engine import families as run_module
    from rooflint.measure import runner

    def timing_pools(devices: list[str] | None) -> list:
        return [factory(env={"CUDA_VISIBLE_DEVICES": d} if d is not None else None)
                for d in devices or [None]]
    monkeypatch.setattr(run_module, "timing_pools", timing_pools)
    monkeypatch.setattr(runner, "timing_pools", timing_pools)


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
            report(job, variant.name, progress, self.on_start)
            self.phases.add(WORKER_PHASES_PER_VARIANT)
            yield MEASURED[job.family, variant.name]

    def close(self) -> None:
        pass

    def kill(self) -> None:
        pass


class RecordedProfiler:
    """Stands in for run's Profiler: each job's variants reported as profiled, and at
    ``close`` the counters the recorded run had for them. ``log`` gets ("profile", family)
    per job and ("close", "") at the end; ``on_start`` runs as each variant starts."""

    def __init__(self, cache: str = "cold", metrics: list[str] | None = None,
                 env: dict[str, str] | None = None, preload: tuple[str, ...] = (),
                 on_start: Callable[[str, str], None] = lambda family, variant: None):
        self.env = env
        self.log: list[tuple[str, str]] = []
        self.on_start = on_start
        self.jobs: list[FamilyJob] = []

    def start(self) -> None:
        self.log.append(("start", ""))

    def profile(self, job: FamilyJob, timeout: float, progress, watch=None) -> int:
        self.log.append(("profile", job.family))
        for variant in job.variants:
            report(job, variant.name, progress, self.on_start)
        self.jobs.append(job)
        return len(self.jobs) - 1

    def close(self) -> dict:
        self.log.append(("close", ""))
        return {ticket: {v.name: COUNTED[job.family, v.name] for v in job.variants
                         if (job.family, v.name) in COUNTED}
                for ticket, job in enumerate(self.jobs)}

    def kill(self) -> None:
        pass


def counters_of(log: str, names: list[str]) -> dict:
    """A recorded ncu log's counters by variant name, for the first ``len(names)``
    variants in their profiled order."""
    from rooflint.measure import ncu
    return {names[index]: counters for index, counters in ncu.counters_by_index(log).items()
            if index < len(names)}
