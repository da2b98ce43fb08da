"""The schema of a JSON document, derived from the dataclasses the document becomes.

rooflint's own documents (results, baselines, calibrations) are read into dataclasses, so
their schema is written once, as those dataclasses' fields and type hints: :func:`node_of`
makes the hints the nodes that rooflint.formats.schema reads, and a wrong or missing field
is named by its path (``families[0].variants[2].time.median_s``). A field with a default
may be absent (files written before the field existed) unless marked ALWAYS_WRITTEN; keys
the dataclasses do not know are ignored, so a file written by a newer rooflint that added
fields still reads. A value must also make sense (rooflint.common.sense: a time above
zero, a known status), as the fields' ``Annotated`` senses declare; a number is finite
unless a sense says otherwise.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from dataclasses import dataclass
from typing import Any

from rooflint.common.sense import Sense, shown
from rooflint.formats.schema import (
    OMITTED, REQUIRED, Check, Checked, Field, Invalid, ListOf, MapOf, Node, Nonsense, Place,
    Record, describe,
)

# A field's metadata for one a document must hold though the dataclass has a default
# (for code that fills it in later: a run's families, appended as each is measured).
ALWAYS_WRITTEN = {"always_written": True}
# A float field takes an int (JSON does not tell 2 from 2.0); a bool is never a number.
_SCALARS = {float: (int, float), int: (int,), str: (str,), bool: (bool,)}
_EXPECTED = {float: "a number", int: "an integer", str: "a string", bool: "true or false"}


@functools.cache
def node_of(hint: Any) -> Node:
    """The node that reads a value of type ``hint``: a dataclass, list, dict, union,
    ``Annotated`` scalar, scalar or ``Any``."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return Check(_finite_inside)
    if origin is typing.Annotated:
        return _sensible(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        return OneOf(tuple(node_of(o) for o in options if o is not type(None)),
                     type(None) in options)
    if dataclasses.is_dataclass(hint):
        return _record(hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        return ListOf(node_of(item))
    if origin is dict:
        _, item = typing.get_args(hint)
        return MapOf(node_of(item))
    if hint in _SCALARS:
        return Scalar(hint)
    raise TypeError(f"no reader for {hint!r}")     # a dataclass rooflint declares


def required(f: dataclasses.Field) -> bool:
    """Whether a document must hold the field: one without a default, or one marked
    ALWAYS_WRITTEN (any other may be absent: files written before it existed)."""
    return (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            or ALWAYS_WRITTEN.items() <= f.metadata.items())


def _record(cls: type) -> Record:
    """A dataclass's fields as a record that builds it; a field with a default may be
    absent unless :func:`required`, and a null is judged by the field's type (``X | None``
    takes it)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = tuple(
        Field(f.name, node_of(hints[f.name]), keeps_null=True,
              default=REQUIRED if required(f) else OMITTED)
        for f in dataclasses.fields(cls))
    return Record(fields, build=functools.partial(_construct, cls), strict=False)


def _construct(cls: type, values: dict, place: Place, written: Any) -> Any:
    return cls(**values)


def _sensible(hint: Any) -> Node:
    """An ``Annotated[type, Sense...]`` hint: the type, then each sense (a float may be
    infinite or NaN only where a sense says so)."""
    base, *marks = typing.get_args(hint)
    senses = tuple(mark for mark in marks if isinstance(mark, Sense))
    lenient = base is float and any(sense.nonfinite for sense in senses)
    node = Scalar(float, finite=False) if lenient else node_of(base)
    return Checked(node, tuple(functools.partial(_judged, sense) for sense in senses))


def _judged(sense: Sense, value: Any, place: Place) -> Any:
    if (problem := sense.problem(value)) is not None:
        raise place.nonsense(problem)
    return value


def _finite_inside(value: Any, place: Place) -> Any:
    """A value of any shape (a result's settings) holds no NaN or infinity either."""
    if isinstance(value, float) and not math.isfinite(value):
        raise place.nonsense(f"is {shown(value)}, expected a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite_inside(item, place.inner(key, {}))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _finite_inside(item, place.item(index))
    return value


@dataclass(frozen=True)
class Scalar:
    """A number, integer, string or boolean; a number is finite unless ``finite`` is off
    (a sense then judges it)."""

    kind: type
    finite: bool = True

    @property
    def expected(self) -> str:
        return _EXPECTED[self.kind]

    def read(self, value: Any, place: Place) -> Any:
        if isinstance(value, float) and not math.isfinite(value) and self.finite:
            # NaN where a count is expected is reported as NaN, not as "a number"
            raise place.nonsense(f"is {shown(value)}, expected a finite number")
        if not (isinstance(value, _SCALARS[self.kind])
                and (self.kind is bool or not isinstance(value, bool))):
            raise place.invalid(f"is {describe(value)}, expected {self.expected}")
        return value


@dataclass(frozen=True)
class OneOf:
    """A union: the first of ``kinds`` that takes the value, or null where ``nullable``.
    A value of the right shape with a field wrong inside it, or one that makes no sense,
    is reported as that, not as "expected A or B"."""

    kinds: tuple[Node, ...]
    nullable: bool

    @property
    def expected(self) -> str:
        return " or ".join([k.expected for k in self.kinds] + ["null"] * self.nullable)

    def read(self, value: Any, place: Place) -> Any:
        if value is None and self.nullable:
            return None
        for kind in self.kinds:
            try:
                return kind.read(value, place)
            except Invalid as exc:
                if exc.where != place.where or isinstance(exc, Nonsense):
                    raise
        raise place.invalid(f"is {describe(value)}, expected {self.expected}")
