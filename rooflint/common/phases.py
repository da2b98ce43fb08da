"""Where the seconds of a run go: named phases, timed where they happen and added up.

The worker times its own phases (drawing inputs, compiling, the reference's outputs,
checking, timing, graph replay, GPM, the profiled runs) and reports them with each family;
the parent adds what only it sees (start-up, the counter pass's wall time, analysis).
`rooflint run --timings` prints them, the result document keeps them, and benchmarks/
reads them: a cut in time to a verdict is chosen from these numbers, not guessed.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

# A host reference's outputs, by where they came from (the reference cache, issue 25):
# read from it, or computed on the host and written to it; "reference" is the rest (a
# reference on the GPU, one computed with the cache bypassed, outputs already at hand).
REFERENCE_CACHE_HIT = "reference (cache hit)"
REFERENCE_CACHE_MISS = "reference (cache miss)"
# the cache write: what the writes behind the run left to wait for
REFERENCE_CACHE_WRITE = "reference (cache write)"
# In the order a run meets them; "counters" is the whole profile pass, whose worker's own
# phases are kept too, prefixed "counters/"; "source lines" the source pass (run --source).
PHASES = ("startup", "inputs", "compile", "reference", REFERENCE_CACHE_HIT, REFERENCE_CACHE_MISS,
          REFERENCE_CACHE_WRITE, "check", "timing", "graph", "gpm", "counters", "source lines",
          "analysis")
COUNTER_PASS_PREFIX = "counters/"


@dataclass
class Phase:
    """The phase a block is timed as: a block that learns only as it runs what it was
    doing (a cache hit or a miss) renames it before it ends."""

    name: str


@dataclass
class Stopwatch:
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        began, timed = time.perf_counter(), Phase(name)
        try:
            yield timed
        finally:
            self.add({timed.name: time.perf_counter() - began})

    def add(self, seconds: dict[str, float], prefix: str = "") -> None:
        for name, value in seconds.items():
            self.seconds[prefix + name] = self.seconds.get(prefix + name, 0.0) + value


def totals(per_family: list[dict[str, float]], run_level: dict[str, float]) -> dict[str, float]:
    """The run's phases: its own plus every family's, added up."""
    watch = Stopwatch(dict(run_level))
    for seconds in per_family:
        watch.add(seconds)
    return watch.seconds
