"""The source lines behind a move: per-line counters from the opt-in source pass.

``rooflint run --source`` profiles each variant once more with Nsight Compute's source
counters (warp-state samples and memory counters per SASS instruction, which ncu adds up
per line of the CUDA source it was built from, with line information). Each line keeps
three measures, and a move names the one that supports it (its ``lines`` in the move
catalog): excessive L2 sectors for an uncoalesced access, bank conflicts for a
shared-memory tile, stall samples for everything else. Under the move, the report prints
the lines with the largest share of that measure, with their text:

    stream.cu:36  91% of excessive L2 sectors  if (i < n) out[i] = x[(i % m) * stride + i / m];

Pure data and arithmetic: the parser of ncu's source page is in measure/ncu.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath

# Measure -> how its share reads ("41% of stall samples").
MEASURES = {
    "stall_samples": "of stall samples",
    "excessive_sectors": "of excessive L2 sectors",
    "bank_conflicts": "of shared-memory bank conflicts",
}
KEPT_PER_MEASURE = 5    # lines a result keeps for each measure
SHOWN = 2               # lines printed under a move


@dataclass
class SourceLine:
    file: str           # as the line information names it (the user's .cu, or a header)
    line: int
    text: str
    stall_samples: float = 0.0
    excessive_sectors: float = 0.0
    bank_conflicts: float = 0.0


@dataclass
class SourceProfile:
    """A variant's lines that lead some measure, and each measure's total over all lines
    (the base of a line's share)."""

    lines: list[SourceLine]
    totals: dict[str, float] = field(default_factory=dict)


def profile_of(lines: Iterable[SourceLine]) -> SourceProfile:
    """Sum the lines of all of a variant's launches by file and line; keep the leaders of
    each measure and every measure's total."""
    merged: dict[tuple[str, int], SourceLine] = {}
    for line in lines:
        key = (line.file, line.line)
        if key not in merged:
            merged[key] = SourceLine(line.file, line.line, line.text)
        for measure in MEASURES:
            setattr(merged[key], measure, getattr(merged[key], measure) + getattr(line, measure))
    totals = {m: sum(getattr(line, m) for line in merged.values()) for m in MEASURES}
    kept = {key for m in MEASURES for key in _leaders(merged, m)}
    return SourceProfile([line for key, line in merged.items() if key in kept], totals)


def _leaders(lines: dict[tuple[str, int], SourceLine], measure: str) -> list[tuple[str, int]]:
    ranked = sorted((key for key, line in lines.items() if getattr(line, measure) > 0),
                    key=lambda key: -getattr(lines[key], measure))
    return ranked[:KEPT_PER_MEASURE]


def supporting(profile: SourceProfile, measure: str, count: int = SHOWN) -> list[str]:
    """The lines that lead ``measure`` (stall samples where the kernel has none of it), as
    ``file:line  share  text``."""
    if not profile.totals.get(measure):
        measure = "stall_samples"
    total = profile.totals.get(measure) or 0.0
    if not total:
        return []
    ranked = sorted((line for line in profile.lines if getattr(line, measure) > 0),
                    key=lambda line: -getattr(line, measure))
    return [f"{PurePath(line.file).name}:{line.line}  "
            f"{getattr(line, measure) / total:.0%} {MEASURES[measure]}  {line.text.strip()}"
            for line in ranked[:count]]
