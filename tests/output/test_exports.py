"""CSV and Markdown tables of results (issue 27): one row per variant or profiled kernel,
the same columns in both, read back by a CSV reader and a Markdown table parser; `show`,
`run` and `profile` take --csv, --markdown and --html (`rooflint report`'s page of the
result), each a file or - for standard output."""

from __future__ import annotations

import csv
import io
import json

import pytest

from edges import REPO, assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.formats.results import read_result
from rooflint.output.exports import COLUMNS, export, table

BUNDLED = REPO / "examples" / "h200-bundled.json"
PROFILE = REPO / "examples" / "profile" / "h200-profile-train-eager.json"


def variants_of(result):
    return [(f, v) for f in result.families for v in f.variants]


def markdown_rows(text: str) -> list[list[str]]:
    """A GitHub table's cells, the header first, the rule left out; ``\\|`` is a pipe."""
    lines = text.strip().splitlines()
    assert lines[1].strip("|").split("|") == ["---"] * len(lines[0].split(" | "))
    return [[cell.replace("\\|", "|") for cell in _cells(line)] for line in [lines[0], *lines[2:]]]


def _cells(line: str) -> list[str]:
    inner = line.strip()[2:-2]
    out, cell, escaped = [], "", False
    for char in inner:
        if char == "|" and not escaped:
            out.append(cell.strip())
            cell = ""
        else:
            cell += char
        escaped = char == "\\"
    return [*out, cell.strip()]


def test_csv_round_trips_every_variant_with_its_numbers():
    result = read_result(BUNDLED)
    rows = list(csv.DictReader(io.StringIO(export([result], "csv"))))
    assert [(r["family"], r["variant"]) for r in rows] == \
        [(f.name, v.name) for f, v in variants_of(result)]
    for row, (_, v) in zip(rows, variants_of(result)):
        if v.point:
            assert float(row["time_s"]) == v.time.median_s
            assert float(row["flops_per_s"]) == v.point.achieved_flops
            assert float(row["dram_fraction"]) == v.point.dram_fraction
            assert row["bound"] == v.verdict.bound
        if v.verdict and v.verdict.moves:
            assert row["top_move"] == v.verdict.moves[0].action
            gain = v.verdict.moves[0].gain
            assert (float(row["move_gain"]) == gain) if gain is not None else row["move_gain"] == ""
        l1 = next((level for level in v.levels if level.name == "l1"), None)
        if l1 and l1.fraction is not None:
            assert float(row["l1_fraction"]) == l1.fraction


def test_markdown_is_the_brief_table_as_shown():
    result = read_result(BUNDLED)
    header, cells = table([result], brief=True)
    rows = markdown_rows(export([result], "markdown"))
    assert rows[0] == ["family", "variant", "time", "of roof", "bound", "top move", "gain"]
    assert header == ["family", "variant", "time_s", "roof_fraction", "bound", "top_move",
                      "move_gain"]
    assert [row[:2] for row in rows[1:]] == [[f.name, v.name] for f, v in variants_of(result)]
    assert all(len(row) == len(header) for row in rows)
    assert [row for row in rows[1:]] == [[c.shown for c in r] for r in cells]


@pytest.mark.parametrize("path", [BUNDLED, PROFILE], ids=["run", "profile"])
def test_the_markdown_summary_fits_a_pr_comment(path):
    """At most 8 columns under formatted headers; a profile's kernel says what it could
    save, a run's variant what its move could gain."""
    header = markdown_rows(export([read_result(path)], "markdown"))[0]
    assert len(header) <= 8 and not any("_" in title for title in header)
    assert ("saves" in header) == (path == PROFILE) and ("gain" in header) == (path == BUNDLED)


def test_the_csv_holds_the_gpu_the_raw_counts_and_where_a_kernel_came_from():
    """A pandas user groups by GPU, by operator or by source line, and sums bytes and
    FLOPs: the profile's CSV has them, each kernel's origin the one with most launches, as
    the program's fixes group it."""
    import csv
    import io
    result = read_result(PROFILE)
    rows = list(csv.DictReader(io.StringIO(export([result], "csv"))))
    assert {row["gpu"] for row in rows} == {result.gpu.name}
    by_name = {v.name: v for f in result.families for v in f.variants}
    for row in rows:
        v = by_name[row["variant"]]
        if v.counters:
            assert float(row["dram_bytes"]) == pytest.approx(v.dram_bytes["ncu"])
            assert float(row["l2_bytes"]) == pytest.approx(v.counters.l2_bytes)
        main = max(v.share.origins, key=lambda o: o.launches, default=None)
        assert row["source_line"] == ((main.line or "") if main else "")
        assert row["operator"] == ((main.operator or "") if main else "")
    assert any(row["source_line"].startswith("train_step.py:") for row in rows)


def test_a_profile_has_shares_and_no_algorithmic_intensity():
    """A profile's kernels have a share, launches and an upside; nobody counted their
    compulsory bytes, so that column, empty in every row, is left out."""
    header, _ = table([read_result(PROFILE)])
    assert {"share", "launches", "upside_s"} <= set(header)
    assert "algorithmic_ai" not in header
    run_header, _ = table([read_result(BUNDLED)])
    assert "share" not in run_header and "algorithmic_ai" in run_header
    assert header == [c.name for c in COLUMNS if c.name in header]      # in declared order


def test_names_cannot_break_the_markdown_table(tmp_path):
    data = json.loads(BUNDLED.read_text())
    data["families"][0]["variants"][0]["name"] = "a|b\x1b[2J"
    edited = tmp_path / "r.json"
    edited.write_text(json.dumps(data))
    text = export([read_result(edited)], "markdown")
    assert "a\\|b\\x1b[2J" in text and "\x1b" not in text
    assert markdown_rows(text)[1][1] == "a|b\\x1b[2J"


def test_show_writes_the_tables_or_prints_one(tmp_path):
    csv_path, md_path = tmp_path / "t.csv", tmp_path / "t.md"
    done = rooflint("show", str(BUNDLED), "--csv", str(csv_path), "--markdown", str(md_path))
    assert done.code == 0, done.stderr
    assert "roofline" in done.stdout.lower() or "variant" in done.stdout   # the tables printed
    assert csv_path.read_text() == export([read_result(BUNDLED)], "csv")
    assert md_path.read_text() == export([read_result(BUNDLED)], "markdown")
    piped = rooflint("show", str(BUNDLED), "naive", "tiled", "--csv", "-")
    assert piped.code == 0, piped.stderr
    rows = list(csv.DictReader(io.StringIO(piped.stdout)))          # nothing else on stdout
    assert [r["variant"] for r in rows] == ["naive", "tiled"]
    again = rooflint("show", str(BUNDLED), "--csv", str(csv_path))  # its own table: replaced
    assert again.code == 0, again.stderr


@pytest.mark.parametrize("args, fragments", [
    (["--csv", "-", "--markdown", "-"], ["--csv and --markdown", "standard output"]),
    (["--csv", "{notes}"], ["--csv", "is not a rooflint CSV table"]),
    (["--markdown", "{notes}"], ["--markdown", "is not a rooflint Markdown table"]),
    (["--csv", "{result}"], ["--csv", "does not write over a file it reads"]),
    (["--html", "{result}"], ["--html", "does not write over a file it reads"]),
    (["--html", "-", "--csv", "-"], ["--csv and --html", "standard output"]),
    (["--csv", "{missing}/t.csv"], ["cannot write", "no directory"]),
])
def test_bad_table_outputs_are_one_line_and_touch_nothing(tmp_path, args, fragments):
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n")
    result = tmp_path / "r.json"
    result.write_bytes(BUNDLED.read_bytes())
    before = snapshot(tmp_path)
    filled = [a.format(notes=notes, result=result, missing=tmp_path / "nowhere") for a in args]
    assert_one_line_error(rooflint("show", str(result), *filled), 2, *fragments)
    assert_intact(before)


def test_run_and_profile_take_the_same_table_options():
    for command in ("run", "profile", "show"):
        help_text = rooflint(command, "--help", env={"COLUMNS": "200"}).stdout
        assert all(option in help_text for option in ("--csv", "--markdown", "--html")), command


def test_html_is_the_report_of_the_result(tmp_path):
    """show --html writes the page `rooflint report` writes of the same document; - prints
    it alone; a file that is not a report is refused, untouched."""
    page, report = tmp_path / "page.html", tmp_path / "report.html"
    for profile_or_run in (BUNDLED, PROFILE):
        shown = rooflint("show", str(profile_or_run), "--html", str(page))
        assert shown.code == 0, shown.stderr
        said = shown.stderr.replace("\n", "")        # a status line, on stderr
        assert "report written to" in said and str(page) in said
        made = rooflint("report", str(profile_or_run), "-o", str(report))
        assert made.code == 0, made.stderr
        assert page.read_text() == report.read_text()
    piped = rooflint("show", str(BUNDLED), "--html", "-")
    assert piped.code == 0 and piped.stdout.lstrip().lower().startswith("<!doctype html")
    assert piped.stdout.rstrip().endswith("</html>")
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n")
    before = snapshot(tmp_path)
    assert_one_line_error(rooflint("show", str(BUNDLED), "--html", str(notes)), 2, "--html",
                          "is not a rooflint report")
    assert_intact(before)


def test_a_name_cannot_run_as_a_spreadsheet_formula(tmp_path):
    """A variant named =HYPERLINK(...) (a result someone else wrote) is written after a
    quote, so a spreadsheet shows it as text; numbers are written as they are."""
    data = json.loads(BUNDLED.read_text())
    data["families"][0]["variants"][0]["name"] = '=HYPERLINK("http://x","y")'
    edited = tmp_path / "r.json"
    edited.write_text(json.dumps(data))
    rows = list(csv.DictReader(io.StringIO(export([read_result(edited)], "csv"))))
    assert rows[0]["variant"] == '\'=HYPERLINK("http://x","y")'
    assert all(not r["variant"].startswith("=") for r in rows)
    assert float(rows[0]["time_s"]) > 0
