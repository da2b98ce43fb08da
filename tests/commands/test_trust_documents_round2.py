"""Issue 45's campaign rows "unbounded" and "wrong exit" (documents): a result is read with
bounded memory and time (refused past MAX_DOCUMENT_BYTES before it is parsed, past
MAX_ROWS variants before a field is read), a result without families or with a GPU spec
rooflint does not have is refused, and the shipped JSON Schema refuses every document the
reader refuses. Inputs are the committed examples, edited or replicated in tmp_path.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest

from edges import assert_one_line_error, rooflint
from rooflint.formats import calibration as calibrations
from rooflint.common.errors import RooflintError
from rooflint.formats import baseline as baselines
from rooflint.formats.json_schema import schema_of
from rooflint.formats.jsonfile import MAX_DOCUMENT_BYTES, MAX_ROWS
from rooflint.formats.results import read_result
from test_json_schema import COMMITTED, documents
from test_trust_documents import RESULT, TILED, at_top, edited, in_tiled

jsonschema = pytest.importorskip("jsonschema")
NAN, INF = float("nan"), float("inf")
# the commands of the campaign's "unbounded" row, given a result and a directory to write in
COMMANDS = {
    "report": lambda path, out: ["report", str(path), "-o", str(out / "r.html")],
    "show": lambda path, out: ["show", str(path)],
    "show --csv": lambda path, out: ["show", str(path), "--csv", str(out / "r.csv")],
    "plot": lambda path, out: ["plot", str(path), "-o", str(out / "r.svg")],
}
# a refusal is said before any reading that costs time: start-up, then one parse at most
FEW_SECONDS = 15


# --- unbounded: 100,000 variants ---------------------------------------------------------

def replicated(variant: dict, count: int, path: Path) -> Path:
    """RESULT with one family of ``count`` copies of ``variant`` (each named apart), written
    as Python's json writes it, its text joined rather than each copy serialised."""
    data = json.loads(RESULT.read_text())
    family = {**data["families"][0], "baseline": None, "variants": ["@"]}
    head, tail = json.dumps({**data, "families": [family]}).split('"@"')
    text = json.dumps({**variant, "name": "@"})
    with path.open("w") as handle:
        handle.write(head)
        handle.write(",".join(text.replace('"@"', f'"v{i}"') for i in range(count)))
        handle.write(tail)
    return path


def trimmed() -> dict:
    """gemm_fp32/naive without its verdict, counters and levels: 2.2 KB as Python's json
    writes it, so that 100,000 of them are some 220 MB, as the campaign's 206 MB were."""
    data = json.loads(RESULT.read_text())
    naive = next(v for f in data["families"] for v in f["variants"] if v["name"] == "naive")
    return {**naive, "verdict": None, "counters": None, "levels": [], "versus": None,
            "speed_vs_baseline": None}


def skipped() -> dict:
    """A variant as small as one gets: skipped, with nothing measured (about 0.5 KB)."""
    return {**trimmed(), "status": "skipped", "message": "", "description": "",
            "source_sha256": None, "checks": [], "samples_s": [], "time": None, "notes": [],
            "flops": {}, "dram_bytes": {}, "roofs": None, "point": None, "expect": {},
            "clocks": {}, "compiler": ""}


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory) -> dict[str, Path]:
    """The campaign's file (100,000 variants, over 200 MB), and 100,000 variants small
    enough to be under the byte limit, so that their count refuses them."""
    directory = tmp_path_factory.mktemp("unbounded")
    files = {"206 MB": replicated(trimmed(), 100_000, directory / "huge.json"),
             "100,000 rows": replicated(skipped(), 100_000, directory / "rows.json")}
    sizes = [path.stat().st_size for path in files.values()]
    assert sizes[0] > MAX_DOCUMENT_BYTES > sizes[1]
    return files


REFUSALS = {   # each file, and how its refusal reads
    "206 MB": lambda path: f"cannot read result {path}: too large for a rooflint result (the "
                           f"limit is {MAX_DOCUMENT_BYTES} bytes)",
    "100,000 rows": lambda path: f"{path}: 100,000 variants is not a result a person reads "
                                 f"(rooflint reads up to {MAX_ROWS:,})",
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", REFUSALS)
def test_100000_variants_are_refused_in_a_few_seconds(tmp_path, campaigns, case, command):
    """The campaign's `report` and `plot` ran past 900 s (6.1 GB), `show` 172 s, `show
    --csv` 183 s: now the bytes refuse its file before it is parsed, and the count refuses
    a smaller one before a field is read."""
    path = campaigns[case]
    started = time.monotonic()
    outcome = rooflint(*COMMANDS[command](path, tmp_path))
    assert time.monotonic() - started < FEW_SECONDS
    assert_one_line_error(outcome, 2, REFUSALS[case](path))
    assert not list(tmp_path.iterdir())


def test_the_row_limit_is_the_last_count_read(tmp_path):
    """MAX_ROWS variants read; one more is refused."""
    assert len(read_result(replicated(skipped(), MAX_ROWS, tmp_path / "r.json"))
               .families[0].variants) == MAX_ROWS
    with pytest.raises(RooflintError, match=f"{MAX_ROWS + 1:,} variants is not a result"):
        read_result(replicated(skipped(), MAX_ROWS + 1, tmp_path / "r.json"))


def test_every_committed_result_is_far_inside_the_limits():
    """The margins the limits' comment claims: 40 times the largest committed document's
    bytes, 10 times its variants (the committed ResNet-50's 103 profiled kernels; a profile
    of a network's 420 kernels, all profiled, fits 10 times too)."""
    results = [p for p in COMMITTED
               if json.loads(p.read_text()).get("schema") == "rooflint.result/1"]
    variants = [sum(len(f["variants"]) for f in json.loads(p.read_text())["families"])
                for p in results]
    assert MAX_DOCUMENT_BYTES > 40 * max(p.stat().st_size for p in results)
    assert MAX_ROWS > 10 * max(variants) and MAX_ROWS > 10 * 420


# --- wrong exit: a result with nothing to show, or judged by a GPU rooflint lacks --------

def no_families(data: dict) -> None:
    data["families"] = []


@pytest.mark.parametrize("command", ["report", "show"])
def test_a_result_without_families_is_refused(tmp_path, command):
    """Exit 0 with a header alone, before."""
    bad = edited(RESULT, tmp_path / "empty.json", no_families)
    outcome = rooflint(*COMMANDS[command](bad, tmp_path))
    assert_one_line_error(outcome, 2, f"{bad}: field 'families' is empty: a result holds at "
                                      f"least one family")


def test_a_result_whose_spec_is_unknown_is_refused(tmp_path):
    """`show` printed "spec nosuchgpu" and exited 0."""
    bad = edited(RESULT, tmp_path / "gpu.json", at_top("spec_id", "nosuchgpu"))
    assert_one_line_error(rooflint("show", str(bad)), 2,
                          f"{bad}: field 'spec_id' is 'nosuchgpu', expected one of ", "h200")


# --- the JSON Schema as strict as the reader ---------------------------------------------

def without(key: str):
    """An edit leaving the document's ``key`` out."""
    def edit(data: dict) -> None:
        del data[key]
    return edit


REFUSED = {
    # the campaign's seven, which the shipped schema accepted
    "no schema": without("schema"),
    "another version": at_top("schema", "rooflint.result/2"),
    "another kind": at_top("schema", "rooflint.baseline/1"),
    "NaN median": in_tiled("time", "median_s", value=NAN),
    "NaN q1": in_tiled("time", "q1_s", value=NAN),
    "NaN sample": in_tiled("samples_s", 0, value=NAN),
    "NaN samples": in_tiled("samples_s", value=lambda s: [NAN] * len(s)),
    # and the refusals above
    "no families": no_families,
    "families left out": without("families"),
    "a family without variants": lambda data: data["families"][0].update(variants=[]),
    "unknown spec": at_top("spec_id", "nosuchgpu"),
    "infinite sample": in_tiled("samples_s", 0, value=-INF),
    "NaN intensity": in_tiled("point", "observed_ai", value=NAN),
    # a point and its verdict are made together (plot had ended in an internal error)
    "a point without its verdict": in_tiled("verdict", value=None),
    "a verdict without its point": in_tiled("point", value=None),
}


@pytest.mark.parametrize("edit", REFUSED.values(), ids=REFUSED)
def test_the_schema_refuses_what_the_reader_refuses(tmp_path, edit):
    bad = edited(RESULT, tmp_path / "result.json", edit)
    with pytest.raises(RooflintError, match=f"^{re.escape(str(bad))}"):    # its file named
        read_result(bad)
    validator = jsonschema.Draft202012Validator(schema_of("result"))
    assert not validator.is_valid(json.loads(bad.read_text()))


def test_the_schema_takes_the_non_finite_values_the_reader_takes(tmp_path):
    """An intensity is Infinity where no DRAM byte moved; an output's error may be NaN."""
    def edit(data: dict) -> None:
        in_tiled("point", value=lambda p: {**p, "dram_bytes": 0, "achieved_bandwidth": 0,
                                            "observed_ai": INF})(data)
        in_tiled("checks", 0, "rel_l2", value=NAN)(data)
        in_tiled("status", value="fail")(data)
    good = edited(RESULT, tmp_path / "result.json", edit)
    tiled = read_result(good).families[TILED[0]].variants[TILED[1]]
    assert math.isinf(tiled.point.observed_ai) and math.isnan(tiled.checks[0].rel_l2)
    assert jsonschema.Draft202012Validator(schema_of("result")).is_valid(
        json.loads(good.read_text()))


READERS = {"result": read_result, "baseline": baselines.read, "calibration": calibrations.load}


@pytest.mark.parametrize("path, kind", list(documents()))
def test_every_committed_document_is_taken_by_both(path, kind):
    READERS[kind](path)
    assert jsonschema.Draft202012Validator(schema_of(kind)).is_valid(json.loads(path.read_text()))
