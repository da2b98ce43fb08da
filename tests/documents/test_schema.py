"""The one reader of rooflint's documents (rooflint.formats.schema), on a schema of its own:
every mistake is one line that names the file and the field's path, in the document's
wording, whatever the shape around it (a record in a list in a record, a map's entry)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rooflint.common.errors import RooflintError
from rooflint.formats import yamlfile
from rooflint.formats.schema import (
    Document, Field, ListOf, MapOf, Place, Record, Wording, prose, read, text,
)
from rooflint.formats.typed_schema import node_of

FILE = Path("shapes.yaml")


def number(value: Any, place: Place) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise place.invalid(f"is {value!r}; expected a number")
    return float(value)


def below_limit(value: Any, place: Place) -> float:
    """A cross-field validator: a point's ``y`` is under the document's ``limit``."""
    value = number(value, place)
    if value > place.top["limit"]:
        raise place.invalid(f"is {value}, over the limit {place.top['limit']}")
    return value


POINT = Record((Field("x", number), Field("y", below_limit, default=0.0),
                Field("label", prose, default="")))
SHAPES = Document(Record((
    Field("name", text),
    Field("limit", number, default=100.0),
    Field("points", ListOf(POINT, shape="must be a list of points", empty="is empty")),
    Field("weights", MapOf(number), default={}),
    Field("tags", ListOf(text), default=[], keeps_null=True),
), shape="expected a mapping of fields"),
    Wording(field="'{}'", missing="missing field '{}'", not_mapping="must be a mapping"))
GOOD = {"name": "square", "points": [{"x": 0}, {"x": 1, "y": 2, "label": " corner "}]}


def error(data: Any, document: Document = SHAPES) -> str:
    with pytest.raises(RooflintError) as caught:
        read(document, data, FILE)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_document_that_fits_reads_with_its_defaults():
    assert read(SHAPES, GOOD, FILE) == {
        "name": "square", "limit": 100.0, "weights": {}, "tags": [],
        "points": [{"x": 0.0, "y": 0.0, "label": ""}, {"x": 1.0, "y": 2.0, "label": "corner"}]}


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("name"), "shapes.yaml: missing field 'name'"),
    (lambda d: d.update(name=None), "shapes.yaml: missing field 'name'"),   # `name:` alone
    (lambda d: d["points"][1].pop("x"), "shapes.yaml: missing field 'points[1].x'"),
    (lambda d: d["points"][1].update(x="far"), "shapes.yaml: 'points[1].x' is 'far'; expected "
                                               "a number"),
    (lambda d: d.update(points=5), "shapes.yaml: 'points' must be a list of points"),
    (lambda d: d.update(points=[]), "shapes.yaml: 'points' is empty"),
    (lambda d: d["points"].append(7), "shapes.yaml: 'points[2]' must be a mapping"),
    (lambda d: d.update(weights={"a": 1, "b": []}), "shapes.yaml: 'weights.b' is []; expected "
                                                     "a number"),
    (lambda d: d.update(tags=None), "shapes.yaml: 'tags' is null, expected a list"),
    (lambda d: d.update(nmae="x"), "shapes.yaml: unknown key 'nmae'; did you mean 'name'?"),
    (lambda d: d["points"][0].update(lable="a"),
     "shapes.yaml: unknown key 'points[0].lable'; did you mean 'points[0].label'?"),
    (lambda d: d.update(qqq=1), "shapes.yaml: unknown key 'qqq' (known: name, limit, points, "
                                "weights, tags)"),
    (lambda d: d.update(limit=1), "shapes.yaml: 'points[1].y' is 2.0, over the limit 1.0"),
])
def test_a_mistake_is_one_line_naming_the_file_and_the_field(change, message):
    data = {**GOOD, "points": [dict(p) for p in GOOD["points"]]}
    change(data)
    assert error(data) == message


def test_the_top_of_a_document_is_named_by_its_own_shape():
    assert error(["not", "a", "mapping"]) == "shapes.yaml: expected a mapping of fields"


def test_a_default_is_each_record_s_own():
    first, second = read(SHAPES, GOOD, FILE), read(SHAPES, GOOD, FILE)
    first["tags"].append("changed")
    assert second["tags"] == []


FAMILY = Document(Record((
    Field("tolerance", number, default=None),
    Field("variants", MapOf(Record((Field("tolerance", number, inherit=True),)))),
)), Wording(field="'{}'", missing="missing field '{}'"))


def test_an_inherited_field_is_named_where_it_is_written():
    both = {"tolerance": 0.1, "variants": {"a": {}, "b": {"tolerance": 0.2}}}
    assert read(FAMILY, both, FILE)["variants"] == {"a": {"tolerance": 0.1},
                                                    "b": {"tolerance": 0.2}}
    assert error({"tolerance": "tight", "variants": {"a": {}}}, FAMILY) == \
        "shapes.yaml: 'tolerance' is 'tight'; expected a number"
    assert error({"variants": {"a": {}}}, FAMILY) == \
        "shapes.yaml: missing field 'tolerance' (at the top level or in 'variants.a.tolerance')"


@dataclass
class Sample:
    seconds: float
    note: str | None = None


@dataclass
class Run:
    name: str
    samples: list[Sample] = field(default_factory=list)


def test_a_dataclass_schema_reads_json_as_its_documents_always_did():
    """Derived from the dataclasses (typed_schema): unknown keys ignored, a default may be
    absent, and the field named as rooflint's JSON documents name it."""
    run = Document(node_of(Run))
    data = {"name": "r", "samples": [{"seconds": 1, "extra": True}], "newer": 1}
    assert read(run, data, FILE) == Run("r", [Sample(1)])
    assert error({"samples": []}, run) == "shapes.yaml: field 'name' is missing"
    assert error({"name": "r", "samples": [{"seconds": 1}, {"seconds": "1"}]}, run) == \
        "shapes.yaml: field 'samples[1].seconds' is a string, expected a number"
    assert error({"name": "r", "samples": [{"seconds": 1, "note": 2}]}, run) == \
        "shapes.yaml: field 'samples[0].note' is an integer, expected a string or null"


def test_a_yaml_file_is_read_against_its_schema(tmp_path):
    path = tmp_path / "shapes.yaml"
    path.write_text("name: square\npoints:\n  - {x: 0}\n  - {x: 1, y: [2]}\n")
    with pytest.raises(RooflintError, match=rf"^{path}: 'points\[1\].y' is \[2\]; expected a "
                                            rf"number$"):
        yamlfile.read(path, SHAPES)
