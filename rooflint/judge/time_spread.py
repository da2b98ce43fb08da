"""Why a kernel's launch times spread when it is not noise: a persistent kernel running
several shapes at one launch configuration (tight groups of times), or work that changes
from call to call (times that step little from one launch to the next). Either way its
time is said otherwise than a noisy kernel's; output/profile_words.py says why."""

from __future__ import annotations

from dataclasses import dataclass

from rooflint.analysis.stats import TimeStats
from rooflint.judge.kernel_times import KernelTime

# Launch times of one kernel this far apart (the next 15 % longer or more) are different
# shapes of a persistent kernel at one launch configuration, not noise: cuBLAS's GEMM at
# 10 us and 27 us, or 91, 258, 327 and 347 us, on the same grid.
SHAPE_GAP = 1.15


def shape_groups(durations: list[float]) -> list[list[float]]:
    """A kernel's launch durations, sorted, split wherever one is SHAPE_GAP longer than
    the one before."""
    ordered = sorted(durations)
    groups = [ordered[:1]]
    for duration in ordered[1:]:
        if duration >= groups[-1][-1] * SHAPE_GAP:
            groups.append([])
        groups[-1].append(duration)
    return groups


# A kernel whose work changes from call to call at one launch configuration (tensors of
# several sizes, a benchmark's sweep of sizes) spreads its times without noise: launch to
# launch they agree far more closely than over the run. Triton's fused-softmax tutorial's
# kernel, 98 sizes through do_bench at one grid, read "±21% noisy"; for independent noise
# the typical step from one launch to the next is about 0.7 of the IQR.
DRIFT_MIN_LAUNCHES = 8
DRIFT_STEP_SHARE = 0.25


@dataclass(frozen=True)
class Drift:
    """A kernel whose work changes along the run: its time over every launch (its spread
    not yet said to be the work's, its fastest launch among it), the median step from one
    launch to the next as a share of the median launch, and its slowest launch."""

    stats: TimeStats
    step: float
    slowest_s: float


def drifting(time: KernelTime) -> Drift | None:
    """The kernel's drift, when its launches in launch order step far less than they
    spread (see DRIFT_STEP_SHARE); else None."""
    samples = time.durations_s
    stats = TimeStats.of(samples) if samples else None
    if stats is None or len(samples) < DRIFT_MIN_LAUNCHES or not stats.noisy:
        return None
    steps = sorted(abs(b - a) for a, b in zip(samples, samples[1:]))
    step = steps[len(steps) // 2] / stats.median_s
    if step >= DRIFT_STEP_SHARE * stats.spread:
        return None
    return Drift(stats, step, max(samples))


@dataclass(frozen=True)
class Shapes:
    """A kernel that ran several shapes at one launch configuration: each shape's time
    (shortest first) and which of them is the most frequent."""

    stats: tuple[TimeStats, ...]
    main: int

    @property
    def time(self) -> TimeStats:
        """The most frequent shape's time: the kernel's."""
        return self.stats[self.main]


def mixed_shapes(time: KernelTime) -> Shapes | None:
    """The shapes of a kernel whose launch times spread because it ran several at one
    launch configuration (two or more groups of launches, each of two or more, each
    tight); else None (one shape, or a spread no grouping explains, which stays noise)."""
    groups = shape_groups(time.durations_s)
    stats = [TimeStats.of(g) for g in groups]
    if len(groups) < 2 or not TimeStats.of(time.durations_s).noisy or \
            any(len(g) < 2 or s.noisy for g, s in zip(groups, stats)):
        return None
    return Shapes(tuple(stats), max(range(len(groups)), key=lambda i: len(groups[i])))
