"""The optional file that gives a profiled program's kernels the author's count of the work.

A profile measures a kernel's bytes and FLOPs but cannot know its compulsory bytes, so its
points have no algorithmic intensity and nothing says how far right a kernel could move.
A user who knows can say so, per kernel-name pattern, in expressions over named values::

    values:                       # numbers, or expressions over the values above them
      B: 8
      S: 1024
      D: 2048
    kernels:
      - match: layer_norm         # a regular expression on the kernel's demangled name
        flops: 8 * B * S * D      # per launch
        bytes: 2 * (2 * B * S * D)
        written: 2 * B * S * D    # optional: output bytes (the compulsory writes)

The first pattern that matches a kernel's demangled name, or its short name in the profile
(``nvjet_..._TNT@1536`` names one grid of a kernel run at two), gives that kernel's model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rooflint.analysis.observation import Model
from rooflint.common.errors import RooflintError
from rooflint.formats import yamlfile
from rooflint.formats.expressions import Number, evaluate
from rooflint.formats.schema import Document, Field, ListOf, MapOf, Place, Record, Wording


@dataclass
class KernelModel:
    pattern: re.Pattern[str]
    model: Model


def load(path: Path) -> list[KernelModel]:
    """The file's kernel models, in order; RooflintError naming the file and field."""
    return yamlfile.read(path, MODELS_FILE)


def model_for(names: tuple[str, ...], models: list[KernelModel]) -> Model | None:
    """The model of the first pattern matching any of a kernel's names, or None."""
    return next((m.model for m in models if any(m.pattern.search(n) for n in names)), None)


def _value_name(name: object, place: Place) -> None:
    if not (isinstance(name, str) and name.isidentifier()):
        raise place.refuse(f"{place.label}: a value's name must be an identifier")


def _values(values: object, place: Place) -> dict[str, Number]:
    """The named values, each a number or an expression over those above it; an empty
    entry (``values:``, ``values: []``) names none."""
    return _VALUES.read(values or {}, place)


def _value(expression: object, place: Place) -> Number:
    """A number, or an expression over the values above it."""
    return _evaluate(expression, place.beside, place)


def _count(expression: object, place: Place) -> Number:
    """A kernel's count per launch: an expression over the file's values."""
    return _evaluate(expression, place.top["values"], place)


def _evaluate(expression: object, values: Mapping[str, Number], place: Place) -> Number:
    try:
        return evaluate(expression, values)  # type: ignore[arg-type]
    except RooflintError as exc:
        raise place.refuse(f"{place.label}: {exc}") from None


def _pattern(value: object, place: Place) -> re.Pattern[str]:
    """A regular expression written as text: an empty one matches every kernel, and
    whatever YAML reads otherwise (a number, a list) would become a pattern nobody wrote
    (``['gemm']`` is a character class)."""
    if value in (None, ""):
        raise place.invalid("is empty, which matches every kernel; write a regular "
                            "expression on kernel names ('.' if every kernel is meant)")
    if not isinstance(value, str):
        raise place.invalid(f"is {value!r}, which YAML read as {type(value).__name__}, not "
                            f"text; write the regular expression in quotes")
    try:
        return re.compile(value)
    except re.error as exc:
        raise place.invalid(f"is not a regular expression: {exc}") from None


def _counts_in_range(values: dict, place: Place, written: Mapping) -> None:
    if values["bytes"] <= 0 or values["flops"] < 0 or values["written"] < 0:
        raise place.refuse(f"{place.label}: bytes must be positive, flops and written "
                           f"not negative")


def _kernel(values: dict, place: Place, written: Mapping) -> KernelModel:
    return KernelModel(values["match"], Model(flops=float(values["flops"]),
                                              bytes=float(values["bytes"]),
                                              written_bytes=float(values["written"])))


def _kernels(values: dict, place: Place, written: Mapping) -> list[KernelModel]:
    return values["kernels"]


# The file's schema (rooflint.formats.schema). A kernel's fields take an empty value (null)
# as written: an empty ``flops:`` is refused as an expression, not read as left out.
_KERNEL = Record((
    Field("match", _pattern, keeps_null=True),
    Field("flops", _count, keeps_null=True),
    Field("bytes", _count, keeps_null=True),
    Field("written", _count, default=0, keeps_null=True),
    _counts_in_range,
), build=_kernel, shape="must be a mapping with match, flops and bytes")
_KERNELS = "must be a list of {match, flops, bytes}"
_VALUES = MapOf(_value, key=_value_name, shape="must map names to numbers or expressions")
MODELS_FILE = Document(Record((
    Field("values", _values, default={}),
    Field("kernels", ListOf(_KERNEL, shape=_KERNELS, empty=_KERNELS), missing=_KERNELS),
), build=_kernels, shape="expected a mapping with 'values' and 'kernels'"),
    Wording(field="'{}'", missing="'{}' is missing"))
