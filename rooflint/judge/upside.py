"""What fixing a profiled kernel could save, and when nothing is worth fixing.

A profiled kernel's upside is the time its best move could save, by the same arithmetic
that ranks the moves (moves.gain): total time x (1 - 1 / the move's estimated speed-up),
the nearest roof's distance where the move has no estimate. A kernel whose best move could
save no more than 1 - NEAR_ROOF of its time, or one at AT_ROOF of its nearest roof with no
evidence of waste, is done. `rooflint profile` (engine/program.py) ranks a program's
kernels by it, and the tables say which are done.
"""

from __future__ import annotations

from rooflint.analysis import caller_moves as library_moves
from rooflint.analysis.ceilings import bandwidth
from rooflint.analysis.counters import Counters
from rooflint.analysis.diagnose import Move, Verdict
from rooflint.analysis.evidence import (AT_ROOF, NEAR_ROOF, LaunchFacts, l1_fraction,
                                       l2_fraction, nearest_roof_fraction)
from rooflint.analysis.moves import OWN_EVIDENCE, keeps_precision
from rooflint.formats.results import VariantResult


def best_fraction(point, counters: Counters | None, calibration, precision: str,
                  sms: int) -> float | None:
    """evidence.nearest_roof_fraction of a profiled kernel, its L2 roof the calibrated one."""
    if point is None:
        return None
    facts = LaunchFacts.of(sms, precision, l2_roof=bandwidth(calibration, "l2"))
    return nearest_roof_fraction(point, l2_fraction(point, facts, counters),
                                 l1_fraction(counters, sms))


def upside(total_s: float, verdict: Verdict | None, best: float | None) -> float | None:
    """The time the kernel's best move at its precision could save: total x (1 - 1/gain),
    with the speed-up the move ranking estimated for it; the nearest roof's distance
    (gain 1/best) where that move has none. A move that trades precision (fp8) is not
    counted: the kernel is judged as written."""
    if verdict is None or best is None:
        return None
    move = best_move(verdict)
    gain = move.gain if move and move.gain else 1 / max(best, 1e-9)
    return total_s * max(0.0, 1 - 1 / gain)


def best_move(verdict: Verdict) -> Move | None:
    """The first kernel-level move that keeps the kernel's precision (the moves are ranked
    by gain; a caller's move has no estimate of its own)."""
    return next((m for m in verdict.moves
                 if keeps_precision(m.id) and m.gain_from != library_moves.CALLER), None)


def is_done(v: VariantResult) -> bool:
    """Nothing worth fixing: its best move could save no more than 1 - NEAR_ROOF of its
    time, or it is at AT_ROOF of its nearest roof (compute, or any memory level) and no
    evidence of its own (wasted bytes, idle SMs...) promises more than that roof's distance."""
    if not (v.share and v.share.upside_s is not None and v.verdict):
        return False
    move = best_move(v.verdict)
    wasteful = move is not None and move.gain_from in OWN_EVIDENCE
    at_roof = (v.share.best_fraction or 0.0) >= AT_ROOF and not wasteful
    return at_roof or v.share.upside_s <= (1 - NEAR_ROOF) * v.share.total_s


def by_upside(variants: list[VariantResult]) -> list[VariantResult]:
    """The application view's order: the most time a fix could save first."""
    return sorted(variants, key=lambda v: -(v.share.upside_s or 0.0) if v.share else 0.0)
