"""Whether a move's predicted gain comes true (issue 48): pairs of variants where the second
differs from the first by one named move of the catalog (analysis/moves.py), scored on a
measured result. A pair's prediction is the gain the first variant's verdict gives the move
that was made; what it realised is the first variant's median time over the second's. A
trap is a pair whose move should not help: it is ruled out when the first verdict does not
offer the move.

The score of a set of pairs is what the issue's targets read: the median and the 90th
percentile of |log(predicted / realised)| over the pairs whose move's gain is an estimate
from its own evidence (a bound, "up to" or "at least", is a range, not an estimate), how
many pairs realised a gain inside the range printed for the move, how many pairs' top move
is the move made, and how many traps were ruled out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median

from rooflint.analysis.moves import GainBasis
from rooflint.formats.results import VariantResult


@dataclass(frozen=True)
class Pair:
    """Two variants of one family in one result, the second the first plus ``move``."""

    name: str
    family: str
    before: str
    after: str
    move: str                    # the catalog's move id
    trap: bool = False           # a move that should not help


@dataclass(frozen=True)
class PairScore:
    """A pair's prediction against what it realised."""

    pair: str
    move: str
    trap: bool
    offered: bool                # the first verdict offers the move made
    rank: int | None             # its place among the first verdict's moves (1: the top)
    top_move: str | None         # the first verdict's top move
    predicted: float | None      # the move's gain in the first verdict (None: no estimate)
    basis: str | None            # what the gain rests on (moves.GainBasis)
    low: float | None            # the range printed for it
    high: float | None
    realised: float              # the first variant's median time over the second's

    @property
    def inside(self) -> bool:
        """The speed-up realised falls in the range printed for the move: above its low
        end (1 for "up to": faster at all; an estimate's band may start below 1, as
        printed), at most its high end where it has one. A verdict of an older rooflint,
        without a range, had "up to" its gain."""
        if self.predicted is None:
            return False
        low = self.low if self.low is not None else 1.0
        high = self.high if self.low is not None else self.predicted
        return low < self.realised and (high is None or self.realised <= high)

    @property
    def error(self) -> float | None:
        """|log(predicted / realised)|; None without a prediction."""
        if self.predicted is None or self.predicted <= 0 or self.realised <= 0:
            return None
        return abs(math.log(self.predicted / self.realised))


@dataclass(frozen=True)
class Scoreboard:
    """A set of pairs' scores and what the targets read of them."""

    pairs: list[PairScore]
    median_error: float | None   # over the pairs whose move's gain is an estimate
    p90_error: float | None
    estimates: int               # those pairs
    top_is_move: int             # pairs (not traps) whose top move is the move made
    inside: int                  # pairs (not traps) that realised a gain in its printed range
    moves: int                   # pairs that are not traps
    traps_ruled_out: int
    traps: int


def score_pair(pair: Pair, before: VariantResult, after: VariantResult) -> PairScore:
    """One pair scored on its two variants' medians and the first one's verdict."""
    moves = before.verdict.moves if before.verdict else []
    ids = [m.id for m in moves]
    made = next((m for m in moves if m.id == pair.move), None)
    return PairScore(
        pair=pair.name, move=pair.move, trap=pair.trap, offered=made is not None,
        rank=ids.index(pair.move) + 1 if made else None, top_move=ids[0] if ids else None,
        predicted=made.gain if made else None, basis=made.gain_from or None if made else None,
        low=made.gain_low if made else None, high=made.gain_high if made else None,
        realised=before.time.median_s / after.time.median_s)


def scoreboard(scores: list[PairScore]) -> Scoreboard:
    """The targets' figures over ``scores``."""
    errors = sorted(e for s in scores if not s.trap and s.basis == GainBasis.ESTIMATE
                    for e in [s.error] if e is not None)
    moves = [s for s in scores if not s.trap]
    traps = [s for s in scores if s.trap]
    return Scoreboard(
        pairs=scores, median_error=median(errors) if errors else None,
        p90_error=percentile(errors, 0.9) if errors else None, estimates=len(errors),
        top_is_move=sum(s.top_move == s.move for s in moves),
        inside=sum(s.inside for s in moves), moves=len(moves),
        traps_ruled_out=sum(not s.offered for s in traps), traps=len(traps))


def percentile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, by linear interpolation between ranks."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
