"""The vocabularies of the documents (issue 26): a variant's Status and a verdict's Bound,
each an enum of the words the documents always held. A committed example read, written
and read again is the same document; one whose words are the enum members, as a fresh
run makes it, is written byte for byte as one holding the plain words a file gives."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from itertools import cycle
from pathlib import Path
from typing import Callable

import pytest

from rooflint.analysis.evidence import Bound
from rooflint.common.errors import RooflintError
from rooflint.common.vocabularies import CacheMode, CountersMode, Precision
from rooflint.formats import baseline as baselines
from rooflint.formats.results import RunResult, read_result, write_result
from rooflint.formats.status import Status

REPO = Path(__file__).resolve().parents[2]
RESULTS = sorted(p for p in REPO.glob("examples/**/*.json")
                 if json.loads(p.read_text()).get("schema") == "rooflint.result/1")
BASELINES = sorted(REPO.glob("examples/ci/*-baseline.json"))


def relabelled(result: RunResult, status: Callable[[object], str],
               bound: Callable[[object], str]) -> RunResult:
    """``result`` with each variant's status ``status(its status)`` and its verdict's bound
    ``bound(its bound)``."""
    def relabel(v):
        verdict = v.verdict and replace(v.verdict, bound=bound(v.verdict.bound))
        return replace(v, status=status(v.status), verdict=verdict)
    return replace(result, families=[replace(f, variants=[relabel(v) for v in f.variants])
                                     for f in result.families])


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: str(p.relative_to(REPO)))
def test_a_committed_result_round_trips(path, tmp_path):
    result = read_result(path)
    write_result(result, tmp_path / "words.json")
    write_result(relabelled(result, Status, Bound), tmp_path / "members.json")
    assert (tmp_path / "members.json").read_bytes() == (tmp_path / "words.json").read_bytes()
    assert read_result(tmp_path / "members.json") == result


def test_every_word_round_trips(tmp_path):
    """The examples hold only ok: here the variants of one take every status and every
    bound in turn, once as members and once as the plain words."""
    statuses, bounds = cycle(Status), cycle(Bound)
    members = relabelled(read_result(REPO / "examples" / "h100-bundled.json"),
                         lambda _: next(statuses), lambda _: next(bounds))
    words = relabelled(members, str, str)
    variants = [v for f in members.families for v in f.variants]
    assert {v.status for v in variants} == set(Status)
    assert {v.verdict.bound for v in variants if v.verdict} == set(Bound)
    write_result(members, tmp_path / "members.json")
    write_result(words, tmp_path / "words.json")
    assert (tmp_path / "members.json").read_bytes() == (tmp_path / "words.json").read_bytes()
    back = read_result(tmp_path / "members.json")
    assert back == members == words


@pytest.mark.parametrize("path", BASELINES, ids=lambda p: p.name)
def test_a_committed_baseline_round_trips(path, tmp_path):
    baseline = baselines.read(path)
    members = replace(baseline, entries=[
        replace(e, status=Status(e.status), bound=e.bound and Bound(e.bound))
        for e in baseline.entries])
    baselines.write(members, tmp_path / "baseline.json")
    assert (tmp_path / "baseline.json").read_bytes() == path.read_bytes()
    assert baselines.read(tmp_path / "baseline.json") == baseline


@pytest.mark.parametrize("field, vocabulary", [("cache", CacheMode), ("counters", CountersMode)])
def test_a_settings_word_outside_its_vocabulary_is_refused(tmp_path, field, vocabulary):
    """The words `run --cache` and `--counters` take are the words a result may hold."""
    data = json.loads((REPO / "examples" / "h200-bundled.json").read_text())
    assert data["settings"][field] in list(vocabulary)
    data["settings"][field] = "tepid"
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(RooflintError, match=rf"field 'settings.{field}' is 'tepid', expected "
                                            rf"one of {', '.join(vocabulary)}"):
        read_result(tmp_path / "r.json")


def test_every_precision_round_trips(tmp_path):
    """A variant's precision written as a member is the same document as one holding its
    plain word, for every precision, and reads back as that word."""
    precisions = cycle(Precision)
    members = read_result(REPO / "examples" / "h100-bundled.json")
    members = replace(members, families=[
        replace(f, variants=[replace(v, precision=next(precisions)) for v in f.variants])
        for f in members.families])
    words = replace(members, families=[
        replace(f, variants=[replace(v, precision=str(v.precision)) for v in f.variants])
        for f in members.families])
    assert {v.precision for f in members.families for v in f.variants} == set(Precision)
    write_result(members, tmp_path / "members.json")
    write_result(words, tmp_path / "words.json")
    assert (tmp_path / "members.json").read_bytes() == (tmp_path / "words.json").read_bytes()
    assert read_result(tmp_path / "members.json") == members == words


def test_a_precision_outside_its_vocabulary_is_refused(tmp_path):
    data = json.loads((REPO / "examples" / "h200-bundled.json").read_text())
    assert data["families"][0]["variants"][0]["precision"] in list(Precision)
    data["families"][0]["variants"][0]["precision"] = "fp31"
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(RooflintError, match=rf"field 'families\[0\].variants\[0\].precision' "
                                            rf"is 'fp31', expected one of {', '.join(Precision)}"):
        read_result(tmp_path / "r.json")


def test_the_command_line_offers_each_vocabulary_whole():
    from edges import rooflint
    text = rooflint("run", "--help", env={"COLUMNS": "200"}).stdout
    for vocabulary in (CacheMode, CountersMode):     # typer 0.16 writes [cold|warm]
        assert re.search(rf"[<\[]{re.escape('|'.join(vocabulary))}[>\]]", text), text
