"""The roofline arithmetic: one measurement on one GPU becomes a point and its gaps.

Pure functions over numbers, following the roofline article (seeds/roofline-model.txt):
observed AI = FLOPs / measured DRAM bytes, algorithmic AI = FLOPs / compulsory bytes,
achieved = FLOPs / time, ridge = compute roof / DRAM roof, applicable roof =
min(compute roof, AI x DRAM roof). Gaps are kept as fractions so that a kernel with no
arithmetic (a copy: AI = 0) still has a well-defined place relative to its roof.

With counters, the point has a level per memory level (Nsight Compute's hierarchical
roofline): the bytes that crossed DRAM, L2 and L1, the intensity each gives, and how close
each level ran to its own roof.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from rooflint.analysis.gpu_spec import PrecisionWord
from rooflint.common.sense import Amount, Intensity, Positive, Seconds, one_of

LEVELS = ("dram", "l2", "l1")          # the memory levels of the hierarchical roofline


@dataclass(frozen=True)
class Roofs:
    """The ceilings a point is judged against, with where they came from."""

    precision: PrecisionWord
    compute: Positive                # FLOP/s
    dram_bandwidth: Positive         # bytes/s
    source: str                      # "datasheet", or which roofs `rooflint calibrate` measured
    datasheet_compute: Positive      # shown beside calibrated roofs
    datasheet_dram_bandwidth: Positive

    @property
    def ridge(self) -> float:
        """FLOP/byte where the DRAM roof meets the compute roof."""
        return self.compute / self.dram_bandwidth


@dataclass(frozen=True)
class Point:
    time_s: Seconds
    flops: Amount
    dram_bytes: Amount
    bytes_source: Annotated[str, one_of(("model", "ncu", "given"))]   # given: by `explain`
    algorithmic_bytes: Amount
    observed_ai: Intensity       # FLOP/byte
    algorithmic_ai: Intensity
    achieved_flops: Amount       # FLOP/s
    achieved_bandwidth: Amount   # bytes/s
    ridge: Positive
    applicable_roof: Amount      # FLOP/s at this observed AI
    limiting_roof: Annotated[str, one_of(("dram", "compute"))]  # left of the ridge, right of it
    dram_fraction: Amount        # achieved bandwidth / DRAM roof
    compute_fraction: Amount     # achieved FLOP/s / compute roof
    roof_fraction: Amount        # achieved / applicable roof (the vertical gap, 1 = on the roof)
    traffic_fraction: Amount     # compulsory / measured bytes = observed / algorithmic AI
    algorithmic_known: bool = True  # False: nobody counted the compulsory bytes (an
    #                                 application kernel); algorithmic AI then repeats observed


def place(time_s: float, flops: float, dram_bytes: float, algorithmic_bytes: float | None,
          roofs: Roofs, bytes_source: str = "model") -> Point:
    """Put one kernel on the roofline. Zero FLOPs (pure data movement) is valid; so is an
    unknown compulsory traffic (``None``), which no gap is then measured against."""
    known = algorithmic_bytes is not None
    algorithmic_bytes = algorithmic_bytes if known else dram_bytes
    observed_ai = flops / dram_bytes if dram_bytes else float("inf")
    algorithmic_ai = flops / algorithmic_bytes if algorithmic_bytes else float("inf")
    achieved = flops / time_s
    bandwidth = dram_bytes / time_s
    dram_fraction = bandwidth / roofs.dram_bandwidth
    compute_fraction = achieved / roofs.compute
    left_of_ridge = observed_ai < roofs.ridge
    return Point(
        time_s=time_s, flops=flops, dram_bytes=dram_bytes, bytes_source=bytes_source,
        algorithmic_bytes=algorithmic_bytes,
        observed_ai=observed_ai, algorithmic_ai=algorithmic_ai,
        achieved_flops=achieved, achieved_bandwidth=bandwidth,
        ridge=roofs.ridge,
        applicable_roof=min(roofs.compute, observed_ai * roofs.dram_bandwidth),
        limiting_roof="dram" if left_of_ridge else "compute",
        dram_fraction=dram_fraction,
        compute_fraction=compute_fraction,
        roof_fraction=dram_fraction if left_of_ridge else compute_fraction,
        traffic_fraction=algorithmic_bytes / dram_bytes if dram_bytes else 1.0,
        algorithmic_known=known,
    )


@dataclass(frozen=True)
class Level:
    """One memory level of the hierarchical roofline. ``roof`` is the level's bandwidth:
    DRAM's, and the calibrated L2 and L1/shared bandwidths (None uncalibrated).
    ``fraction`` is of that roof for DRAM and L2; for L1 it is Nsight Compute's L1/shared
    throughput against its peak, which counts shared-memory traffic too, while L1's bytes
    (``l1tex__t_bytes``, as in Nsight Compute's hierarchical chart) are global and local
    accesses only: a shared-memory tiled kernel's L1 mark sits low against the L1 roof
    while its L1 fraction is high."""

    name: Annotated[str, one_of(LEVELS)]
    bytes: Amount
    intensity: Intensity         # FLOP/byte at this level
    bandwidth: Amount            # bytes/s that crossed it
    roof: Positive | None        # bytes/s
    fraction: Amount | None


def levels(point: Point, roofs: Roofs, l2_bytes: float, l2_roof: float | None,
           l1_bytes: float, l1_roof: float | None, l1_fraction: float) -> list[Level]:
    """DRAM, L2 and L1 for a point whose traffic was counted."""
    def level(name: str, moved: float, roof: float | None, fraction: float | None) -> Level:
        return Level(name, moved, point.flops / moved if moved else float("inf"),
                     moved / point.time_s, roof, fraction)
    return [level("dram", point.dram_bytes, roofs.dram_bandwidth, point.dram_fraction),
            level("l2", l2_bytes, l2_roof,
                  l2_bytes / point.time_s / l2_roof if l2_roof else None),
            level("l1", l1_bytes, l1_roof, l1_fraction)]


# An inner level (L2, L1) that moved less than this share of a kernel's DRAM bytes was gone
# around by most of its data, and its intensity says nothing of that data. Every byte read
# from DRAM crosses L2, and crosses L1 when the SMs load it; but TMA and bulk copies take it
# from L2 straight to shared memory (cuBLAS's and cuDNN's Hopper kernels), so L1 counts only
# the few bytes that did go through it (an epilogue's): the cuBLAS GEMMs of the recorded
# profiles (examples/profile) have L1 intensities of 2e3 to 3e8 FLOP/B, or none where L1
# counted nothing. There, kernels that load through L1 move 0.96 or more of their DRAM bytes
# through it (a one-block cast 0.56), the others 0.40 and less; half lies between.
# (evidence.moved_through_l1 asks another question of the same TMA path: whether L1's
# throughput reading, shared-memory traffic included, is a bandwidth that could bind.)
BYPASSED_BELOW = 0.5


def bypassed(level: Level, dram_bytes: float) -> bool:
    """Whether most of a kernel's data went around this inner level (BYPASSED_BELOW), so
    that its intensity is not the kernel's at that level."""
    return level.bytes < BYPASSED_BELOW * dram_bytes


# Rates this far above a datasheet roof are no measurement (a unit slip in typed numbers, a
# counter gone wrong): datasheet peaks assume a boost clock that real clocks can beat by a
# few percent, never by a quarter.
IMPOSSIBLE_ABOVE_DATASHEET = 1.25

# A time this far under its floor is not noise: the calibrated roofs are rates kernels
# reach, so a measurement can beat them by a few percent, not by a tenth.
SPEED_OF_LIGHT_MARGIN = 0.90


@dataclass(frozen=True)
class Floor:
    """The least time the algorithmic work can take on a GPU's roofs (its speed of light):
    the compulsory bytes at the DRAM roof or the FLOPs at the compute roof, the longer."""

    time_s: Seconds
    bound_by: Annotated[str, one_of(("dram", "compute"))]
    amount: Amount                # the bytes or FLOPs that set it
    roof: Positive                # at this rate (bytes/s or FLOP/s)

    def beaten_by(self, time_s: float) -> bool:
        """Whether ``time_s`` is faster than physically possible."""
        return time_s < SPEED_OF_LIGHT_MARGIN * self.time_s


def floor(flops: float, compulsory_bytes: float, roofs: Roofs,
          cached: bool = False) -> Floor | None:
    """The work's floor under ``roofs``; with ``cached`` (a warm cache, or a kernel inside a
    program that may read what the one before it left in L2) its FLOPs' alone, since its
    bytes may never reach DRAM. None when there is no work to bound."""
    bounds = [Floor(flops / roofs.compute, "compute", flops, roofs.compute)]
    if not cached:
        bounds.append(Floor(compulsory_bytes / roofs.dram_bandwidth, "dram", compulsory_bytes,
                            roofs.dram_bandwidth))
    longest = max(bounds, key=lambda f: f.time_s)
    return longest if longest.time_s > 0 else None
