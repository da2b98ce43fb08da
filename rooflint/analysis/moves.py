"""The move catalog, as data: what to try next, when it applies, and where the dot should go.

Each move names its direction on the roofline (``up``: more FLOP/s at the same intensity;
``right``: fewer bytes for the same FLOPs; ``raise-the-roof``: a faster unit), the
evidence flags that must all be present (``requires``), of which at least one must be
present (``any_of``) and which must be absent (``excludes``), and the movement to expect.
The causes that enable a move come from the cause registry (causes.py): a move some cause
enables needs one of them. Its printed reason is the numbers behind the flags that
selected it. A kernel for which no move applies gets its bound's fallback (FALLBACK):
every verdict has a move.

The book's traps (5.14) are data too: each says why a tempting move does not apply here,
and is printed beside the moves whenever its flags hold.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rooflint.analysis.causes import enabling_flags
from rooflint.analysis.evidence import Bound, Evidence, roof_reached, speedup_cap
from rooflint.common.sense import Vocabulary


class GainBasis(Vocabulary):
    """What a move's gain rests on, and so the range printed for it (Gain)."""

    ESTIMATE = "evidence"       # its own numbers predict the speed-up: ESTIMATE_SPREAD either side
    AT_LEAST = "at_least"       # its own numbers give the least it saves; the roof the most
    UP_TO = "up_to"             # its own numbers give the most it could save
    ROOF = "roof"               # only the nearest roof's distance: the most


OWN_EVIDENCE = (GainBasis.ESTIMATE, GainBasis.AT_LEAST, GainBasis.UP_TO)


@dataclass(frozen=True)
class MoveRule:
    id: str
    direction: str                  # up | right | up+right | left | raise-the-roof
    action: str
    expect: str                     # formatted with Evidence.values
    requires: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    gain: str = ""                  # Evidence.values key of its own speed-up estimate
    basis: GainBasis = GainBasis.ESTIMATE   # what that value is: an estimate or a bound
    changes_precision: bool = False  # trades accuracy for speed: says so; never a best move
    #                                  that must keep the precision (upside.best_move)
    lines: str = "stall_samples"    # the per-line measure that finds the code it changes
    #                                 (sourcelines.MEASURES; run --source)
    cuts: tuple[str, ...] = ()      # memory levels whose own traffic it cuts: their roofs
    #                                 do not cap its gain (evidence.speedup_cap)

    @property
    def either(self) -> tuple[str, ...]:
        """Flags of which one must hold: the catalog's, and the causes that enable it."""
        return (*self.any_of, *enabling_flags(self.id))

    def applies(self, evidence: Evidence) -> bool:
        return (all(evidence.has(f) for f in self.requires)
                and (not self.either or any(evidence.has(f) for f in self.either))
                and not any(evidence.has(f) for f in self.excludes))

    def triggers(self, evidence: Evidence) -> list[str]:
        """The flags present that select it, each once (a cause's flag may also be one the
        move requires)."""
        return list(dict.fromkeys(f for f in (*self.requires, *self.either) if evidence.has(f)))


@dataclass(frozen=True)
class Trap:
    id: str
    text: str                       # formatted with Evidence.values and flag details
    requires: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    rules_out: tuple[str, ...] = ()  # the moves (this catalog's, the callers') it says
    #                                  do not apply: never offered while it is printed
    refuted_by: str = ""            # a pattern that, found in the line with the most stall
    #                                 samples (its text or the header inlined into it), shows
    #                                 the kernel already does what the trap warns against

    def holds(self, evidence: Evidence) -> bool:
        return (all(evidence.has(f) for f in self.requires)
                and not any(evidence.has(f) for f in self.excludes))

    @property
    def head(self) -> str:
        """The trap's printed words before its numbers: how a verdict's text is known."""
        return self.text.split(":")[0]


def ruled_out(evidence: Evidence) -> set[str]:
    """The moves the traps that hold say do not apply."""
    return {move for trap in TRAPS if trap.holds(evidence) for move in trap.rules_out}


CATALOG: tuple[MoveRule, ...] = (
    MoveRule("launch_amortise", "up", "amortise launches: CUDA graphs, or fuse with the "
             "neighbouring kernels", "up, same AI: toward the graph-replay time",
             gain="launch_speedup"),
    MoveRule("fill_the_gpu", "up", "more parallelism: more blocks or warps, or split the "
             "reduction across blocks or warps (split-K), so every SM has enough resident "
             "warps", "up, same AI: up to {grid_fill:.1f}x from the warps the GPU could hold",
             requires=("chain_bound",), excludes=("pipe_saturated",),
             gain="grid_fill", basis=GainBasis.UP_TO),
    MoveRule("fix_spills", "up", "remove register spills: fewer live values, register arrays "
             "indexed only with constants, __launch_bounds__", "up, and right: local-memory "
             "traffic leaves L1, L2 and DRAM", cuts=("l1", "l2", "dram")),
    MoveRule("cut_redundant_traffic", "right", "make each byte cross DRAM once: coalesce "
             "accesses, tile for reuse, fuse", "right toward the algorithmic AI "
             "({algorithmic_ai:.3g} FLOP/B): {traffic_gap:.1f}x fewer DRAM bytes",
             requires=("bandwidth_bound", "extra_traffic"), excludes=("l1_bound", "l2_bound"),
             gain="traffic_gap", lines="excessive_sectors"),
    MoveRule("cut_l1_traffic", "up", "cut L1 traffic per FLOP: make each warp's loads "
             "contiguous (one 128-byte line per request) and stage the values it reuses in "
             "shared memory or registers", "up at the same DRAM AI: L1 ({l1_pct:.0f}% of its "
             "peak) is the ceiling", requires=("l1_bound",), excludes=("shared_memory_tiles",),
             lines="excessive_sectors", cuts=("l1",)),
    MoveRule("tile_for_reuse", "up+right", "tile for reuse: shared-memory and register tiles "
             "so each loaded value feeds many FMAs (fewer memory instructions, fewer DRAM bytes)",
             "up and right toward the algorithmic AI ({algorithmic_ai:.3g} FLOP/B)",
             requires=("chain_bound", "extra_traffic")),
    MoveRule("register_blocking", "up", "register-block: each thread computes several "
             "outputs from register-held operands, fewer shared-memory loads per FMA",
             "up toward the compute roof ({compute_headroom:.1f}x away)",
             any_of=("shared_memory_bound",), excludes=("register_blocked",), cuts=("l1",)),
    MoveRule("bank_conflicts_off", "up", "remove shared-memory bank conflicts: pad each tile "
             "row by one element or swizzle the index, so a warp's 32 accesses fall in 32 "
             "banks", "up, same AI: {bank_conflict_ways:.1f} shared-memory wavefronts per "
             "request become one: {bank_conflict_gain:.2f}x from the waits they make",
             requires=("bank_conflicts",), gain="bank_conflict_gain", lines="bank_conflicts",
             cuts=("l1",)),
    MoveRule("vectorize_shared_loads", "up", "read the shared tiles as 16-byte vectors "
             "(LDS.128): lay each thread's operands out contiguously, four to a load, so one "
             "instruction brings what four did", "up, same AI: {vector_load_gain:.2f}x from "
             "the instructions cut, more where they idled the issue slots",
             requires=("scalar_shared_loads",), gain="vector_load_gain", cuts=("l1",)),
    MoveRule("warp_tiling", "up", "warp tiling: give each warp a 2-D tile of outputs and each "
             "thread a few fragments of it, so shared-memory loads are broadcast or "
             "conflict-free and more independent FMAs are in flight",
             "up toward the compute roof ({compute_headroom:.1f}x away)",
             requires=("register_blocked",), any_of=("shared_memory_bound",),
             excludes=("bank_conflicts",), cuts=("l1",)),
    MoveRule("fewer_bytes_per_element", "right", "fewer bytes per element: lower precision "
             "or quantize, or fuse with the kernel that produces or consumes the data",
             "right along the DRAM roof: time falls in proportion to the bytes cut",
             requires=("bandwidth_bound",), excludes=("extra_traffic", "l2_bound", "l1_bound")),
    MoveRule("reuse_on_chip", "up", "keep reused data on chip: share each loaded value "
             "across the threads or heads that need it (registers, shared memory), or fewer "
             "bytes per element, so fewer bytes cross from L2 to the SMs",
             "up at the same DRAM AI: L2 ({l2_pct:.0f}% of its roof) is the ceiling, not DRAM",
             requires=("l2_bound",), cuts=("l2",)),
    MoveRule("sync_off_the_path", "up", "take the barrier off the per-iteration path: one "
             "sync instead of two (double-buffer the reduction scratch), or single-warp "
             "blocks with warp shuffles instead of __syncthreads",
             "up, same AI: the chain loses a barrier per iteration", requires=("chain_bound",),
             lines="barrier_samples"),
    MoveRule("fewer_fences", "up", "fewer memory fences: __threadfence, volatile accesses "
             "and ordered atomics only where the algorithm needs the ordering; batch the work "
             "between them", "up, same AI: the chain loses a fence per iteration",
             requires=("chain_bound",)),
    MoveRule("vectorize_loads", "up", "vectorize: 16-byte loads, so a quarter of the memory "
             "instructions carry the same bytes", "up, same AI", excludes=("extra_traffic",),
             cuts=("l1",)),
    MoveRule("bytes_in_flight", "up", "more bytes in flight: 16-byte loads, several "
             "independent loads per thread, enough resident warps",
             "up along the same AI toward the DRAM roof ({dram_headroom:.1f}x away)",
             requires=("left_of_ridge", "dram_headroom"), any_of=("bandwidth_bound", "idle_math"),
             excludes=("launch_overhead", "barrier_stalls", "l2_bound", "l1_bound")),
    MoveRule("hoist_loads", "up", "prefetch: issue the next loads before the barrier, so "
             "memory latency overlaps the synchronisation", "up, same AI",
             requires=("chain_bound", "memory_latency_stalls"), any_of=("barrier_waits",),
             lines="barrier_samples"),
    MoveRule("more_ilp", "up", "more independent work per thread: several accumulators, "
             "unrolled loops (ILP), fewer dependent steps per iteration",
             "up toward the compute roof: {ilp_gain:.2f}x when the dependency waits overlap",
             excludes=("bandwidth_bound", "pipe_saturated"), gain="ilp_gain"),
    MoveRule("fewer_special_functions", "up", "fewer special-function instructions: fold "
             "constants into one exp2 (log2(e) into the scale), reuse results, or evaluate "
             "some with FMA polynomials, so the FMA pipe takes the work",
             "up: the XU pipe ({xu_pct:.0f}% busy) is the ceiling, not the FMA roof"),
    MoveRule("warpgroup_mma", "raise-the-roof", "use warpgroup MMA (wgmma, Hopper's "
             "asynchronous tensor-core instructions, as cuBLAS and CUTLASS 3 do) instead of "
             "mma.sync: the tensor pipe is saturated by instructions that cannot reach its roof",
             "a higher roof: toward the tensor roof ({compute_headroom:.1f}x away) at the "
             "same AI", requires=("mma_sync_on_hopper",), gain="compute_headroom"),
    MoveRule("tensor_cores", "raise-the-roof", "use tensor cores (MMA) for the arithmetic",
             "a higher roof: up to {tensor_ratio:.1f}x the FLOP/s, if the precision allows",
             requires=("compute_bound", "cuda_cores_with_tensor_roof"),
             excludes=("fp32_data",), gain="tensor_ratio", basis=GainBasis.UP_TO),
    MoveRule("tf32_tensor_cores", "raise-the-roof", "use tensor cores with TF32 inputs "
             "(10-bit mantissa: relative error near 1e-3 against FP32's 1e-7, FP32 "
             "accumulation) or BF16 where the data allows", "a higher roof: up to "
             "{tensor_ratio:.1f}x the FLOP/s, traded for the precision",
             requires=("compute_bound", "cuda_cores_with_tensor_roof", "fp32_data"),
             gain="tensor_ratio", basis=GainBasis.UP_TO, changes_precision=True),
    MoveRule("coalesce_global", "up", "coalesce the global accesses: consecutive threads on "
             "consecutive words (a thread's contiguous words as one 16-byte access), or stage "
             "the tile through shared memory and write it out row by row",
             "up, same AI: {coalescing_gain:.2f}x from the L1 sectors no thread asked for",
             gain="coalescing_gain", basis=GainBasis.AT_LEAST, lines="excessive_sectors",
             cuts=("l1", "l2")),
    MoveRule("whole_waves", "up", "size the grid to whole waves: a tile size that makes the "
             "block count a multiple of the blocks that run at once, or a persistent kernel "
             "looping over tiles", "up, same AI: {tail_gain:.2f}x when no "
             "SM waits for the last wave", gain="tail_gain"),
    MoveRule("more_resident_warps", "up", "more resident warps to hide the latency: fewer "
             "registers per thread (__launch_bounds__ with a minimum of blocks per SM, a "
             "smaller register tile) or less shared memory per block",
             "up, same AI: up to {issue_headroom:.2f}x if the idle issue slots fill",
             gain="issue_headroom", basis=GainBasis.UP_TO),
    MoveRule("more_fmas_per_instruction", "up", "more FMAs per issued instruction: a larger "
             "register tile per thread, 16-byte shared-memory loads (LDS.128), address "
             "arithmetic hoisted out of the inner loop", "up: up to {fma_share_gain:.2f}x "
             "with FFMA at {fma_share_goal:.0%} of the issue slots instead of "
             "{fma_share_pct:.0f}%", gain="fma_share_gain", basis=GainBasis.UP_TO),
    MoveRule("fp8_tensor_cores", "raise-the-roof", "fp8 tensor cores (e4m3 inputs, fp32 "
             "accumulation, per-tensor or per-block scales) where the accuracy allows",
             "a higher roof: up to {fp8_ratio:.1f}x the FLOP/s, and half the operand bytes",
             requires=("compute_bound", "fp8_roof_above"),
             gain="fp8_ratio", basis=GainBasis.UP_TO, changes_precision=True),
    MoveRule("fewer_l1_wavefronts", "up", "fewer L1 wavefronts per FLOP: 16-byte loads and "
             "stores (LDG/LDS/STS.128), each value loaded once into registers and reused, "
             "shared-memory tiles read without bank conflicts",
             "up at the same DRAM AI: L1 ({l1_pct:.0f}% of its peak) is the ceiling",
             requires=("l1_bound",), cuts=("l1",)),
    MoveRule("compute_efficiency", "up", "more FMAs in flight: larger register tiles, fewer "
             "non-math instructions, no bank conflicts",
             "up toward the compute roof ({compute_headroom:.1f}x away)",
             requires=("compute_bound", "compute_headroom"), excludes=("pipe_saturated",)),
    MoveRule("shorten_the_chain", "up", "shorten the chain: fewer dependent steps, barriers "
             "or long-latency operations per iteration",
             "up, same AI: the nearest roof is {roof_headroom:.1f}x away",
             requires=("chain_bound",)),
    MoveRule("fewer_flops", "left", "do less arithmetic: skip work whose result is known "
             "(zeros, masked elements), reuse partial results, a cheaper algorithm",
             "the time falls with the FLOPs cut, at the same FLOP/s",
             requires=("compute_bound",)),
)
_RULES = {rule.id: rule for rule in CATALOG}


def rule_for(move_id: str) -> MoveRule | None:
    """The catalog's rule behind a verdict's move (None for a move that a result file from
    another version of rooflint names)."""
    return _RULES.get(move_id)


def keeps_precision(move_id: str) -> bool:
    """The move keeps the kernel's precision (an unknown move is taken to)."""
    rule = rule_for(move_id)
    return rule is None or not rule.changes_precision


# The move a verdict gets when no other applies, so every verdict has one, by its bound
# and, for a bandwidth bound, the memory level that binds (a fallback that spoke of the
# DRAM roof for an L1-bound tile would name a roof 30x away); all but the DRAM one are
# only ever that (beside a more specific move they would say nothing).
FALLBACK = {Bound.CHAIN: "shorten_the_chain", Bound.COMPUTE: "fewer_flops",
            Bound.BANDWIDTH: "fewer_bytes_per_element", "l2": "reuse_on_chip",
            "l1": "fewer_l1_wavefronts"}
FALLBACK_ONLY = ("shorten_the_chain", "fewer_flops", "fewer_l1_wavefronts")


def fallback(evidence: Evidence) -> str:
    """The bound's (for a memory bound, the binding level's) move of last resort."""
    level = next((level for level in ("l1", "l2") if evidence.has(f"{level}_bound")), None)
    return FALLBACK[level if evidence.bound == Bound.BANDWIDTH and level else evidence.bound]

# The moves that cut the bytes a kernel moves per element it computes (not fusion's).
BYTE_CUTS = ("fewer_bytes_per_element", "cut_redundant_traffic")

TRAPS: tuple[Trap, ...] = (
    # Fewer bytes per element in the same kernel, not fusion: fusing a kernel into its
    # neighbours removes its launch and its intermediate's round trip, whatever fraction of
    # DRAM it runs at (the roofline article: a horizontal gap is not about saturation).
    Trap("not_fewer_bytes", "not fewer bytes per element (quantize, compress): DRAM runs "
         "at {dram_pct:.0f}% of its roof, so the bytes are not the limit (the book's "
         "INT8-KV trap: half the bytes, same time)", excludes=("bandwidth_bound",),
         rules_out=(*BYTE_CUTS, "optimizer_state_bytes")),
    Trap("not_fewer_dram_bytes", "not fewer DRAM bytes per element (quantization, cache "
         "blocking for DRAM traffic): DRAM runs at {dram_pct:.0f}% of its roof; the data "
         "already lives in L2", requires=("l2_bound",), rules_out=BYTE_CUTS),
    Trap("not_fewer_dram_bytes_l1", "not fewer DRAM bytes per element (quantization, cache "
         "blocking): DRAM runs at {dram_pct:.0f}% of its roof; the loads are served from "
         "L1, which is the ceiling", requires=("l1_bound",), rules_out=BYTE_CUTS),
    Trap("not_more_sms", "not split-K / more SMs: the grid already fills the GPU "
         "({waves:.3g} waves) and every SM would keep the same chain (the book's v4 trap)",
         requires=("chain_bound", "full_grid"),
         rules_out=("fill_the_gpu", "larger_batch", "split_reduction")),
    Trap("not_async_copy", "not cp.async / more asynchronous loads: memory waits are not the "
         "top stall ({top_stall_detail}), so an extra shared-memory hop only lengthens the "
         "chain (the book's v5 trap)",
         requires=("chain_bound", "counted"), excludes=("memory_latency_stalls",),
         rules_out=("hoist_loads",),
         refuted_by=r"cp\.async|cp_async|memcpy_async|cuda_pipeline|cuda/pipeline"),
    Trap("not_more_flops", "not more FLOP/s (tensor cores, ILP): the math units are at "
         "{compute_pct:.0f}% of their roof", requires=("bandwidth_bound",),
         rules_out=("tensor_cores", "tf32_tensor_cores", "fp8_tensor_cores", "warpgroup_mma",
                    "compute_efficiency", "more_ilp", "gemm_fp8", "conv_fp8")),
)


def refuted_traps(top_stall_line: str) -> tuple[str, ...]:
    """The heads of the traps the kernel's top stall line refutes: a double-buffered kernel
    with 71 % of its stall samples on cuda::memcpy_async was told "not cp.async (the book's
    v5 trap)", about the copies it already makes."""
    return tuple(trap.head for trap in TRAPS
                 if trap.refuted_by and re.search(trap.refuted_by, top_stall_line))


def _format(template: str, evidence: Evidence, capped: dict[str, float] | None = None) -> str:
    """``template`` filled from the evidence; ``capped`` replaces values the move's gain was
    capped from, so no text promises more than the gain the ranking uses."""
    values = {**evidence.values, "top_stall_detail": evidence.flags.get("top_stall", ""),
              **(capped or {})}
    try:
        return template.format(**values)
    except (KeyError, ValueError):
        return template.split("(")[0].strip()


WORTHWHILE_GAIN = 1.2   # an expected speed-up under this ranks after the roof-bounded moves
# How far either side of an estimate the speed-up it predicts may land: the band printed
# around it. Set from the one-move pairs (benchmarks/moves.py): on an H200, 9 of the 10
# estimates realised within 1.5x of it (the tenth, a padded tile, 0.74x of 1.14x).
ESTIMATE_SPREAD = 1.5


@dataclass(frozen=True)
class Gain:
    """How much faster a move could make the kernel: its value and the range printed for it,
    by what it rests on (GainBasis). From its own evidence (the grid it could fill, the
    bytes it could cut, the faster roof it could reach), capped by the roof it would then
    meet; else, for a move up, the nearest roof's distance; else (a move right or left
    without a count of what it cuts) unknown."""

    speedup: float | None
    basis: GainBasis = GainBasis.ROOF
    low: float | None = None        # the range printed: from ...
    high: float | None = None       # ... to (None: no bound known)

    @property
    def from_evidence(self) -> bool:
        return self.basis in OWN_EVIDENCE and self.speedup is not None

    @property
    def expected(self) -> float:
        """What the move is expected to buy, to rank by: an estimate or a least saving as
        itself; a bound, its range's geometric middle (an 8x tensor roof is not an 8x
        promise)."""
        if self.speedup is None:
            return 0.0
        if self.basis in (GainBasis.UP_TO, GainBasis.ROOF):
            return math.sqrt(max(self.speedup, 1.0))
        return self.speedup


def gain(rule: MoveRule, evidence: Evidence) -> Gain:
    own = evidence.values.get(rule.gain) if rule.gain else None
    cap = _cap(rule, evidence)
    if own is not None:
        value = min(own, cap) if cap else own
        return Gain(value, rule.basis, *_range(value, rule.basis, cap))
    if rule.direction == "up" and cap is not None:
        return Gain(cap, GainBasis.ROOF, 1.0, cap)
    return Gain(None)


def _range(value: float, basis: GainBasis, cap: float | None) -> tuple[float, float | None]:
    """The range printed for a gain of ``value`` on ``basis``, no higher than ``cap``."""
    if basis == GainBasis.ESTIMATE:
        high = value * ESTIMATE_SPREAD
        return value / ESTIMATE_SPREAD, min(high, cap) if cap else high
    if basis == GainBasis.AT_LEAST:
        return value, cap if cap and cap > value else None
    return 1.0, value


def held_by_roof(rule: MoveRule, evidence: Evidence) -> bool:
    """A move up for a kernel at its roof, unless it cuts that roof's own traffic: a GEMM
    at 102 % of its compute roof has nowhere up to go; a tile at 98 % of L1's peak still
    gains from fewer L1 wavefronts."""
    roof = roof_reached(evidence.values)
    return rule.direction == "up" and roof is not None and roof not in rule.cuts


def _cap(rule: MoveRule, evidence: Evidence) -> float | None:
    """What caps a move's gain, by its direction: a move up meets the nearest roof whose
    traffic it does not cut (evidence.speedup_cap), a move right or up-and-right the compute
    roof; a move to a higher roof is measured against that roof already (its own estimate),
    and a move left cuts the work itself."""
    if rule.direction == "up":
        return speedup_cap(evidence.values, rule.cuts)
    if rule.direction in ("right", "up+right"):
        return evidence.values.get("compute_headroom")
    return None


def _expect(rule: MoveRule, evidence: Evidence, estimate: Gain) -> str:
    """The move's expectation, its own estimate shown as capped (a GEMM at 83 % of its
    roof is told 1.2x, not the 7.6x its idle issue slots would give)."""
    capped = ({rule.gain: estimate.speedup}
              if rule.gain and estimate.from_evidence and estimate.speedup is not None else {})
    return _format(rule.expect, evidence, capped)


def _rank(estimate: Gain) -> tuple:
    """Moves whose own evidence promises a worthwhile gain first, the largest expected
    gain first, whether or not they trade precision (a GEMM at 81 % of its FP32 roof is
    told TF32 before 1.2x more FMAs in flight; the move says the trade); then those bounded
    only by the roof or with no estimate, in catalog (cause) order; then those whose
    evidence promises little."""
    promising = estimate.from_evidence and estimate.expected >= WORTHWHILE_GAIN
    tier = 0 if promising else 2 if estimate.from_evidence else 1
    return tier, -estimate.expected if tier == 0 else 0.0


MIN_TOP_GAIN = 1.05   # a move worth less is never the top one while a larger one exists


def worth_topping(rules: list[MoveRule], estimates: dict[str, Gain]) -> list[MoveRule]:
    """The ranked rules with those whose own evidence promises under MIN_TOP_GAIN moved
    after the rest, where a move that promises more (by its evidence or its roof) is among
    the rest: a kernel at 60 % of its FP32 roof had a 1.01x coalescing nit for its top move,
    because its 8x TF32 move trades precision."""
    def small(rule: MoveRule) -> bool:
        estimate = estimates[rule.id]
        return estimate.from_evidence and (estimate.speedup or 0.0) < MIN_TOP_GAIN
    larger = [r for r in rules if not small(r) and (estimates[r.id].speedup or 0.0)
              >= MIN_TOP_GAIN]
    if not rules or not small(rules[0]) or not larger:
        return rules
    return [r for r in rules if not small(r)] + [r for r in rules if small(r)]


LAUNCH_MOVE = "launch_amortise"


def launch_moves_only(rules: list[MoveRule]) -> list[MoveRule]:
    """A kernel whose time is its launch gets the launch's move alone: a one-warp kernel of
    4 us was told "more parallelism, up to 132x" beside it, where launching it is what
    takes the time (its gain is capped at an empty launch's time, evidence.speedup_cap)."""
    launch = [rule for rule in rules if rule.id == LAUNCH_MOVE]
    return launch or rules


def select(evidence: Evidence) -> tuple[list[tuple[MoveRule, str, str, Gain]], list[str]]:
    """The applicable moves as (rule, reason, expect, gain), ranked; the bound's fallback
    move when none applies; and the traps' texts."""
    rules = [rule for rule in CATALOG if rule.id not in FALLBACK_ONLY
             and rule.applies(evidence) and not held_by_roof(rule, evidence)
             and rule.id not in ruled_out(evidence)]
    rules = launch_moves_only(rules)
    if not rules:
        rules = [rule for rule in CATALOG if rule.id == fallback(evidence)]
    estimates = {rule.id: gain(rule, evidence) for rule in rules}
    rules.sort(key=lambda rule: _rank(estimates[rule.id]))
    rules = worth_topping(rules, estimates)
    moves = [(rule, "; ".join(evidence.flags[f] for f in rule.triggers(evidence)),
              _expect(rule, evidence, estimates[rule.id]), estimates[rule.id])
             for rule in rules]
    traps = [_format(trap.text, evidence) for trap in TRAPS if trap.holds(evidence)]
    return moves, traps
