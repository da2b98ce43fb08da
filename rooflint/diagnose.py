"""Verdicts and moves: from a roofline point and launch facts to what limits a kernel.

The decision follows the kernel book's diagnostic tree (5.10): at the DRAM roof ->
bandwidth-bound; at the compute roof -> compute-bound; at neither -> chain-bound (the
per-iteration dependency chain, latency, synchronisation, too little parallelism or
launch overhead is the ceiling). "At a roof" means at least BOUND_THRESHOLD of it,
Nsight Compute's own line for its latency rule. Moves obey the book's traps (5.14):
nothing that cuts bytes is offered to a kernel that is not bandwidth-bound, and no
"more SMs / split the work" to a chain-bound kernel whose grid already fills the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rooflint.roofline import Point
from rooflint.units import format_rate, format_time

BOUND_THRESHOLD = 0.60         # fraction of a roof that counts as "at" it
NEAR_ROOF = 0.90               # above this, little headroom is left on that roof
EXTRA_TRAFFIC_THRESHOLD = 0.80  # compulsory/measured bytes under this: traffic worth cutting
SHORT_KERNEL_S = 10e-6         # a few eager launches (~4 us each from CuPy) long
IDLE_COMPUTE = 0.05            # compute under this fraction of its roof: the math is not the chain
THRESHOLDS = {
    "bound_at_fraction_of_roof": BOUND_THRESHOLD,
    "near_roof_fraction": NEAR_ROOF,
    "extra_traffic_below_fraction": EXTRA_TRAFFIC_THRESHOLD,
    "short_kernel_s": SHORT_KERNEL_S,
    "idle_compute_fraction": IDLE_COMPUTE,
}

# CUDA-core precision -> the tensor-core roof a kernel of that type could move to.
TENSOR_UPGRADE = {"fp32": "tf32-tensor", "fp16": "fp16-tensor", "fp64": "fp64-tensor"}


@dataclass(frozen=True)
class LaunchFacts:
    """What the launch tells without counters."""

    grid_blocks: int
    threads_per_block: int
    launches: int
    sms: int
    precision: str
    tensor_roof: float | None = None   # FLOP/s of TENSOR_UPGRADE[precision], if the GPU has it


@dataclass
class Cause:
    name: str      # grid_under_one_wave | launch_overhead | exposed_memory_latency | dependency_chain
    detail: str    # the numbers that triggered it


@dataclass
class Move:
    direction: str  # up | right | raise-the-roof
    action: str
    reason: str
    expect: str     # movement on the chart


@dataclass
class Verdict:
    bound: str                      # bandwidth | compute | chain
    summary: str
    causes: list[Cause] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=lambda: dict(THRESHOLDS))


def classify(point: Point) -> str:
    if point.dram_fraction >= BOUND_THRESHOLD and point.dram_fraction >= point.compute_fraction:
        return "bandwidth"
    if point.compute_fraction >= BOUND_THRESHOLD:
        return "compute"
    return "chain"


def diagnose(point: Point, facts: LaunchFacts) -> Verdict:
    bound = classify(point)
    if bound == "bandwidth":
        return Verdict(bound, _summary(point, "DRAM"), moves=_bandwidth_moves(point))
    if bound == "compute":
        return Verdict(bound, _summary(point, "compute"), moves=_compute_moves(point, facts))
    causes = _chain_causes(point, facts)
    return Verdict(bound, _chain_summary(point), causes, _chain_moves(point, facts, causes))


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.0f}%"


def _summary(point: Point, roof: str) -> str:
    fraction = point.dram_fraction if roof == "DRAM" else point.compute_fraction
    rate = (format_rate(point.achieved_bandwidth, "B/s") if roof == "DRAM"
            else format_rate(point.achieved_flops, "FLOP/s"))
    return f"at {_pct(fraction)} of the {roof} roof ({rate}; bound at >= {_pct(BOUND_THRESHOLD)})"


def _chain_summary(point: Point) -> str:
    return (f"at neither roof: DRAM {_pct(point.dram_fraction)}, compute "
            f"{_pct(point.compute_fraction)} (bound at >= {_pct(BOUND_THRESHOLD)})")


def _bandwidth_moves(point: Point) -> list[Move]:
    moves = []
    if point.traffic_fraction < EXTRA_TRAFFIC_THRESHOLD:
        moves.append(Move(
            "right", "cut redundant DRAM traffic: coalesce, tile for reuse, fuse",
            f"it moves {1 / point.traffic_fraction:.1f}x the compulsory bytes while bandwidth-bound",
            f"right toward the algorithmic AI ({point.algorithmic_ai:.3g} FLOP/B); "
            f"time down by up to {1 / point.traffic_fraction:.1f}x"))
    else:
        moves.append(Move(
            "right", "fewer bytes per element: lower precision or quantize, or fuse with "
                     "the kernel that produces or consumes this data",
            f"bandwidth-bound and already at the compulsory traffic "
            f"({_pct(point.traffic_fraction)} of bytes are compulsory): only fewer bytes help",
            "right, along the DRAM roof: time falls in proportion to the bytes cut"))
    if point.dram_fraction < NEAR_ROOF:
        moves.append(Move(
            "up", "more bytes in flight: 16-byte vector loads, several independent loads "
                  "per thread, enough resident warps",
            f"{_pct(1 - point.dram_fraction)} of the DRAM roof is unused",
            f"up to the DRAM roof: at most {1 / point.dram_fraction:.2f}x faster"))
    return moves


def _compute_moves(point: Point, facts: LaunchFacts) -> list[Move]:
    moves = []
    if facts.tensor_roof and facts.tensor_roof > point.achieved_flops * 1.5:
        moves.append(Move(
            "raise-the-roof", f"use tensor cores ({facts.precision} -> tensor MMA)",
            f"compute-bound on CUDA cores; the tensor roof is "
            f"{format_rate(facts.tensor_roof, 'FLOP/s')}",
            f"a higher roof: up to {facts.tensor_roof / point.achieved_flops:.1f}x the "
            f"current FLOP/s, if precision allows"))
    if point.compute_fraction < NEAR_ROOF:
        moves.append(Move(
            "up", "more FMAs in flight: larger register tiles, more accumulators, fewer "
                  "non-math instructions, no bank conflicts",
            f"{_pct(1 - point.compute_fraction)} of the compute roof is unused",
            f"up to the compute roof: at most {1 / point.compute_fraction:.2f}x faster"))
    return moves


def _under_one_wave(facts: LaunchFacts) -> bool:
    return 0 < facts.grid_blocks < facts.sms


def _chain_causes(point: Point, facts: LaunchFacts) -> list[Cause]:
    causes = []
    if _under_one_wave(facts):
        causes.append(Cause(
            "grid_under_one_wave",
            f"{facts.grid_blocks} blocks of {facts.threads_per_block} threads on "
            f"{facts.sms} SMs: at most {facts.grid_blocks} SMs work"))
    if point.time_s < SHORT_KERNEL_S * facts.launches:
        causes.append(Cause(
            "launch_overhead",
            f"{format_time(point.time_s)} for {facts.launches} launch(es): comparable to "
            f"the cost of launching"))
    if not causes and point.limiting_roof == "dram" and point.compute_fraction < IDLE_COMPUTE:
        detail = (f"left of the ridge with the math units idle (compute "
                  f"{_pct(point.compute_fraction)}) and DRAM at {_pct(point.dram_fraction)}: "
                  f"loads wait on memory latency, too few bytes in flight")
        if point.bytes_source == "model":
            detail += ("; or the kernel moves more bytes than the model counts (uncoalesced "
                       "sectors, re-reads): measured bytes tell which")
        causes.append(Cause("exposed_memory_latency", detail))
    if not causes:
        causes.append(Cause(
            "dependency_chain",
            f"DRAM {_pct(point.dram_fraction)}, compute {_pct(point.compute_fraction)}, grid "
            f"and launch cost fine: the per-iteration chain, latency or synchronisation sets "
            f"the pace (counters name which)"))
    return causes


def _chain_moves(point: Point, facts: LaunchFacts, causes: list[Cause]) -> list[Move]:
    names = {c.name for c in causes}
    headroom = 1 / max(point.dram_fraction, point.compute_fraction, 1e-9)
    moves = []
    if "grid_under_one_wave" in names:
        moves.append(Move(
            "up", "more parallelism: more, smaller blocks (or split the reduction across "
                  "blocks) so every SM has work",
            f"the grid fills {facts.grid_blocks} of {facts.sms} SMs",
            f"up, same AI: toward {min(facts.sms / facts.grid_blocks, headroom):.1f}x"))
    if "launch_overhead" in names:
        moves.append(Move(
            "up", "amortise launches: CUDA graphs, or fuse with neighbouring kernels",
            "the kernel is as short as its launch", "up, same AI"))
    if "exposed_memory_latency" in names:
        moves.append(Move(
            "up", "more bytes in flight: 16-byte vector loads, several independent loads "
                  "per thread (grid-stride with unrolling)",
            f"DRAM at {_pct(point.dram_fraction)} of its roof: the wait for each byte, not "
            f"the roof, sets the pace",
            f"up along the same AI toward the DRAM roof ({1 / point.dram_fraction:.1f}x away)"))
    if "dependency_chain" in names:
        moves.append(Move(
            "up", "shorten the chain: more independent work per thread (ILP), fewer "
                  "barriers on the critical path, loads issued earlier",
            f"DRAM at {_pct(point.dram_fraction)} and compute at "
            f"{_pct(point.compute_fraction)}: cutting bytes or adding SMs would not help",
            f"up, same AI: the roof is {headroom:.1f}x away"))
    return moves
