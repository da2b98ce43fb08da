"""What the rotation engine writes (measure/rotation_engine.cpp: CUPTI's range profiler,
one pass of the counter configuration a training step), read back.

Its ranges file holds, after ``#`` lines (the SM's limits, the L2's size and the clocks
in kHz as the driver gives them: ``# sm registers=65536 threads=2048 blocks=32
shared=233472 reserved=1024 sms=132 l2=62914560 clock=1980000 memclock=3201000``; the
recordings of 2026-11-30 have none, or the limits alone), a header line and a line a
range: the range's index, its name and each counter. With no kernels chosen, CUPTI makes
a range of every kernel launch while the profiler runs, and the engine launches an L2
flush kernel before each of the program's launches, so the ranges come in pairs, the
flush's first; with kernels chosen, a range around the first launch of each in a pass,
named by the launch's place in it. Its launches file holds a line a launch of each pass:
the pass, the name (demangled; mangled in the probe's recordings of 2026-11-30), grid and
block (``x,y,z``), the dynamic shared memory. Every pass must have launched the same
kernels in the same order: a pass's counters are only another part of the same launches'
if it did.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field

from rooflint.analysis.occupancy import SmLimits
from rooflint.common.errors import RooflintError

SM_LINE = "# sm "
SM_FIELDS = {"registers": "registers", "threads": "threads", "blocks": "blocks",
             "shared": "shared_bytes", "reserved": "reserved_shared_bytes"}
# The device's attributes on the same line, by the names Nsight Compute gives them
# (device__attribute_<name>).
DEVICE_FIELDS = {"l2": "l2_cache_size", "clock": "clock_rate", "memclock": "memory_clock_rate"}
RANGES_A_LAUNCH = 2             # the flush kernel's, then the launch's


class UnreadableRotation(RooflintError):
    """The engine's files cannot be read as one step's launches and their counters."""


@dataclass(frozen=True)
class RotationLaunch:
    """A launch of the program's step as the engine saw it."""

    name: str                   # as the C++ runtime demangles it
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int


@dataclass(frozen=True)
class RotationRecords:
    """One step's launches, in launch order, and the counters of those measured by their
    places, taken over ``passes`` steps; the GPU's SM limits and SM count where the ranges
    file gives them, and its L2 size and clocks."""

    launches: list[RotationLaunch]
    counters: dict[int, dict[str, float]]
    passes: int
    sm: SmLimits | None = None
    sms: int | None = None
    device: dict[str, int] = field(default_factory=dict)   # DEVICE_FIELDS' the driver gave


def read_rotation(ranges: str, launches: str, chosen: bool = False) -> RotationRecords:
    """The engine's two files' text as records, of every launch or, kernels ``chosen``, of
    the launches ranged; UnreadableRotation says what does not fit."""
    passes = _passes(launches)
    first = passes[0]
    for number, other in enumerate(passes[1:], start=2):
        if other != first:
            raise UnreadableRotation(_differs(number, other, first))
    named = _counters(ranges)
    sm, sms = _sm(ranges)
    device = _device(ranges)
    if chosen:
        return RotationRecords(first, _chosen_counters(named, len(first)), len(passes), sm, sms,
                               device)
    if len(named) != RANGES_A_LAUNCH * len(first):
        raise UnreadableRotation(f"the range profiler recorded {len(named)} ranges for "
                                 f"{len(first)} launches and their flushes "
                                 f"({RANGES_A_LAUNCH * len(first)})")
    launch_ranges = named[RANGES_A_LAUNCH - 1::RANGES_A_LAUNCH]
    return RotationRecords(first, {place: counters for place, (_, counters)
                                   in enumerate(launch_ranges)}, len(passes), sm, sms, device)


def _chosen_counters(named: list[tuple[str, dict[str, float]]], launches: int
                     ) -> dict[int, dict[str, float]]:
    """The ranges of the chosen launches, each named by its place in the step: one each."""
    found = {int(name): counters for name, counters in named
             if name.isdigit() and int(name) < launches}
    if len(found) != len(named) or not found:
        raise UnreadableRotation(f"the range profiler recorded {len(named)} ranges, of "
                                 f"{len(found)} of the step's {launches} launches: not one "
                                 f"a launch")
    return found


def _passes(text: str) -> list[list[RotationLaunch]]:
    passes: dict[int, list[RotationLaunch]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        cells = line.split("\t")
        try:
            launch = RotationLaunch(cells[1], _shape(cells[2]), _shape(cells[3]), int(cells[4]))
            passes.setdefault(int(cells[0]), []).append(launch)
        except (IndexError, ValueError):
            raise UnreadableRotation(f"line {number} of the launches is not a launch: "
                                     f"{line[:80]!r}") from None
    found = [launches for _, launches in sorted(passes.items()) if launches]
    if not found:
        raise UnreadableRotation("the engine recorded no launch")
    return found


def _shape(cell: str) -> tuple[int, int, int]:
    x, y, z = (int(n) for n in cell.split(","))
    return x, y, z


def _differs(number: int, other: list[RotationLaunch], first: list[RotationLaunch]) -> str:
    """Where pass ``number`` left the first pass's launches."""
    where = next((i for i, (a, b) in enumerate(zip(other, first)) if a != b),
                 min(len(other), len(first)))
    return (f"pass {number} launched {len(other)} kernels where the first launched "
            f"{len(first)}, differing from launch {where + 1} on: the program's steps do "
            f"not launch the same kernels, so their counters cannot be joined")


def _counters(text: str) -> list[tuple[str, dict[str, float]]]:
    """Each range's name and counters, in the file's order."""
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    if not lines:
        raise UnreadableRotation("the range profiler's file holds no ranges")
    table = list(csv.reader(lines, delimiter="\t"))
    metrics = table[0][2:]
    counters = []
    for number, cells in enumerate(table[1:], start=2):
        if len(cells) != len(metrics) + 2:
            raise UnreadableRotation(f"range line {number} has {len(cells) - 2} values for "
                                     f"{len(metrics)} counters")
        values = [_number(cell, number) for cell in cells[2:]]
        counters.append((cells[1], dict(zip(metrics, values))))
    return counters


def _number(cell: str, line: int) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise UnreadableRotation(f"range line {line} holds {cell[:20]!r} for a count") \
            from None
    if not math.isfinite(value) or value < 0:
        raise UnreadableRotation(f"range line {line} holds {cell[:20]!r} for a count")
    return value


def _sm_pairs(text: str) -> dict[str, str]:
    """The ``# sm`` line's names and values (none where there is no such line)."""
    line = next((line for line in text.splitlines() if line.startswith(SM_LINE)), "")
    return dict(part.split("=", 1) for part in line[len(SM_LINE):].split() if "=" in part)


def _device(text: str) -> dict[str, int]:
    """The device's attributes the ``# sm`` line gives above 0 (the driver gives 0 for one
    it does not know), by Nsight Compute's names."""
    found, pairs = {}, _sm_pairs(text)
    for key, name in DEVICE_FIELDS.items():
        value = pairs.get(key, "")
        if value.isdigit() and int(value) > 0:
            found[name] = int(value)
    return found


def _sm(text: str) -> tuple[SmLimits | None, int | None]:
    """The SM's limits and count from the ``# sm`` line; none where there is none, or one
    of its numbers is missing or not above 0 (the driver gives 0 for an attribute it does
    not know; the driver's shared-memory reserve alone may be 0)."""
    pairs = _sm_pairs(text)
    if not pairs:
        return None, None
    try:
        values = {name: int(pairs[key]) for key, name in SM_FIELDS.items()}
        sms = int(pairs["sms"])
    except (KeyError, ValueError):
        return None, None
    above_zero = [sms, *(v for name, v in values.items() if name != "reserved_shared_bytes")]
    if values["reserved_shared_bytes"] < 0 or min(above_zero) <= 0:
        return None, None
    return SmLimits(**values), sms
