"""The JSON Schema of the result, baseline and calibration documents (issue 27): shipped
in the package, derived from the dataclasses the reader checks documents against (so it
cannot drift from them), and every committed document of each kind valid under it, read
by a validator that is not rooflint's."""

from __future__ import annotations

import json

import pytest

from edges import REPO
from rooflint.formats.json_schema import DOCUMENTS, path_of, schema_of, text_of

jsonschema = pytest.importorskip("jsonschema")
KINDS = {version: name for name, (_, version) in DOCUMENTS.items()}
COMMITTED = sorted(p for p in [*REPO.glob("examples/**/*.json"),
                               *REPO.glob("tests/fixtures/**/*.json"),
                               *REPO.glob("benchmarks/results/**/*.json")]
                   if "trace" not in p.relative_to(REPO).parts)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_shipped_schema_is_the_one_the_reader_checks(name):
    assert path_of(name).read_text() == text_of(name), \
        "python -m rooflint.formats.json_schema writes them again"
    jsonschema.Draft202012Validator.check_schema(schema_of(name))


def documents():
    for path in COMMITTED:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("schema") in KINDS:
            yield pytest.param(path, KINDS[data["schema"]], id=str(path.relative_to(REPO)))


@pytest.mark.parametrize("path, kind", list(documents()))
def test_every_committed_document_is_valid_under_its_schema(path, kind):
    validator = jsonschema.Draft202012Validator(schema_of(kind))
    errors = sorted(validator.iter_errors(json.loads(path.read_text())), key=str)
    assert not errors, f"{errors[0].json_path}: {errors[0].message}"


def test_the_schema_refuses_what_the_reader_refuses():
    """A status outside the vocabulary, a negative byte count and a missing field fail both."""
    data = json.loads((REPO / "examples" / "h200-bundled.json").read_text())
    validator = jsonschema.Draft202012Validator(schema_of("result"))
    variant = data["families"][0]["variants"][0]
    for edit in ({"status": "great"}, {"dram_bytes": {"model": -1.0}}):
        bad = {**data, "families": [{**data["families"][0], "variants": [{**variant, **edit}]}]}
        assert not validator.is_valid(bad), edit
    assert not validator.is_valid({k: v for k, v in data.items() if k != "gpu"})
