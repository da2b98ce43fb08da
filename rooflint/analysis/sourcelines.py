"""The source lines behind a move: per-line counters from the opt-in source pass.

``rooflint run --source`` profiles each variant once more with Nsight Compute's source
counters (warp-state samples and memory counters per SASS instruction, which ncu adds up
per line of the CUDA source it was built from, with line information). Each line keeps
four measures, and a move names the one that supports it (its ``lines`` in the move
catalog): excessive L2 sectors for an uncoalesced access, bank conflicts for a
shared-memory tile, the samples stalled at a barrier for a move that takes a barrier off
the path (ncu samples the instruction a warp waits to issue, so the line is the barrier's
or, often, the first after it: the tutorial SGEMM's barrier samples fall on the shared
loads that follow `__syncthreads()`), stall samples for everything else. Under the move, the
report prints the lines with the largest share of that measure, with their text:

    stream.cu:36  91% of excessive L2 sectors  if (i < n) out[i] = x[(i % m) * stride + i / m];

Lines land in the kernel's own file. Code inlined from a header (cuda_pipeline.h's
``__pipeline_memcpy_async``, a user's own .cuh) is listed by ncu under the header's line,
and under the caller's line only for some of its instructions, those it knows the inline
chain of. Each instruction is counted once, at a line of the file most of the kernel's
instructions come from: its own line there, else the caller's line of the nearest earlier
instruction of the same inlined code (ncu's chain), else of the nearest earlier instruction
of that file; the header line is kept as the line's detail.

Pure data and arithmetic: the readers of ncu's reports are in measure/.
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
    "barrier_samples": "of barrier stall samples",
}
KEPT_PER_MEASURE = 5    # lines a result keeps for each measure
SHOWN = 2               # lines printed under a move
INLINED_SHARE = 0.05    # samples outside the kernel's own file above this share: inlined
                        # code worth placing at its caller's line


@dataclass
class SourceLine:
    file: str           # as the line information names it (the user's .cu, or a header)
    line: int
    text: str
    stall_samples: float = 0.0
    excessive_sectors: float = 0.0
    bank_conflicts: float = 0.0
    barrier_samples: float = 0.0    # stall samples waiting at a barrier (at it, or just after)
    inlined: str = ""   # the header line most of its inlined samples were written on


Place = tuple[str, int]     # a source file and a line in it


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction of a launch: its address, every line ncu lists it under (the
    line it was written on and, where ncu knows the inline chain, the lines it was inlined
    into), and its per-instruction measures."""

    address: int
    places: tuple[Place, ...]
    measures: dict[str, float]


def own_file(instructions: list[Instruction]) -> str | None:
    """The file most of the kernel's instructions come from: the one its entry is in."""
    counts: dict[str, int] = {}
    for instruction in instructions:
        for file in {file for file, _ in instruction.places}:
            counts[file] = counts.get(file, 0) + 1
    return max(counts, key=counts.get) if counts else None


def inlined_share(instructions: list[Instruction]) -> float:
    """The share of stall samples on instructions listed under no line of the own file:
    inlined code whose caller only a chain (or a guess) can name."""
    own = own_file(instructions)
    total = sum(i.measures.get("stall_samples", 0.0) for i in instructions)
    outside = sum(i.measures.get("stall_samples", 0.0) for i in instructions
                  if all(file != own for file, _ in i.places))
    return outside / total if total else 0.0


def lines_of(instructions: list[Instruction], texts: dict[Place, str]) -> list[SourceLine]:
    """A launch's lines of its own file from its instructions alone (each listed under
    one line, as ncu_report's source_info places it), ``texts`` holding each line's text."""
    own = own_file(instructions)
    rows: dict[Place, SourceLine] = {}
    for instruction in instructions:
        place = _own_place(instruction, own)
        if place is not None:
            line = rows.setdefault(place, SourceLine(place[0], place[1], texts.get(place, "")))
            _add(line, instruction.measures)
    return with_inlined_code(list(rows.values()), instructions, texts)


def with_inlined_code(rows: list[SourceLine], instructions: list[Instruction],
                      texts: dict[Place, str]) -> list[SourceLine]:
    """The own file's line rows, with the measures of each instruction listed under no own
    line added to its caller's line (module doc), and that line's detail naming the header
    line most of them were written on. Where no file stands out, the rows as they are."""
    own = own_file(instructions)
    if own is None:
        return rows
    lines = {(row.file, row.line): row for row in rows if row.file == own}
    ordered = sorted(instructions, key=lambda i: i.address)
    headers: dict[Place, dict[Place, float]] = {}
    for at, instruction in enumerate(ordered):
        if _own_place(instruction, own) is not None:
            continue
        place = _caller(ordered, at, own)
        if place is None:
            continue
        line = lines.setdefault(place, SourceLine(place[0], place[1], texts.get(place, "")))
        _add(line, instruction.measures)
        header = headers.setdefault(place, {})
        header[instruction.places[0]] = (header.get(instruction.places[0], 0.0)
                                         + instruction.measures.get("stall_samples", 0.0))
    for place, samples in headers.items():
        file, number = max(samples, key=samples.get)
        lines[place].inlined = f"{PurePath(file).name}:{number}"
    return [lines[place] for place in sorted(lines)]


def _add(line: SourceLine, measures: dict[str, float]) -> None:
    for measure, value in measures.items():
        setattr(line, measure, getattr(line, measure) + value)


def _own_place(instruction: Instruction, own: str | None) -> Place | None:
    return next((place for place in instruction.places if place[0] == own), None)


def _caller(ordered: list[Instruction], at: int, own: str | None) -> Place | None:
    """The own-file line an instruction outside the own file was inlined into: that of
    the nearest earlier instruction whose chain holds one of its lines, else of the
    nearest earlier own-file instruction."""
    places = set(ordered[at].places)
    earlier = ordered[at - 1::-1] if at else []
    chained = next((i for i in earlier if places & set(i.places) and _own_place(i, own)), None)
    nearest = chained or next((i for i in earlier if _own_place(i, own)), None)
    return _own_place(nearest, own) if nearest else None


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
            merged[key] = SourceLine(line.file, line.line, line.text, inlined=line.inlined)
        merged[key].inlined = merged[key].inlined or line.inlined
        for measure in MEASURES:
            setattr(merged[key], measure, getattr(merged[key], measure) + getattr(line, measure))
    totals = {m: sum(getattr(line, m) for line in merged.values()) for m in MEASURES}
    kept = {key for m in MEASURES for key in _leaders(merged, m)}
    return SourceProfile([line for key, line in merged.items() if key in kept], totals)


def _leaders(lines: dict[tuple[str, int], SourceLine], measure: str) -> list[tuple[str, int]]:
    ranked = sorted((key for key, line in lines.items() if getattr(line, measure) > 0),
                    key=lambda key: -getattr(lines[key], measure))
    return ranked[:KEPT_PER_MEASURE]


def top_stall_line(profile: SourceProfile) -> str:
    """The text of the line with the most stall samples and the header inlined into it
    ("" without lines)."""
    ranked = sorted(profile.lines, key=lambda line: -line.stall_samples)
    if not ranked or not ranked[0].stall_samples:
        return ""
    return f"{ranked[0].text} {ranked[0].inlined}".strip()


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
            + (f"  (inlined from {line.inlined})" if line.inlined else "")
            for line in ranked[:count]]
