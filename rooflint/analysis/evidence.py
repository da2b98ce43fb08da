"""Evidence: named facts about a measured variant, each with the numbers that set it.

The verdict's causes and the move catalog are both written in terms of these flags, so
every printed cause or move can say exactly which measurement triggered it. Flags come
from the roofline point, the launch geometry, Nsight Compute counters (stall reasons,
waves, spills) when present, and CUDA-graph replay timing for short kernels.

Stall reasons set the flags the cause registry (causes.py) gives them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated

from rooflint.analysis.causes import OTHER_STALL_FLAG, STALL_FLAGS, stalls_of
from rooflint.analysis.counters import CACHE_REUSE, Counters
from rooflint.analysis.roofline import Point
from rooflint.common.sense import Vocabulary, one_of
from rooflint.common.units import format_bytes, format_rate, format_time
from rooflint.common.vocabularies import Precision


class Bound(Vocabulary):
    """What limits a kernel: what classify answers, a verdict's bound, a manifest's
    ``expect.bound``."""

    BANDWIDTH = "bandwidth"     # at a memory roof: DRAM's, L2's or L1's
    COMPUTE = "compute"         # at the compute roof
    CHAIN = "chain"             # below both roofs: diagnose names the causes


BoundWord = Annotated[str, one_of(Bound)]       # a bound in a document (Vocabulary)

BOUND_THRESHOLD = 0.60          # fraction of a roof that counts as "at" it (Nsight Compute's)
NEAR_ROOF = 0.90                # above this, little headroom is left on that roof
AT_ROOF = 0.80                  # a roof this near is reached: compute here is the bound
EXTRA_TRAFFIC = 0.80            # compulsory/measured bytes under this: traffic worth cutting
SERVED_FROM_CACHE = 1 / CACHE_REUSE  # compulsory/measured bytes above this: served from cache
LAUNCH_COST_S = 10e-6           # per launch: a kernel this short costs about what launching it
                                # does (a few eager launches, ~4 us each from CuPy)
EMPTY_KERNEL_S = 0.51e-6        # an empty kernel replayed from a CUDA graph (docs/architecture.md,
                                # launch cost): no launch of a kernel, however fixed, takes less
GRAPH_SPEEDUP = 1.5             # eager time / graph-replay time above this: launch-bound
IDLE_COMPUTE = 0.05             # compute under this fraction of its roof: math is not the chain
STALL_SHARE = 0.35              # a stall reason with this share of all listed stalls is a cause
STALL_MINIMUM = 1.0             # ... and at least this many warps stalled per issued instruction
SPILL_SHARE = 0.01              # local-memory traffic above this share of L1 traffic: spills matter
PIPE_SATURATED = 90.0           # % busy: a math pipe (tensor, XU) this busy has no room for more
REGISTER_BLOCKED = 4.0          # FMA instructions per shared-memory load: operands live in
                                # registers
VECTOR_LOADED = 8.0             # ... under this with a register tile: operands loaded one by one
BANK_CONFLICT_SHARE = 0.25      # extra wavefronts per shared-memory wavefront: conflicts matter
COALESCED_SECTORS = 16          # sectors a warp's coalesced request moves at most (16-byte
                                # accesses: 512 bytes); more, and some of each sector is unused
L1_TRAFFIC_SHARE = 0.10         # L1 bytes under this share of L2's: its throughput % is not
                                # bandwidth (TMA/wgmma kernels), so L1 cannot bind
WAVEFRONT_BYTES = 128           # the most one shared-memory wavefront moves
TAIL_GAIN = 1.05                # whole waves / the waves run above this: the tail effect matters
LOW_OCCUPANCY = 50.0            # % resident warps the launch allows: under this, few hide latency
ISSUE_BUSY = 80.0               # % of cycles issuing: above this the issue slots are the limit
FMA_MINORITY = 0.5              # FFMA under this share of issued instructions: issue-bound work
FMA_SHARE_GOAL = 0.9            # FFMA share of issued instructions a tuned FP32 kernel reaches
THRESHOLDS = {
    "bound_at_fraction_of_roof": BOUND_THRESHOLD,
    "near_roof_fraction": NEAR_ROOF,
    "at_roof_fraction": AT_ROOF,
    "extra_traffic_below_fraction": EXTRA_TRAFFIC,
    "short_kernel_s": LAUNCH_COST_S,
    "graph_speedup": GRAPH_SPEEDUP,
    "idle_compute_fraction": IDLE_COMPUTE,
    "stall_share": STALL_SHARE,
    "stall_minimum": STALL_MINIMUM,
    "spill_share": SPILL_SHARE,
    "pipe_saturated_pct": PIPE_SATURATED,
    "register_blocked_fmas_per_shared_load": REGISTER_BLOCKED,
    "vector_loaded_fmas_per_shared_load": VECTOR_LOADED,
    "bank_conflict_share": BANK_CONFLICT_SHARE,
    "coalesced_sectors_per_request": COALESCED_SECTORS,
    "tail_gain": TAIL_GAIN,
    "low_occupancy_pct": LOW_OCCUPANCY,
    "issue_busy_pct": ISSUE_BUSY,
    "fma_minority": FMA_MINORITY,
    "fma_share_goal": FMA_SHARE_GOAL,
}

# Stall causes more resident warps would hide (the others want fewer instructions or a
# different access pattern, not more warps).
LATENCY_FLAGS = ("memory_latency_stalls", "dependency_stalls", "barrier_stalls")

# CUDA-core precision -> the tensor-core roof a kernel of that type could move to.
TENSOR_UPGRADE = {Precision.FP32: Precision.TF32_TENSOR, Precision.FP16: Precision.FP16_TENSOR,
                  Precision.FP64: Precision.FP64_TENSOR}
# 16-bit tensor precision -> fp8 tensor cores (Hopper and newer), where the accuracy allows.
FP8_UPGRADE = {Precision.FP16_TENSOR: Precision.FP8_TENSOR,
               Precision.BF16_TENSOR: Precision.FP8_TENSOR}


@dataclass(frozen=True)
class LaunchFacts:
    """What the launch and the GPU's other roofs tell without counters."""

    grid_blocks: int
    threads_per_block: int
    launches: int
    sms: int
    precision: str
    tensor_roof: float | None = None   # FLOP/s of the tensor roof this type could move to
    l2_roof: float | None = None       # calibrated L2 bytes/s: the roof when data lives in L2
    fp8_roof: float | None = None      # FLOP/s of fp8 tensor cores, for a 16-bit tensor type
    compute_capability: str = ""       # "9.0": Hopper's instructions (wgmma) are there
    # the launch's time as the program runs it, where the point's is one launch measured
    # apart (a profile's: cold caches, once): whether launching costs as much as running is
    # a question of the program's run, and a kernel near LAUNCH_COST_S measured once, cold,
    # flipped its top move on 3 % of noise (H200, 2026-12-01)
    run_time_s: float | None = None

    @classmethod
    def of(cls, sms: int, precision: str, *, grid_blocks: int = 0, threads_per_block: int = 0,
           launches: int = 1, tensor_roof: float | None = None, l2_roof: float | None = None,
           fp8_roof: float | None = None, compute_capability: str = "",
           run_time_s: float | None = None) -> LaunchFacts:
        """The facts of a kernel of ``precision`` on a GPU of ``sms`` SMs, as rooflint
        builds them (observation.analyse, upside.best_fraction, explain). A launch not given
        is one launch of a grid not known (0 blocks of 0 threads): a kernel typed in, or a
        program's kernel placed by its nearest roof. A roof or compute capability not given
        is not known; a run's time not given is the point's."""
        return cls(grid_blocks=grid_blocks, threads_per_block=threads_per_block,
                   launches=launches, sms=sms, precision=precision, tensor_roof=tensor_roof,
                   l2_roof=l2_roof, fp8_roof=fp8_roof, compute_capability=compute_capability,
                   run_time_s=run_time_s)


@dataclass
class Evidence:
    bound: Bound
    flags: dict[str, str] = field(default_factory=dict)   # name -> the numbers behind it
    values: dict[str, float] = field(default_factory=dict)  # for the catalog's expect texts

    def has(self, name: str) -> bool:
        return name in self.flags

    def set(self, name: str, detail: str) -> None:
        self.flags.setdefault(name, detail)


def pct(fraction: float) -> str:
    """A fraction of a roof as people read it: whole percents, except near the bound
    threshold, where rounding would show 0.596 as "60%" beside a not-bound verdict."""
    if abs(fraction - BOUND_THRESHOLD) < 0.005:
        return f"{100 * fraction:.1f}%"
    return f"{100 * fraction:.0f}%"


def classify(point: Point, l2_fraction: float = 0.0, l1_fraction: float = 0.0) -> Bound:
    """The book's diagnostic tree (5.10): memory roof first, then compute, else chain.

    The memory roof is the nearest of DRAM's, L2's (when the data lives in L2: a kernel
    that streams a 16 MiB working set many times is bandwidth-bound at 5 % of DRAM) and
    L1's (loads served from L1 and shared memory: a naive SGEMM at 1 % of DRAM). A kernel
    within AT_ROOF of its compute roof is compute-bound even where a memory level
    is as near its own (a cuBLAS GEMM at 85 % of the bf16 roof with L2 at 90 %): its data
    already moves as fast as its math needs, and no byte cut would make it faster."""
    if point.compute_fraction >= AT_ROOF:
        return Bound.COMPUTE
    memory = max(point.dram_fraction, l2_fraction, l1_fraction)
    if memory >= BOUND_THRESHOLD and memory >= point.compute_fraction:
        return Bound.BANDWIDTH
    if point.compute_fraction >= BOUND_THRESHOLD:
        return Bound.COMPUTE
    return Bound.CHAIN


def gather(point: Point, facts: LaunchFacts, counters: Counters | None = None,
           graph_time_s: float | None = None) -> Evidence:
    l2 = l2_fraction(point, facts, counters)
    l1 = l1_fraction(counters, facts.sms)
    bound = classify(point, l2 or 0.0, l1)
    e = Evidence(bound=bound, values={
        "dram_pct": 100 * point.dram_fraction, "compute_pct": 100 * point.compute_fraction,
        "dram_headroom": 1 / max(point.dram_fraction, 1e-9),
        # a kernel that counts no FLOPs (a fill, a copy) has no compute roof to approach
        **({"compute_headroom": 1 / point.compute_fraction} if point.compute_fraction > 0
           else {}),
        "traffic_gap": 1 / point.traffic_fraction if point.traffic_fraction else 0.0,
        # the nearest roof, memory levels included: no move up can gain more than its distance
        "roof_headroom": 1 / max(nearest_roof_fraction(point, l2, l1), 1e-9),
        "algorithmic_ai": point.algorithmic_ai, "sms": facts.sms,
    })
    e.values.update({f"{roof}_fraction": fraction for roof, fraction in (
        ("dram", point.dram_fraction), ("compute", point.compute_fraction),
        ("l2", l2 or 0.0), ("l1", l1))})
    e.values["launch_headroom"] = point.time_s / max(facts.launches, 1) / EMPTY_KERNEL_S
    _at_roof(e)
    if l2 is not None:
        e.values["l2_pct"] = 100 * l2
    if bound == Bound.BANDWIDTH and l2 is not None and l2 > point.dram_fraction and l2 >= l1:
        e.set("l2_bound", f"L2 at {pct(l2)} of its calibrated roof "
                          f"({format_rate(counters.l2_bytes / point.time_s, 'B/s')} of "
                          f"{format_rate(facts.l2_roof, 'B/s')}), DRAM at "
                          f"{pct(point.dram_fraction)}: the data lives in L2")
    if bound == Bound.BANDWIDTH and l1 > max(point.dram_fraction, l2 or 0.0):
        e.values["l1_pct"] = 100 * l1
        e.set("l1_bound", f"L1 at {pct(l1)} of its peak, DRAM at {pct(point.dram_fraction)}"
                          f"{f', L2 at {pct(l2)}' if l2 is not None else ''}: loads are "
                          f"served from L1 and shared memory, and L1 is the ceiling")
    e.set(f"{bound}_bound", f"DRAM at {pct(point.dram_fraction)}, compute at "
                            f"{pct(point.compute_fraction)} of their roofs")
    e.set("left_of_ridge" if point.limiting_roof == "dram" else "right_of_ridge",
          f"observed AI {point.observed_ai:.3g} FLOP/B, ridge {point.ridge:.3g}")
    if point.dram_fraction < NEAR_ROOF:
        e.set("dram_headroom", f"DRAM at {pct(point.dram_fraction)} of its roof")
    if point.compute_fraction < NEAR_ROOF:
        e.set("compute_headroom", f"compute at {pct(point.compute_fraction)} of its roof")
    if point.compute_fraction < IDLE_COMPUTE:
        e.set("idle_math", f"compute at {pct(point.compute_fraction)}")
    _traffic(e, point)
    _grid(e, facts, counters)
    _launch_cost(e, point, facts, graph_time_s)
    if facts.tensor_roof and facts.tensor_roof > 1.5 * point.achieved_flops:
        e.values["tensor_ratio"] = facts.tensor_roof / max(point.achieved_flops, 1.0)
        e.set("cuda_cores_with_tensor_roof",
              f"{facts.precision} on CUDA cores; the tensor roof is "
              f"{facts.tensor_roof / 1e12:.0f} TFLOP/s")
        if facts.precision == Precision.FP32:
            e.set("fp32_data", "FP32 data: its tensor cores take TF32 or narrower inputs")
    if facts.threads_per_block > 32:
        e.set("multi_warp_blocks", f"{facts.threads_per_block} threads per block")
    if facts.fp8_roof and facts.fp8_roof > 1.5 * point.achieved_flops:
        e.values["fp8_ratio"] = facts.fp8_roof / max(point.achieved_flops, 1.0)
        e.set("fp8_roof_above", f"fp8 tensor roof {facts.fp8_roof / 1e12:.0f} TFLOP/s")
    if counters:
        e.set("counted", "Nsight Compute counters")
        _stalls(e, counters)
        _pipes(e, counters, facts)
        _shared_memory(e, counters)
        _access_pattern(e, counters)
        _tail(e, counters, facts)
        _dependency_waits(e, counters)
        _issue(e, counters, point)
        if counters.local_bytes > SPILL_SHARE * max(counters.l1_bytes, 1.0):
            e.set("register_spills", f"{format_bytes(counters.local_bytes)} of local-memory "
                                     f"traffic, {counters.registers_per_thread} registers")
    return e


def nearest_roof_fraction(point: Point, l2_fraction: float | None, l1_fraction: float) -> float:
    """The fraction of its nearest roof a kernel reaches: DRAM's, L2's (when calibrated),
    L1's or compute's; 1 - this is how much of its time a perfect fix could save."""
    return max(point.dram_fraction, point.compute_fraction, l2_fraction or 0.0, l1_fraction)


AT_ROOF_FLAG = "at_roof"
ROOFS = ("dram", "compute", "l2", "l1")     # the roofs a move up may meet (values *_fraction)


def roof_reached(values: dict[str, float]) -> str | None:
    """The roof (ROOFS) a kernel runs at, AT_ROOF of it or nearer; None below every roof."""
    fractions = {roof: values.get(f"{roof}_fraction", 0.0) for roof in ROOFS}
    nearest = max(fractions, key=fractions.get)
    return nearest if fractions[nearest] >= AT_ROOF else None


def _at_roof(e: Evidence) -> None:
    """A kernel at its nearest roof: nothing moves it up there, only a higher roof, less
    work or fewer bytes through that roof's level (the flag the move catalogs read)."""
    roof = roof_reached(e.values)
    if roof:
        e.set(AT_ROOF_FLAG, f"{'compute' if roof == 'compute' else roof.upper()} at "
                            f"{pct(e.values[f'{roof}_fraction'])} of its roof "
                            f"(at it from {pct(AT_ROOF)})")


def speedup_cap(values: dict[str, float], cuts: tuple[str, ...] = ()) -> float | None:
    """The most a move up can make the kernel faster: the distance to the nearest roof
    whose traffic it does not cut (removing bank conflicts cuts L1's own work, so L1's
    roof does not cap it), and no more than to an empty launch's time (a one-warp kernel
    of 4 us that filled 132 SMs would not take 30 ns). None for evidence without the
    fractions (one built by hand)."""
    fractions = [values[f"{roof}_fraction"] for roof in ROOFS
                 if roof not in cuts and f"{roof}_fraction" in values]
    if not fractions:
        return None
    return max(1.0, min(1 / max(*fractions, 1e-9),
                        values.get("launch_headroom", float("inf"))))


def l1_fraction(counters: Counters | None, sms: int) -> float:
    """L1/shared-memory throughput as a fraction of the whole GPU's L1 peak (0 without
    counters). Nsight Compute's percentage is of the cycles the SMs it ran on were
    active, so a grid on fewer blocks than SMs counts for the share of SMs it occupied (a
    one-warp kernel of 4 us read 108 % on an H100 while it moved 60 MB/s: a chain of
    latencies, not a level at its roof), and no reading counts above the peak."""
    if not counters or not moved_through_l1(counters):
        return 0.0
    occupied = min(1.0, counters.grid_size / sms) if counters.grid_size and sms else 1.0
    return min(counters.l1_pct / 100, 1.0) * occupied


def moved_through_l1(counters: Counters) -> bool:
    """Whether L1 carried a share of the kernel's traffic worth a roof: its global and local
    bytes, and its shared-memory wavefronts (up to WAVEFRONT_BYTES each) unless the kernel
    issues wgmma, at least L1_TRAFFIC_SHARE of what L2 served. A TMA/wgmma kernel's
    operands go from L2 to shared memory by TMA and from there to the tensor cores, past
    L1's load path, and the tensor roof judges that path: Nsight Compute read 60-86 % L1
    throughput on cuBLAS nvjet GEMMs that moved 0 B to 2 KB through L1 (GPT-2 on an H100),
    and a memory level binds only on the bytes that crossed it. A kernel with no L2 count
    (a result from before L2 was read) is taken at its reading."""
    if not counters.l2_bytes:
        return True
    shared = 0.0 if counters.gmma_instructions else WAVEFRONT_BYTES * counters.shared_wavefronts
    return counters.l1_bytes + shared >= L1_TRAFFIC_SHARE * counters.l2_bytes


def l2_fraction(point: Point, facts: LaunchFacts, counters: Counters | None) -> float | None:
    """L2 traffic / the calibrated L2 roof, when both are known."""
    if not (counters and facts.l2_roof and counters.l2_bytes):
        return None
    return counters.l2_bytes / point.time_s / facts.l2_roof


def _traffic(e: Evidence, point: Point) -> None:
    if point.bytes_source == "model":
        e.set("bytes_modelled", "DRAM bytes from the manifest's model, not measured")
        return
    if not point.algorithmic_known:
        e.set("no_algorithmic_model", "no count of the compulsory bytes: how much of the "
                                      "traffic is avoidable is not known")
        return
    if not point.algorithmic_bytes:     # a model of 0 bytes gives no ratio to judge by
        e.set("no_algorithmic_model", "the model's compulsory bytes are 0: how much of the "
                                      "traffic is avoidable is not known")
        return
    if point.traffic_fraction < EXTRA_TRAFFIC:
        intensities = (f" (observed AI {point.observed_ai:.3g} vs algorithmic "
                       f"{point.algorithmic_ai:.3g})" if point.flops else "")
        e.set("extra_traffic", f"{1 / point.traffic_fraction:.1f}x the compulsory DRAM bytes"
                               f"{intensities}")
    elif point.traffic_fraction > SERVED_FROM_CACHE:
        e.set("cache_reuse", f"{point.traffic_fraction:.1f}x fewer DRAM bytes than compulsory: "
                             f"served from L2")
    else:
        e.set("compulsory_traffic", f"{pct(point.traffic_fraction)} of the DRAM bytes are "
                                    f"compulsory")


def _grid(e: Evidence, facts: LaunchFacts, counters: Counters | None) -> None:
    waves = counters.waves if counters else None
    under = waves < 1 if waves is not None else 0 < facts.grid_blocks < facts.sms
    blocks = counters.grid_size if counters else facts.grid_blocks
    if under:
        idle_sms = blocks < facts.sms
        # the warps the GPU could hold over those it has (ncu's waves), else the idle SMs:
        # 64 blocks of 8 warps filled 6 % of an H200's warps, and split 16 ways ran 13.2x
        # faster, where 132 SMs / 64 blocks said 2.1x
        e.values["grid_fill"] = 1 / waves if waves else facts.sms / max(blocks, 1)
        e.set("grid_under_one_wave",
              f"{blocks} blocks on {facts.sms} SMs: " + (
                  f"{facts.sms - blocks} SMs idle" if idle_sms else
                  f"{waves:.2g} of a full wave, the SMs run far below their resident-warp "
                  f"capacity"))
    elif blocks:
        e.values["waves"] = waves or blocks / facts.sms
        e.set("full_grid", f"{blocks} blocks" + (f", {waves:.3g} waves" if waves else "")
              + f" on {facts.sms} SMs")


def _launch_cost(e: Evidence, point: Point, facts: LaunchFacts, graph_time_s: float | None) -> None:
    if graph_time_s and point.time_s > GRAPH_SPEEDUP * graph_time_s:
        e.values["launch_speedup"] = point.time_s / graph_time_s
        e.set("launch_overhead", f"eager {format_time(point.time_s)} vs CUDA-graph replay "
                                 f"{format_time(graph_time_s)}")
    elif (run_s := facts.run_time_s or point.time_s) < LAUNCH_COST_S * facts.launches:
        e.set("launch_overhead", f"{format_time(run_s)} for {facts.launches} launch(es), "
                                 f"comparable to the cost of launching")


def _stalls(e: Evidence, counters: Counters) -> None:
    total = sum(counters.stalls.values())
    if not total:
        return
    ranked = sorted(counters.stalls.items(), key=lambda kv: kv[1], reverse=True)
    e.values["top_stall"] = ranked[0][1]
    e.flags["top_stall"] = f"{ranked[0][0]} ({ranked[0][1]:.1f} warps stalled per issue)"
    xu_busy = counters.xu_pipe_pct >= 100 * BOUND_THRESHOLD
    e.values["xu_pct"] = counters.xu_pipe_pct
    barrier = sum(counters.stalls.get(reason, 0.0) for reason in stalls_of("barrier_stalls"))
    if barrier >= STALL_MINIMUM:     # a cause or not: loads issued before it would overlap it
        e.set("barrier_waits", f"barrier stalls: {barrier:.1f} warps per issued instruction")
    for reason, value in ranked:
        if value >= STALL_MINIMUM and value >= STALL_SHARE * total:
            flag = STALL_FLAGS.get(reason, OTHER_STALL_FLAG)
            detail = (f"{reason} stalls: {value:.1f} warps per issued instruction, "
                      f"{pct(value / total)} of stalls")
            if xu_busy and flag == "shared_memory_stalls":   # the MIO queue, but for the XU
                flag = "special_function_stalls"
                detail += (f", with the special-function (XU) pipe at "
                           f"{counters.xu_pipe_pct:.0f}% of its peak")
            elif (flag == "shared_memory_stalls" and counters.instructions
                  and not (counters.shared_loads or counters.shared_stores)):
                # the MIO queue serves more than shared memory (special registers, branch
                # targets): a PyTorch fill at 96 % of DRAM's roof, no shared memory, was
                # told to register-block its shared-memory loads (a result recorded before
                # instructions were counted cannot tell, and keeps the old reading)
                flag = OTHER_STALL_FLAG
                detail += ", with no shared-memory instruction (the MIO queue's other work)"
            e.set(flag, detail)


def _dependency_waits(e: Evidence, counters: Counters) -> None:
    """What independent work per thread (ILP) saves where fixed-latency dependencies are a
    cause: their waits overlap, out of a warp's cycles per issued instruction (one issuing,
    the rest stalled), as the bank-conflict gain prices shared-memory waits; and no more
    than the idle issue slots allow (with many warps, one's waits are others' issues), less
    those a partial last wave idles (1.5 waves of FMA chains, 74 % busy, are 98 % busy in
    their whole waves: 1.36x of idle slots was the tail's, not the chains')."""
    if not e.has("dependency_stalls"):
        return
    waiting = sum(counters.stalls.values())
    dependent = sum(counters.stalls.get(reason, 0.0)
                    for reason in stalls_of("dependency_stalls"))
    overlapped = (1 + waiting) / max(1 + waiting - dependent, 1e-9)
    busy = counters.issue_active_pct * e.values.get("tail_gain", 1.0)
    idle_slots = 100 / min(busy, 100.0) if busy else overlapped
    e.values["ilp_gain"] = min(overlapped, idle_slots)


def _pipes(e: Evidence, counters: Counters, facts: LaunchFacts) -> None:
    """A saturated math pipe leaves no room for more parallelism; on Hopper, a saturated
    tensor pipe running mma.sync (HMMA) has a higher roof in wgmma (HGMMA)."""
    busiest = max(("tensor", counters.tensor_pipe_pct), ("special-function (XU)",
                  counters.xu_pipe_pct), key=lambda kv: kv[1])
    if busiest[1] >= PIPE_SATURATED:
        e.set("pipe_saturated", f"the {busiest[0]} pipe busy {busiest[1]:.0f}% of active cycles")
    if (counters.tensor_pipe_pct >= PIPE_SATURATED and counters.hmma_instructions
            and not counters.gmma_instructions and facts.compute_capability.startswith("9.")):
        e.set("mma_sync_on_hopper", f"{counters.hmma_instructions:.3g} mma.sync (HMMA) "
                                    f"instructions, no wgmma, tensor pipe busy "
                                    f"{counters.tensor_pipe_pct:.0f}%, on a "
                                    f"compute-capability-{facts.compute_capability} GPU")


def _shared_memory(e: Evidence, counters: Counters) -> None:
    """Whether operands already come from registers (many FMAs per shared-memory load),
    and whether a warp's shared-memory accesses collide in banks."""
    if counters.shared_loads:
        e.set("shared_memory_tiles", f"{counters.shared_loads:.3g} shared-memory load "
                                     f"instructions: data is already staged on chip")
        if e.has("l1_bound"):
            e.set("shared_memory_bound", f"L1 at {counters.l1_pct:.0f}% of its peak with "
                                         f"{counters.shared_loads:.3g} shared-memory loads: "
                                         f"the shared-memory traffic is the ceiling")
        # thread FLOPs -> warp FMA instructions
        fmas = counters.flops.get(Precision.FP32, 0.0) / 2 / 32
        per_load = fmas / counters.shared_loads
        if per_load >= REGISTER_BLOCKED:
            e.set("register_blocked", f"{per_load:.1f} FMA instructions per shared-memory "
                                      f"load: operands are already held in registers")
        if REGISTER_BLOCKED <= per_load < VECTOR_LOADED and counters.instructions:
            cut = 0.75 * counters.shared_loads / counters.instructions   # 4 loads become 1
            e.values["vector_load_gain"] = 1 / (1 - cut)
            e.set("scalar_shared_loads", f"{per_load:.1f} FMAs per shared-memory load "
                                         f"instruction with a register tile: its operands "
                                         f"come one 4-byte load each "
                                         f"({counters.shared_loads:.3g} loads, "
                                         f"{pct(counters.shared_loads / counters.instructions)} "
                                         f"of the instructions issued)")
    if counters.shared_wavefronts and counters.bank_conflicts:
        share = counters.bank_conflicts / counters.shared_wavefronts
        if share >= BANK_CONFLICT_SHARE:
            e.values["bank_conflict_ways"] = 1 / max(1 - share, 1e-9)
            e.values["bank_conflict_gain"] = conflict_gain(counters.stalls, share)
            e.set("bank_conflicts", f"{pct(share)} of shared-memory wavefronts are bank "
                                    f"conflicts ({counters.bank_conflicts:.3g} of "
                                    f"{counters.shared_wavefronts:.3g}){_conflict_sides(counters)}")


# The stalls a warp waits on shared memory in: its results (short scoreboard) and its
# queue (MIO throttle). Bank conflicts add wavefronts to both.
SHARED_MEMORY_STALLS = ("short_scoreboard", "mio_throttle")


def conflict_gain(stalls: dict[str, float] | None, share: float) -> float:
    """What removing the bank conflicts saves: the share of the shared-memory waits the
    conflicted wavefronts make, out of a warp's cycles per issued instruction (one issuing,
    the rest stalled). Not the wavefronts' ratio (1 / (1 - share)), which is the gain only
    when shared memory is all a warp waits on: an SGEMM tile with 38 % of its wavefronts
    conflicts was told 1.62x, and removing them bought 1.04x on an H200 (its warps waited
    on shared memory 0.77 of 2.73 stall cycles per issue); this model says 1.09x. Without
    stall samples, the wavefronts' ratio, an upper bound."""
    if not stalls:
        return 1 / max(1 - share, 1e-9)
    waiting = sum(stalls.values())
    shared = sum(stalls.get(reason, 0.0) for reason in SHARED_MEMORY_STALLS)
    return (1 + waiting) / max(1 + waiting - shared * share, 1e-9)


def _conflict_sides(counters: Counters) -> str:
    """Which side collides, as Nsight Compute's rule says it: wavefronts per instruction
    of the loads and of the stores (1 is conflict-free), where the counters split them."""
    if not counters.shared_stores:
        return ""
    loads = counters.shared_wavefronts - counters.shared_store_wavefronts
    sides = [f"{name} {wavefronts / instructions:.1f} wavefronts per instruction "
             f"({conflicts:.3g} conflicts)"
             for name, wavefronts, instructions, conflicts in (
                 ("loads", loads, counters.shared_loads,
                  counters.bank_conflicts - counters.store_bank_conflicts),
                 ("stores", counters.shared_store_wavefronts, counters.shared_stores,
                  counters.store_bank_conflicts)) if instructions]
    return ": " + ", ".join(sides)


def _access_pattern(e: Evidence, counters: Counters) -> None:
    """Global accesses that move more 32-byte sectors per warp request than a coalesced
    one needs (4 to 16, by the access's width): a warp's 4-byte stores 32 bytes apart move
    32, of which 4 bytes each are asked for. Without the access width (ncu reads it only by
    instrumenting the kernel) the unused share is taken at its least, 1 - 16 / sectors per
    request, and the gain at the share of L1's work, global sectors and shared-memory
    wavefronts together, those unused sectors make."""
    wasted, said = 0.0, []
    for name, sectors, requests in (("loads", counters.global_load_sectors,
                                     counters.global_load_requests),
                                    ("stores", counters.global_store_sectors,
                                     counters.global_store_requests)):
        per_request = sectors / requests if requests else 0.0
        if per_request > COALESCED_SECTORS:
            wasted += sectors * (1 - COALESCED_SECTORS / per_request)
            said.append(f"global {name} move {per_request:.1f} sectors of 32 bytes per warp "
                        f"request, where a coalesced one moves at most {COALESCED_SECTORS} "
                        f"({sectors:.3g} sectors)")
    if not said:
        return
    work = counters.global_load_sectors + counters.global_store_sectors + counters.shared_wavefronts
    e.values["coalescing_gain"] = 1 / max(1 - wasted / work, 1e-9)
    e.set("uncoalesced_access", "; ".join(said) + f": at least {pct(wasted / work)} of L1's "
                                                  f"sectors and wavefronts carry nothing asked for")


def _tail(e: Evidence, counters: Counters, facts: LaunchFacts) -> None:
    """A partial last wave: the SMs that finish the full waves wait for it, so the run
    takes whole waves. Nsight Compute's rule gives that wave's share of the run (up to
    1 / (full waves + 1)); what sizing the grid to whole waves can gain is whole / actual.
    That holds where a block's time is its SM's own (its math, its L1, a fixed chain), not
    where blocks share a DRAM or L2 roof or wait in a queue of loads: the blocks of a
    partial wave get the whole of those and finish sooner."""
    waves = counters.waves
    if not (waves and waves >= 1 and counters.grid_size):
        return
    if e.has("memory_latency_stalls") or (e.bound == Bound.BANDWIDTH and not e.has("l1_bound")):
        return      # a shared DRAM or L2, or a queue of loads: fewer blocks run faster
    whole = math.ceil(waves)
    gain = whole / waves
    if gain < TAIL_GAIN:
        return
    e.values["tail_gain"] = gain
    e.set("partial_wave", f"{counters.grid_size} blocks are {waves:.3g} waves of "
                          f"{counters.grid_size / waves:.0f} on {facts.sms} SMs: the last "
                          f"wave is {pct(waves - math.floor(waves))} full, and takes "
                          f"{pct(1 / whole)} of the run")


def _issue(e: Evidence, counters: Counters, point: Point) -> None:
    """The issue slots: busy and spent on other work than FMAs (address math, shared
    loads per FMA), or idle while few resident warps wait on latency. Both read only
    where the counters hold them (results before issue 24 do not)."""
    busy = counters.issue_active_pct
    if not busy or not counters.instructions:
        return
    e.values["issue_pct"] = busy
    # thread FLOPs -> warp FMA instructions
    fmas = counters.flops.get(Precision.FP32, 0.0) / 2 / 32
    share = fmas / counters.instructions
    if busy >= ISSUE_BUSY and fmas and share < FMA_MINORITY:
        e.values["fma_share_gain"] = FMA_SHARE_GOAL / share
        e.values["fma_share_pct"] = 100 * share
        e.values["fma_share_goal"] = FMA_SHARE_GOAL
        e.set("issue_bound", f"issue slots busy {busy:.0f}% of cycles; FFMA {pct(share)} "
                             f"of issued instructions")
    latency = [flag for flag in LATENCY_FLAGS if e.has(flag)]
    theoretical = counters.theoretical_occupancy_pct
    if theoretical and theoretical < LOW_OCCUPANCY and busy < ISSUE_BUSY and latency:
        e.values["issue_headroom"] = 100 / busy
        blocks = counters.blocks_per_sm
        e.set("occupancy_limited", f"{counters.occupancy_limiter or 'the launch'} allow "
                                   f"{blocks} block{'' if blocks == 1 else 's'} per SM: "
                                   f"{theoretical:.0f}% of the resident warps an SM holds, "
                                   f"and the issue slots idle {100 - busy:.0f}% of cycles "
                                   f"while warps wait ({', '.join(latency)})")

