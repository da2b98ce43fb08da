"""The cause registry: every reason a kernel below both roofs can be given, in one table.

A row names the evidence flag, the Nsight Compute warp-stall reasons that set it (none
for causes found from the launch or the timing), the cause a chain-bound verdict prints,
and the moves that act on it. Its place in the table is its priority: a verdict lists its
causes in this order. Everything else is derived from it: the stall metrics a run reads
(measure/ncu.py), the stall -> flag map (evidence.py), a verdict's causes (diagnose.py)
and, in the moves catalog, which causes enable a move and which rule out the generic one.

Stall reasons are Nsight Compute's "warps stalled per issue" ratios: ``barrier`` is
``__syncthreads``, ``membar`` a memory fence, ``long_scoreboard`` waiting on global or
local memory, ``wait`` a fixed-latency dependency, ``lg_throttle`` a full global-memory
instruction queue, ``mio_throttle``/``short_scoreboard`` shared memory (or, when the XU
pipe is busy, the special-function unit, whose instructions queue in the same MIO),
``math_pipe_throttle`` a busy math pipe.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CauseRule:
    flag: str                        # the evidence flag that holds when the cause does
    cause: str                       # its name in a verdict
    enables: tuple[str, ...]         # moves that act on it (ids in moves.CATALOG)
    stalls: tuple[str, ...] = ()     # ncu stall reasons that set the flag


CAUSES: tuple[CauseRule, ...] = (
    CauseRule("grid_under_one_wave", "grid_under_one_wave", ("fill_the_gpu",)),
    CauseRule("launch_overhead", "launch_overhead", ("launch_amortise",)),
    CauseRule("barrier_stalls", "synchronization", ("sync_off_the_path", "hoist_loads"),
              stalls=("barrier",)),
    CauseRule("fence_stalls", "memory_fences", ("fewer_fences",), stalls=("membar",)),
    CauseRule("memory_latency_stalls", "exposed_memory_latency",
              ("bytes_in_flight", "tile_for_reuse"), stalls=("long_scoreboard",)),
    CauseRule("dependency_stalls", "dependency_chain", ("more_ilp",), stalls=("wait",)),
    CauseRule("lsu_queue_stalls", "memory_instruction_queue",
              ("vectorize_loads", "tile_for_reuse"), stalls=("lg_throttle",)),
    CauseRule("shared_memory_stalls", "shared_memory_pipe",
              ("register_blocking", "warp_tiling", "bank_conflicts_off"),
              stalls=("mio_throttle", "short_scoreboard")),
    CauseRule("math_pipe_stalls", "math_pipe", ("more_ilp",), stalls=("math_pipe_throttle",)),
    # the MIO queue's stalls, when the special-function pipe is the busy one (evidence.py)
    CauseRule("special_function_stalls", "math_pipe", ("fewer_special_functions",)),
    CauseRule("register_spills", "register_spills", ("fix_spills",)),
    # found from the counters of how accesses and launches use the hardware, not from
    # a stall reason: Nsight Compute's access-pattern, bank-conflict, tail-effect,
    # occupancy and issue-slot rules, each with the gain its evidence allows (evidence.py)
    CauseRule("bank_conflicts", "shared_memory_bank_conflicts", ("bank_conflicts_off",)),
    CauseRule("uncoalesced_access", "uncoalesced_global_access", ("coalesce_global",)),
    CauseRule("partial_wave", "tail_effect", ("whole_waves",)),
    CauseRule("occupancy_limited", "few_resident_warps", ("more_resident_warps",)),
    CauseRule("issue_bound", "issue_slots", ("more_fmas_per_instruction",)),
    # any stall reason no row names (a newer Nsight Compute, a hand-edited result): the
    # chain's generic move, which moves.select gives when nothing more specific applies
    CauseRule("other_stalls", "other_stall_reason", ("shorten_the_chain",)),
)

OTHER_STALL_FLAG = "other_stalls"
STALL_REASONS: tuple[str, ...] = tuple(s for rule in CAUSES for s in rule.stalls)
STALL_FLAGS: dict[str, str] = {s: rule.flag for rule in CAUSES for s in rule.stalls}
CAUSE_FLAGS: tuple[str, ...] = tuple(rule.flag for rule in CAUSES)


def enabling_flags(move: str) -> tuple[str, ...]:
    """The cause flags any one of which lets ``move`` apply (none: no cause needed)."""
    return tuple(rule.flag for rule in CAUSES if move in rule.enables)


def stalls_of(flag: str) -> tuple[str, ...]:
    """The stall reasons that set ``flag``."""
    return next((rule.stalls for rule in CAUSES if rule.flag == flag), ())
