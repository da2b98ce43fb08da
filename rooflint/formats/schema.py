"""One reader for every rooflint document: a schema declared as data, values read against it.

rooflint reads its own JSON documents (results, baselines, calibrations) and the YAML files
users write and share (GPU specs, kernel manifests, kernel models). Each is read by
:func:`read` against a declared schema, as pre-commit's cfgv reads its config: records of
fields (required, or with a default when left out), lists and mappings of them, and small
named validators where a value needs more than a shape (an expression, a file inside the
family, a word from a list), or where fields must agree (exactly one kind of variant). A
mistake is one RooflintError naming the file and the field's path
(``variants.copy.launches[0].grid``), in the document's own :class:`Wording`, instead of a
KeyError three modules later. The JSON documents' schemas are derived from the dataclasses
they become (rooflint.formats.typed_schema); the YAML files' are written out beside their
readers (gpus, manifest, kernel_models).

A node (:class:`Record`, :class:`ListOf`, :class:`MapOf`, :class:`Checked`, or a plain
validator function) reads a value at a :class:`Place` and returns what the value becomes,
raising :class:`Invalid` for what does not fit.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Protocol, Union

from rooflint.common.errors import RooflintError


@dataclass(frozen=True)
class Wording:
    """How a document's errors name a field, kept as each document's users (and tests)
    know it: ``field`` and ``missing`` are templates for the field's path ("field '{}'"
    makes "field 'gpu.sms' is 0, ..."), ``not_mapping`` completes the field's name when a
    mapping was expected (None: "is a list, expected a mapping")."""

    field: str = "field '{}'"
    missing: str = "field '{}' is missing"
    not_mapping: str | None = None


class Invalid(Exception):
    """A value that does not fit its schema: ``where`` is the field's path, ``text`` the
    error as the user reads it, less the file's name."""

    def __init__(self, where: str, text: str):
        super().__init__(where, text)
        self.where, self.text = where, text


class Nonsense(Invalid):
    """The value has the field's type but not its sense: no other type of a union fits it
    better, so the sense is what is reported."""


@dataclass(frozen=True)
class Place:
    """Where a value is read: the document's file and wording, the field's path, and what
    was read before it, for a validator that checks one field against another: ``beside``
    holds the fields (or map entries) read before it in the same record (a buffer's range
    is checked against its dtype), ``top`` the document's top-level fields read so far (a
    launch's arguments name its buffers)."""

    file: Path
    wording: Wording
    where: str = ""
    key: Any = None
    beside: Mapping[str, Any] = field(default_factory=dict)
    top: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The field as the document's errors name it: ``field 'sms'`` or ``'buffers.x'``."""
        return self.wording.field.format(self.where)

    def inner(self, key: Any, beside: Mapping[str, Any], top: Mapping[str, Any] | None = None
              ) -> Place:
        """The place of field or map entry ``key`` inside this one."""
        where = f"{self.where}.{key}" if self.where else str(key)
        return Place(self.file, self.wording, where, key, beside,
                     self.top if top is None else top)

    def item(self, index: int) -> Place:
        """The place of list item ``index`` inside this one."""
        return Place(self.file, self.wording, f"{self.where}[{index}]", index, {}, self.top)

    def at_top(self, key: str) -> Place:
        """The place of the document's top-level field ``key``."""
        return Place(self.file, self.wording, key, key, self.top, self.top)

    def invalid(self, problem: str) -> Invalid:
        """The value here refused: ``problem`` completes the field's name ("is 5, expected
        a list"); at the top of the document, where no field is named, it stands alone."""
        return Invalid(self.where, f"{self.label} {problem}" if self.where else problem)

    def nonsense(self, problem: str) -> Nonsense:
        """As :meth:`invalid`, for a value of the right type that makes no sense."""
        return Nonsense(self.where, f"{self.label} {problem}")

    def refuse(self, sentence: str) -> Invalid:
        """The value here refused in a sentence of its own (which names the field)."""
        return Invalid(self.where, sentence)

    def missing(self) -> Invalid:
        """The field here is required and was left out."""
        return Invalid(self.where, self.wording.missing.format(self.where))


class Node(Protocol):
    """Reads a value at a place: returns what it becomes, or raises Invalid. ``expected``
    says what it takes, for a union that fits none of its types ("a list")."""

    expected: str

    def read(self, value: Any, place: Place) -> Any: ...


Validator = Callable[[Any, Place], Any]      # a named check: the value, as it should become
Rule = Callable[[dict, Place, Mapping], None]  # fields read so far, the record's place, as written
Spec = Union[Node, Validator]


def as_node(spec: Spec) -> Node:
    """A node as given, or a validator function made one."""
    return spec if hasattr(spec, "read") else Check(spec)


@dataclass(frozen=True)
class Check:
    """A named validator as a node: ``validate(value, place)`` returns the value as it
    should become (a number, a path, a compiled pattern) or raises Invalid."""

    validate: Validator
    expected: str = "a value"

    def read(self, value: Any, place: Place) -> Any:
        return self.validate(value, place)


def as_written(value: Any, place: Place) -> Any:
    """Taken as written, for a later step to judge (an expression evaluated once sizes are
    bound)."""
    return value


def text(value: Any, place: Place) -> str:
    """Any scalar, as text (a compute capability written 9.0 is "9.0")."""
    return str(value)


def prose(value: Any, place: Place) -> str:
    """A description or notes: text, blank when left empty."""
    return str(value or "").strip()


class Default(Enum):
    """A field's default that is no value."""

    REQUIRED = "required"     # the field must be written
    OMITTED = "omitted"       # left out of the values read: the build supplies it


REQUIRED, OMITTED = Default.REQUIRED, Default.OMITTED


@dataclass(frozen=True)
class Field:
    """A record's field: its key, the node its value is read with, and what stands when
    the document leaves it out: ``default``, or it is missing (said as ``missing``, which
    completes the field's name, or in the document's wording).

    In YAML ``key:`` with nothing after it is null, and reads as left out unless
    ``keeps_null`` (then the node judges the null). ``inherit``: not written here (not
    even empty), the document's top-level field of the same key stands in, read by this
    node and named where it is written (a variant's tolerance is its family's unless it
    has its own)."""

    key: str
    node: Spec
    default: Any = REQUIRED
    keeps_null: bool = False
    inherit: bool = False
    missing: str | None = None

    def read(self, written: Mapping, place: Place) -> Any:
        """This field's value in the mapping ``written``; ``place`` is the field's own."""
        node = as_node(self.node)
        if self.key in written and (written[self.key] is not None or self.keeps_null):
            return node.read(written[self.key], place)
        if self.inherit and self.key not in written and place.top.get(self.key) is not None:
            return node.read(place.top[self.key], place.at_top(self.key))
        if self.default is not REQUIRED:
            return copy.copy(self.default)      # a default list is each record's own
        if self.missing is not None:
            raise place.invalid(self.missing)
        if self.inherit:
            raise place.refuse(f"{place.wording.missing.format(self.key)} (at the top level "
                               f"or in '{place.where}')")
        raise place.missing()


def _values(values: dict, place: Place, written: Mapping) -> dict:
    return values


@dataclass(frozen=True)
class Record:
    """A mapping of named fields, read in the order declared, so that a field's validator
    may use those before it; a rule among them checks the fields before it against each
    other (a variant is exactly one kind) as soon as they are read. ``build`` makes the
    values read into what the reader returns (a dataclass; the values themselves without
    one).

    ``strict``: a key no field declares is refused, naming the nearest known one (a user's
    misspelt ``tolerence`` is never silently ignored); a JSON document's records are not
    strict, since a newer rooflint may have added fields. ``shape`` completes the field's
    name when the value is not a mapping (at the top of the document it stands alone)."""

    fields: tuple[Field | Rule, ...]
    build: Callable[[dict, Place, Mapping], Any] = _values
    strict: bool = True
    shape: str | None = None
    expected: str = "a mapping"

    def read(self, value: Any, place: Place) -> Any:
        if not isinstance(value, dict):
            raise place.invalid(self.shape or _not_mapping(value, place))
        if self.strict:
            _refuse_unknown(value, [f.key for f in self.fields if isinstance(f, Field)], place)
        values: dict = {}
        top = values if not place.where else None     # the document's top level
        for item in self.fields:
            if not isinstance(item, Field):
                item(values, place, value)
            elif (got := item.read(value, place.inner(item.key, values, top))) is not OMITTED:
                values[item.key] = got
        return self.build(values, place, value)


@dataclass(frozen=True)
class ListOf:
    """A list, each item read by ``item`` and named by its index (``launches[2]``).
    ``shape`` completes the field's name when the value is not a list, ``empty`` when
    it is an empty one that may not be (None: empty is fine)."""

    item: Spec
    shape: str | None = None
    empty: str | None = None
    expected: str = "a list"

    def read(self, value: Any, place: Place) -> list:
        if not isinstance(value, list):
            raise place.invalid(self.shape or f"is {describe(value)}, expected a list")
        if not value and self.empty:
            raise place.invalid(self.empty)
        node = as_node(self.item)
        return [node.read(v, place.item(i)) for i, v in enumerate(value)]


@dataclass(frozen=True)
class MapOf:
    """A mapping of any keys, each value read by ``value`` and named by its key
    (``buffers.x``), in the order written (a value may use those before it: a parameter
    is an expression over the ones above it). ``key`` validates a key at the entry's
    place; ``shape`` and ``empty`` as for :class:`ListOf`."""

    value: Spec
    key: Callable[[Any, Place], None] | None = None
    shape: str | None = None
    empty: str | None = None
    expected: str = "a mapping"

    def read(self, value: Any, place: Place) -> dict:
        if not isinstance(value, dict):
            raise place.invalid(self.shape or _not_mapping(value, place))
        if not value and self.empty:
            raise place.invalid(self.empty)
        node, entries = as_node(self.value), {}
        for key, item in value.items():
            inner = place.inner(key, entries)
            if self.key is not None:
                self.key(key, inner)
            entries[key] = node.read(item, inner)
        return entries


@dataclass(frozen=True)
class Checked:
    """A value read by ``node``, then judged by each of ``checks`` in turn (what a number
    must mean beyond being one: a time above zero)."""

    node: Spec
    checks: Sequence[Validator]

    @property
    def expected(self) -> str:
        return as_node(self.node).expected

    def read(self, value: Any, place: Place) -> Any:
        value = as_node(self.node).read(value, place)
        for check in self.checks:
            value = check(value, place)
        return value


@dataclass(frozen=True)
class Document:
    """A document's schema: the node its whole is read with, and how its errors are worded."""

    root: Node
    wording: Wording = Wording()


def read(document: Document, data: Any, file: Path) -> Any:
    """``data`` (a file as parsed) read against ``document``; a RooflintError naming
    ``file`` and the field for anything that does not fit."""
    try:
        return document.root.read(data, Place(Path(file), document.wording))
    except Invalid as exc:
        raise RooflintError(f"{file}: {exc.text}") from None


def _refuse_unknown(written: Mapping, known: list[str], place: Place) -> None:
    """Invalid for the first key of ``written`` not in ``known``, with the nearest one."""
    prefix = f"{place.where}." if place.where else ""
    for key in written:
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            hint = (f"; did you mean '{prefix}{near[0]}'?" if near
                    else f" (known: {', '.join(known)})")
            raise place.refuse(f"unknown key '{prefix}{key}'{hint}")


def _not_mapping(value: Any, place: Place) -> str:
    return place.wording.not_mapping or f"is {describe(value)}, expected a mapping"


def describe(value: Any) -> str:
    """What a value is, in the words of an error ("is a string, expected a number")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    return {str: "a string", list: "a list", dict: "a mapping"}.get(type(value), "a value")
