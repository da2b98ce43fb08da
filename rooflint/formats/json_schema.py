"""The JSON Schema of rooflint's documents, derived from the dataclasses they are read into.

A result, a baseline and a calibration are read by walking their dataclasses' type hints
(jsonfile.read_document): those hints are the schema. This module writes the same
declaration as JSON Schema (draft 2020-12) for tools that are not rooflint, shipped in
the package as ``rooflint/formats/schemas/NAME.schema.json`` and checked against the
committed examples in the tests. Keys the dataclasses do not know are allowed, as the
reader ignores them (a newer rooflint may have added fields); the ``schema`` key is
required and pinned to the document's own, as the reader refuses a document of another
kind or version before reading a field. A condition a field's ``Sense`` states in JSON
Schema's words (bounds, a pattern, a closed set of words) is included; one it cannot (a
time's quartiles in order) is rooflint's alone. A number may be ``Infinity`` or ``NaN``
only where the reader allows it (an intensity, an error): Python's ``json`` writes and
reads those spellings, which JSON itself lacks, and :data:`_NONFINITE` refuses each
elsewhere.

    python -m rooflint.formats.json_schema      # write the shipped schemas again
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

from rooflint.common.sense import Sense
from rooflint.formats.baseline import SCHEMA as BASELINE_SCHEMA, Baseline
from rooflint.formats.calibration import SCHEMA as CALIBRATION_SCHEMA, Calibration
from rooflint.formats.results import SCHEMA as RESULT_SCHEMA, RunResult
from rooflint.formats.typed_schema import required

SCHEMAS_DIR = Path(__file__).with_name("schemas")
# document -> (its dataclass, the schema string it declares)
DOCUMENTS: dict[str, tuple[type, str]] = {
    "result": (RunResult, RESULT_SCHEMA),
    "baseline": (Baseline, BASELINE_SCHEMA),
    "calibration": (Calibration, CALIBRATION_SCHEMA),
}
_SCALARS = {int: "integer", str: "string", bool: "boolean"}
# Each value Python's json reads beside JSON's numbers, and the keywords that refuse it
# (JSON itself has none of them: a validator that parses only JSON never meets one). One
# that refuses a number when `x > maximum` or `x < minimum` (Python's jsonschema) finds
# NaN within any bounds, since every comparison with NaN is false; to it NaN alone is
# both above the largest float and below its negative, so `not` of that refuses NaN and
# nothing else.
_LARGEST = sys.float_info.max
_NONFINITE = ((math.inf, {"maximum": _LARGEST}), (-math.inf, {"minimum": -_LARGEST}),
              (math.nan, {"not": {"exclusiveMinimum": _LARGEST, "exclusiveMaximum": -_LARGEST}}))


def schema_of(document: str) -> dict[str, Any]:
    """The JSON Schema of a document kind (a key of DOCUMENTS)."""
    cls, version = DOCUMENTS[document]
    definitions: dict[str, Any] = {}
    root = _of(cls, definitions)
    definitions[cls.__name__] = _pinned(definitions[cls.__name__], version)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"urn:{version.replace('/', ':')}",
            "title": f"rooflint {document} ({version})",
            **root, "$defs": dict(sorted(definitions.items()))}


def _pinned(root: dict[str, Any], version: str) -> dict[str, Any]:
    """The document's own record, its ``schema`` required to be ``version``."""
    return {**root, "properties": {**root["properties"], "schema": {"const": version}},
            "required": [*root["required"], "schema"]}


def _of(hint: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if hint is Any:
        return {}
    if origin is typing.Annotated:
        base, *marks = typing.get_args(hint)
        senses = [mark for mark in marks if isinstance(mark, Sense)]
        found = _number(senses) if base is float else _of(base, definitions)
        for sense in senses:
            found = {**found, **{key: _plain(value) for key, value in sense.schema}}
        return found
    if origin in (typing.Union, types.UnionType):
        options = [_of(option, definitions) for option in typing.get_args(hint)]
        return {"anyOf": options}
    if dataclasses.is_dataclass(hint):
        return _reference(hint, definitions)
    if origin is list:
        (item,) = typing.get_args(hint)
        return {"type": "array", "items": _of(item, definitions)}
    if origin is dict:
        _, item = typing.get_args(hint)
        return {"type": "object", "additionalProperties": _of(item, definitions)}
    if hint is type(None):
        return {"type": "null"}
    if hint is float:
        return _number([])
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    raise TypeError(f"no JSON Schema for {hint!r}")      # a type a document declares


def _number(senses: list[Sense]) -> dict[str, Any]:
    """A number, NaN and the infinities refused as the reader refuses them: all, unless a
    sense lets the field be non-finite; then each that one of its senses refuses
    (typed_schema.Scalar and its senses)."""
    lenient = any(sense.nonfinite for sense in senses)
    found: dict[str, Any] = {"type": "number"}
    for value, keywords in _NONFINITE:
        if not lenient or any(sense.problem(value) is not None for sense in senses):
            found.update(keywords)
    return found


def _plain(value: Any) -> Any:
    """A keyword's value as JSON holds it: a closed set of words as a list of strings."""
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value.value if isinstance(value, Enum) else value


def _reference(cls: type, definitions: dict[str, Any]) -> dict[str, Any]:
    """A dataclass as a definition of its own, referred to wherever it is a field's type."""
    if cls.__name__ not in definitions:
        definitions[cls.__name__] = {}          # taken before its fields: a cycle ends here
        hints = typing.get_type_hints(cls, include_extras=True)
        fields = dataclasses.fields(cls)
        definitions[cls.__name__] = {
            "type": "object",
            "properties": {f.name: _of(hints[f.name], definitions) for f in fields},
            "required": [f.name for f in fields if required(f)],
        }
    return {"$ref": f"#/$defs/{cls.__name__}"}


def path_of(document: str) -> Path:
    return SCHEMAS_DIR / f"{document}.schema.json"


def text_of(document: str) -> str:
    return json.dumps(schema_of(document), indent=1) + "\n"


if __name__ == "__main__":
    for name in DOCUMENTS:
        path_of(name).write_text(text_of(name))
        print(f"wrote {path_of(name)}")
