"""What the values in rooflint's documents must mean, beyond their JSON type.

A field's type hint says what it is; ``Annotated[float, Sense]`` adds what a value must be
for the numbers made from it to mean anything: a time above zero, a byte count not below
it, a status word rooflint knows. The reader (jsonfile.read_document) applies them to
every result, baseline and calibration it reads, so a damaged or hand-edited file is one
line naming the file and the field, instead of a ``nan ns`` time, a ``-0.00x slower``
verdict or a KeyError three commands later. Declared once, here and beside the fields;
nothing checks them ad hoc.

Numbers are finite unless a field's sense says otherwise (JSON has no NaN or infinity;
Python's json module reads and writes them as ``NaN`` and ``Infinity``): an intensity is
infinite when no DRAM byte moved, and a broken reference can make an output's error NaN.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any, Callable, Iterable


@dataclass(frozen=True)
class Sense:
    """A condition on a value, for an ``Annotated`` hint. ``problem`` says what is wrong
    with a value (completing "field 'x' ..."), or None when it makes sense; ``nonfinite``
    lets a float field hold infinity or NaN, for ``problem`` to judge; ``schema`` is the
    same condition as JSON Schema keywords, where it can say it (formats/json_schema.py)."""

    problem: Callable[[Any], str | None]
    nonfinite: bool = False
    # not hashed: a keyword's value may be a mapping (a sense is hashed where the hint it
    # annotates is a cache's key)
    schema: tuple[tuple[str, Any], ...] = field(default=(), hash=False)


def expect(holds: Callable[[Any], bool], expected: str, nonfinite: bool = False,
           schema: tuple[tuple[str, Any], ...] = ()) -> Sense:
    """The sense "``holds(value)``", refused as "is VALUE, expected EXPECTED"."""
    return Sense(lambda v: None if holds(v) else f"is {shown(v)}, expected {expected}",
                 nonfinite, schema)


class Vocabulary(str, Enum):
    """A closed set of words rooflint writes (a verdict's bound, a variant's status, a
    gate's outcome), each word a member. A member is its word: it equals the plain string a
    document read back holds, and prints, formats and goes into JSON as that word (as
    Python 3.11's StrEnum does, which 3.10 lacks). A document's field that holds one is
    ``Annotated[str, one_of(vocabulary)]``: what is read back from a file stays a string."""

    def __str__(self) -> str:
        return str.__str__(self)


def one_of(words: Iterable[str]) -> Sense:
    known = tuple(words)
    return expect(lambda v: v in known, f"one of {', '.join(known)}",
                  schema=(("enum", known),))


def unique(key: Callable[[Any], tuple[str, ...]]) -> Sense:
    """A list whose items differ in ``key`` (a name, as a tuple of its parts)."""
    def problem(items: list) -> str | None:
        seen: dict[tuple[str, ...], int] = {}
        for i, item in enumerate(items):
            if key(item) in seen:
                return f"has {'/'.join(key(item))} twice, at [{seen[key(item)]}] and [{i}]"
            seen[key(item)] = i
        return None
    return Sense(problem)


def shown(value: Any) -> str:
    """A value as a refusal quotes it: NaN and infinity as JSON spells them."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("-" if value < 0 else "") + "Infinity"
    return repr(value)


# Past any count, rate or roof of a GPU (a zettabyte is 1e21), and low enough that their
# products and ratios stay finite: 1e308 bytes would print as "inf GB/s".
LARGEST = 1e30
ABOVE_ZERO = expect(lambda v: 0 < v <= LARGEST, "a positive number up to 1e30",
                    schema=(("exclusiveMinimum", 0), ("maximum", LARGEST)))
NOT_NEGATIVE = expect(lambda v: 0 <= v <= LARGEST, "a number from 0 to 1e30",
                      schema=(("minimum", 0), ("maximum", LARGEST)))
# A GPU spec's id, which names its file (specs/h200.yaml) and its cached calibrations
PLAIN_ID = expect(lambda v: re.fullmatch(r"[a-z0-9][a-z0-9._-]*", v) is not None,
                  "a plain id such as h200 (lower-case letters, digits, - . _)",
                  schema=(("pattern", "^[a-z0-9][a-z0-9._-]*$"),))

# A time: anything that ran took some, none under a picosecond or over 1e6 s (11 days);
# past these, ratios of times overflow into infinity.
Seconds = Annotated[float, expect(lambda v: 1e-12 <= v <= 1e6,
                                  "a time from 1e-12 to 1e6 seconds",
                                  schema=(("minimum", 1e-12), ("maximum", 1e6)))]
Amount = Annotated[float, NOT_NEGATIVE]         # bytes, FLOPs, rates, fractions, percents
Positive = Annotated[float, ABOVE_ZERO]         # a roof, a ridge, a ratio of times
Count = Annotated[int, NOT_NEGATIVE]            # registers, blocks, NaN/inf elements
Size = Annotated[int, ABOVE_ZERO]               # SMs, L2 bytes, memory bytes, samples
# FLOP/byte: infinite for a kernel that moved no DRAM bytes (roofline.place)
Intensity = Annotated[float, expect(lambda v: 0 <= v <= LARGEST or v == math.inf,
                                    "a number from 0 to 1e30, or Infinity",
                                    nonfinite=True)]
# ||out - ref|| / ||ref||: NaN or infinite when the reference itself overflowed
Error = Annotated[float, expect(lambda v: math.isnan(v) or v >= 0, "a number, 0 or more",
                                nonfinite=True)]
SpecId = Annotated[str, PLAIN_ID]
