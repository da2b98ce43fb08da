"""The JSON Schema of rooflint's documents, derived from the dataclasses they are read into.

A result, a baseline and a calibration are read by walking their dataclasses' type hints
(jsonfile.read_document): those hints are the schema. This module writes the same
declaration as JSON Schema (draft 2020-12) for tools that are not rooflint, shipped in
the package as ``rooflint/formats/schemas/NAME.schema.json`` and checked against the
committed examples in the tests. Keys the dataclasses do not know are allowed, as the
reader ignores them (a newer rooflint may have added fields). A condition a field's
``Sense`` states in JSON Schema's words (bounds, a pattern, a closed set of words) is
included; one it cannot (a time's quartiles in order) is rooflint's alone. A number may be
``Infinity`` or ``NaN`` where the reader allows it (an intensity, an error): Python's
``json`` writes and reads those spellings, which JSON itself lacks.

    python -m rooflint.formats.json_schema      # write the shipped schemas again
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

from rooflint.analysis.calibration import SCHEMA as CALIBRATION_SCHEMA, Calibration
from rooflint.common.sense import Sense
from rooflint.formats.baseline import SCHEMA as BASELINE_SCHEMA, Baseline
from rooflint.formats.results import SCHEMA as RESULT_SCHEMA, RunResult

SCHEMAS_DIR = Path(__file__).with_name("schemas")
# document -> (its dataclass, the schema string it declares)
DOCUMENTS: dict[str, tuple[type, str]] = {
    "result": (RunResult, RESULT_SCHEMA),
    "baseline": (Baseline, BASELINE_SCHEMA),
    "calibration": (Calibration, CALIBRATION_SCHEMA),
}
_SCALARS = {float: "number", int: "integer", str: "string", bool: "boolean"}


def schema_of(document: str) -> dict[str, Any]:
    """The JSON Schema of a document kind (a key of DOCUMENTS)."""
    cls, version = DOCUMENTS[document]
    definitions: dict[str, Any] = {}
    root = _of(cls, definitions)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"urn:{version.replace('/', ':')}",
            "title": f"rooflint {document} ({version})",
            **root, "$defs": dict(sorted(definitions.items()))}


def _of(hint: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if hint is Any:
        return {}
    if origin is typing.Annotated:
        base, *marks = typing.get_args(hint)
        found = _of(base, definitions)
        for mark in marks:
            if isinstance(mark, Sense):
                found = {**found, **{key: _plain(value) for key, value in mark.schema}}
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
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    raise TypeError(f"no JSON Schema for {hint!r}")      # a type a document declares


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
            "required": [f.name for f in fields if f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING],
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
