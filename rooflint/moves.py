"""The move catalog, as data: what to try next, when it applies, and where the dot should go.

Each move names its direction on the roofline (``up``: more FLOP/s at the same intensity;
``right``: fewer bytes for the same FLOPs; ``raise-the-roof``: a faster unit), the
evidence flags that must all be present (``requires``), of which at least one must be
present (``any_of``) and which must be absent (``excludes``), and the movement to expect.
Its printed reason is the numbers behind the flags that selected it.

The book's traps (5.14) are data too: each says why a tempting move does not apply here,
and is printed beside the moves whenever its flags hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from rooflint.evidence import Evidence


@dataclass(frozen=True)
class MoveRule:
    id: str
    direction: str                  # up | right | up+right | raise-the-roof
    action: str
    expect: str                     # formatted with Evidence.values
    requires: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()

    def applies(self, evidence: Evidence) -> bool:
        return (all(evidence.has(f) for f in self.requires)
                and (not self.any_of or any(evidence.has(f) for f in self.any_of))
                and not any(evidence.has(f) for f in self.excludes))

    def triggers(self, evidence: Evidence) -> list[str]:
        return [f for f in (*self.requires, *self.any_of) if evidence.has(f)]


@dataclass(frozen=True)
class Trap:
    id: str
    text: str                       # formatted with Evidence.values and flag details
    requires: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()

    def holds(self, evidence: Evidence) -> bool:
        return (all(evidence.has(f) for f in self.requires)
                and not any(evidence.has(f) for f in self.excludes))


CATALOG: tuple[MoveRule, ...] = (
    MoveRule("launch_amortise", "up", "amortise launches: CUDA graphs, or fuse with the "
             "neighbouring kernels", "up, same AI: toward the graph-replay time",
             requires=("launch_overhead",)),
    MoveRule("fill_the_gpu", "up", "more parallelism: more blocks or warps, or split the "
             "reduction across blocks or warps (split-K), so every SM has enough resident "
             "warps", "up, same AI: up to {grid_fill:.1f}x from the warps the GPU could hold",
             requires=("grid_under_one_wave",)),
    MoveRule("fix_spills", "up", "remove register spills: fewer live values, register arrays "
             "indexed only with constants, __launch_bounds__", "up, and right: local-memory "
             "traffic leaves the caches", requires=("register_spills",)),
    MoveRule("cut_redundant_traffic", "right", "make each byte cross DRAM once: coalesce "
             "accesses, tile for reuse, fuse", "right toward the algorithmic AI "
             "({algorithmic_ai:.3g} FLOP/B): up to {traffic_gap:.1f}x less time",
             requires=("bandwidth_bound", "extra_traffic")),
    MoveRule("tile_for_reuse", "up+right", "tile for reuse: shared-memory and register tiles "
             "so each loaded value feeds many FMAs (fewer memory instructions, fewer DRAM bytes)",
             "up and right toward the algorithmic AI ({algorithmic_ai:.3g} FLOP/B)",
             requires=("chain_bound", "extra_traffic"),
             any_of=("lsu_queue_stalls", "memory_latency_stalls")),
    MoveRule("register_blocking", "up", "register-block: each thread computes several "
             "outputs from register-held operands, fewer shared-memory loads per FMA",
             "up toward the compute roof ({compute_headroom:.1f}x away)",
             requires=("shared_memory_stalls", "right_of_ridge")),
    MoveRule("fewer_bytes_per_element", "right", "fewer bytes per element: lower precision "
             "or quantize, or fuse with the kernel that produces or consumes the data",
             "right along the DRAM roof: time falls in proportion to the bytes cut",
             requires=("bandwidth_bound",), excludes=("extra_traffic", "l2_bound")),
    MoveRule("reuse_on_chip", "up", "keep reused data on chip: share each loaded value "
             "across the threads or heads that need it (registers, shared memory), or fewer "
             "bytes per element, so fewer bytes cross from L2 to the SMs",
             "up at the same DRAM AI: L2 ({l2_pct:.0f}% of its roof) is the ceiling, not DRAM",
             requires=("l2_bound",)),
    MoveRule("sync_off_the_path", "up", "take the barrier off the per-iteration path: one "
             "sync instead of two (double-buffer the reduction scratch), or single-warp "
             "blocks with warp shuffles instead of __syncthreads",
             "up, same AI: the chain loses a barrier per iteration",
             requires=("chain_bound", "barrier_stalls")),
    MoveRule("fewer_fences", "up", "fewer memory fences: __threadfence, volatile accesses "
             "and ordered atomics only where the algorithm needs the ordering; batch the work "
             "between them", "up, same AI: the chain loses a fence per iteration",
             requires=("chain_bound", "fence_stalls")),
    MoveRule("hoist_loads", "up", "prefetch: issue the next loads before the barrier, so "
             "memory latency overlaps the synchronisation", "up, same AI",
             requires=("chain_bound", "barrier_stalls", "memory_latency_stalls")),
    MoveRule("vectorize_loads", "up", "vectorize: 16-byte loads, so a quarter of the memory "
             "instructions carry the same bytes", "up, same AI",
             requires=("lsu_queue_stalls",), excludes=("extra_traffic",)),
    MoveRule("bytes_in_flight", "up", "more bytes in flight: 16-byte loads, several "
             "independent loads per thread, enough resident warps",
             "up along the same AI toward the DRAM roof ({dram_headroom:.1f}x away)",
             requires=("left_of_ridge", "dram_headroom"),
             any_of=("memory_latency_stalls", "bandwidth_bound", "idle_math"),
             excludes=("grid_under_one_wave", "launch_overhead", "barrier_stalls", "l2_bound")),
    MoveRule("more_ilp", "up", "more independent work per thread: several accumulators, "
             "unrolled loops (ILP), fewer dependent steps per iteration",
             "up toward the compute roof ({compute_headroom:.1f}x away)",
             any_of=("dependency_stalls", "math_pipe_stalls")),
    MoveRule("fewer_special_functions", "up", "fewer special-function instructions: fold "
             "constants into one exp2 (log2(e) into the scale), reuse results, or evaluate "
             "some with FMA polynomials, so the FMA pipe takes the work",
             "up: the XU pipe ({xu_pct:.0f}% busy) is the ceiling, not the FMA roof",
             requires=("special_function_stalls",)),
    MoveRule("tensor_cores", "raise-the-roof", "use tensor cores (MMA) for the arithmetic",
             "a higher roof: up to {tensor_ratio:.1f}x the FLOP/s, if the precision allows",
             requires=("compute_bound", "cuda_cores_with_tensor_roof")),
    MoveRule("compute_efficiency", "up", "more FMAs in flight: larger register tiles, fewer "
             "non-math instructions, no bank conflicts",
             "up toward the compute roof ({compute_headroom:.1f}x away)",
             requires=("compute_bound", "compute_headroom")),
    MoveRule("shorten_the_chain", "up", "shorten the chain: fewer dependent steps, barriers "
             "or long-latency operations per iteration",
             "up, same AI: the nearest roof is {roof_headroom:.1f}x away",
             requires=("chain_bound",),
             excludes=("grid_under_one_wave", "launch_overhead", "barrier_stalls",
                       "fence_stalls", "lsu_queue_stalls", "shared_memory_stalls", "dependency_stalls",
                       "math_pipe_stalls", "special_function_stalls", "register_spills",
                       "memory_latency_stalls", "idle_math")),
)

TRAPS: tuple[Trap, ...] = (
    Trap("not_fewer_bytes", "not fewer bytes (quantize, compress, fuse for traffic): DRAM "
         "runs at {dram_pct:.0f}% of its roof, so the bytes are not the limit (the book's "
         "INT8-KV trap: half the bytes, same time)", excludes=("bandwidth_bound",)),
    Trap("not_fewer_dram_bytes", "not fewer DRAM bytes (fusion or cache blocking for DRAM "
         "traffic): DRAM runs at {dram_pct:.0f}% of its roof; the data already lives in L2",
         requires=("l2_bound",)),
    Trap("not_more_sms", "not split-K / more SMs: the grid already fills the GPU "
         "({waves:.3g} waves) and every SM would keep the same chain (the book's v4 trap)",
         requires=("chain_bound", "full_grid")),
    Trap("not_async_copy", "not cp.async / more asynchronous loads: memory waits are not the "
         "top stall ({top_stall_detail}), so an extra shared-memory hop only lengthens the "
         "chain (the book's v5 trap)",
         requires=("chain_bound", "counted"), excludes=("memory_latency_stalls",)),
    Trap("not_more_flops", "not more FLOP/s (tensor cores, ILP): the math units are at "
         "{compute_pct:.0f}% of their roof", requires=("bandwidth_bound",)),
)


def _format(template: str, evidence: Evidence) -> str:
    values = {**evidence.values, "top_stall_detail": evidence.flags.get("top_stall", "")}
    try:
        return template.format(**values)
    except (KeyError, ValueError):
        return template.split("(")[0].strip()


def select(evidence: Evidence) -> tuple[list[tuple[MoveRule, str, str]], list[str]]:
    """The applicable moves as (rule, reason, expect) and the traps' texts, in catalog order."""
    moves = [(rule, "; ".join(evidence.flags[f] for f in rule.triggers(evidence)),
              _format(rule.expect, evidence))
             for rule in CATALOG if rule.applies(evidence)]
    traps = [_format(trap.text, evidence) for trap in TRAPS if trap.holds(evidence)]
    return moves, traps
