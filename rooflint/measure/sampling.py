"""How many timing samples a measurement takes: batches of each side alternating until
every side has enough with a small spread, or the time budget is spent. Plain Python over
whatever takes the samples (event_timing.EventTimer on a GPU; a stand-in in the CPU tests)."""

from __future__ import annotations

from typing import Callable, Protocol

from rooflint.common.vocabularies import CacheMode
from rooflint.analysis.stats import quartiles, relative_spread
from rooflint.formats.jobs import Clocks, TimingJob

NOISY_SAMPLES_FACTOR = 5  # still above the target spread at max_samples: up to 5x as many samples


class Sampler(Protocol):
    """What time_interleaved needs of a side: a warm-up that says how long one run takes,
    and a batch of event-timed samples."""

    def warm_up(self, run: Callable[[], None], cold: bool) -> float: ...

    def batch(self, run: Callable[[], None], cold: bool, count: int,
              clocks: Clocks) -> list[float]: ...


def time_interleaved(runs: list[tuple[Sampler, Callable[[], None]]], timing: TimingJob
                     ) -> list[tuple[list[float], Clocks]]:
    """Event-timed samples for each run, batches alternating (A B A B ...) so that drift in
    clocks or temperature hits every side alike; until every side has at least
    ``min_samples`` and a small spread, or the time budget (per side) is spent. A spread
    still above target at ``max_samples`` is no reason to stop: sampling goes on, up to
    ``NOISY_SAMPLES_FACTOR`` times as many, within the same budget. Every sample is kept,
    so the result says how many were taken and how wide they spread."""
    cold = timing.cache == CacheMode.COLD
    batches = [int(min(50, max(1, 0.05 / max(session.warm_up(run, cold), 1e-6))))
               for session, run in runs]
    samples: list[list[float]] = [[] for _ in runs]
    clocks = [Clocks() for _ in runs]
    most = NOISY_SAMPLES_FACTOR * timing.max_samples
    while min(len(s) for s in samples) < most:
        for index, (session, run) in enumerate(runs):
            count = min(batches[index], most - len(samples[index]))
            if count > 0:
                samples[index] += session.batch(run, cold, count, clocks[index])
        enough = all(len(s) >= timing.min_samples for s in samples)
        settled = all(relative_spread(*quartiles(s)) < timing.target_spread for s in samples)
        spent = sum(map(sum, samples)) > timing.budget_s * len(runs)
        if enough and (settled or spent):
            break
    return list(zip(samples, clocks))
