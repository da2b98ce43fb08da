"""Verdicts: what limits a kernel, why, and which moves help (and which tempting ones don't).

The bound follows the kernel book's diagnostic tree (5.10, in evidence.classify). A
chain-bound verdict is refined into named causes from the evidence (the registry in
causes.py, in its order), each with the numbers that triggered it; the moves and the
ruled-out traps come from the catalog in moves.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from rooflint.analysis import moves as catalog
from rooflint.analysis.causes import CAUSES
from rooflint.analysis.evidence import (THRESHOLDS, Bound, BoundWord, Evidence, LaunchFacts,
                                       gather, pct)
from rooflint.analysis.counters import Counters
from rooflint.analysis.roofline import LEVELS, Point
from rooflint.common.sense import Amount, one_of
from rooflint.common.units import format_rate


@dataclass
class Cause:
    name: str
    detail: str    # the numbers that triggered it


@dataclass
class Move:
    id: str
    direction: str  # up | right | up+right | left | raise-the-roof
    action: str
    reason: str     # the evidence that selected it
    expect: str     # movement on the chart
    gain: Amount | None = None  # this many times faster, or at most (moves.gain)
    gain_from: str = ""         # what it rests on (moves.GainBasis): "evidence" an estimate,
    #                             "at_least", "up_to" bounds from its own numbers, "roof" the
    #                             nearest roof's distance
    gain_low: Amount | None = None    # the range printed for it: from ...
    gain_high: Amount | None = None   # ... to (None: no bound known)


@dataclass
class Verdict:
    bound: BoundWord
    summary: str
    level: Annotated[str, one_of(LEVELS)] | None = None   # binds a bandwidth-bound kernel
    causes: list[Cause] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    ruled_out: list[str] = field(default_factory=list)   # tempting moves that do not apply
    evidence: dict[str, str] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=lambda: dict(THRESHOLDS))


def diagnose(point: Point, facts: LaunchFacts, counters: Counters | None = None,
             graph_time_s: float | None = None) -> Verdict:
    evidence = gather(point, facts, counters, graph_time_s)
    bound = evidence.bound
    causes = _chain_causes(point, evidence) if bound == Bound.CHAIN else []
    selected, ruled_out = catalog.select(evidence)
    level = next((f for f in ("l1_bound", "l2_bound") if evidence.has(f)), None)
    summary = evidence.flags[level] if level else _summary(point, bound)
    binding = ((level.removesuffix("_bound") if level else "dram") if bound == Bound.BANDWIDTH
               else None)
    return Verdict(
        bound=bound, summary=summary, level=binding, causes=causes,
        moves=[Move(rule.id, rule.direction, rule.action, reason, expect, estimate.speedup,
                    str(estimate.basis) if estimate.speedup is not None else "",
                    estimate.low, estimate.high)
               for rule, reason, expect, estimate in selected],
        ruled_out=ruled_out, evidence=dict(evidence.flags))


def _summary(point: Point, bound: Bound) -> str:
    threshold = f"bound at >= {pct(THRESHOLDS['bound_at_fraction_of_roof'])}"
    if bound == Bound.BANDWIDTH:
        return (f"at {pct(point.dram_fraction)} of the DRAM roof "
                f"({format_rate(point.achieved_bandwidth, 'B/s')}; {threshold})")
    if bound == Bound.COMPUTE:
        return (f"at {pct(point.compute_fraction)} of the compute roof "
                f"({format_rate(point.achieved_flops, 'FLOP/s')}; {threshold})")
    return (f"at neither roof: DRAM {pct(point.dram_fraction)}, compute "
            f"{pct(point.compute_fraction)} ({threshold})")


def _chain_causes(point: Point, evidence: Evidence) -> list[Cause]:
    causes = [Cause(rule.cause, evidence.flags[rule.flag]) for rule in CAUSES
              if evidence.has(rule.flag)]
    if causes:
        return causes
    if evidence.has("idle_math") and evidence.has("left_of_ridge"):
        detail = (f"math idle and DRAM at {pct(point.dram_fraction)}: loads wait on memory "
                  f"latency, too few bytes in flight")
        if evidence.has("bytes_modelled"):
            detail += ("; or it moves more bytes than the model counts (uncoalesced sectors, "
                       "re-reads): measured bytes tell which")
        return [Cause("exposed_memory_latency", detail)]
    return [Cause("dependency_chain", f"DRAM {pct(point.dram_fraction)}, compute "
                                      f"{pct(point.compute_fraction)}, grid and launch cost "
                                      f"fine: the per-iteration chain, latency or "
                                      f"synchronisation sets the pace (counters name which)")]
