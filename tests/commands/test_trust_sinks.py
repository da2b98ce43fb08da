"""Issue 45, rows "security", "terminal injection" and "internal error": every text sink
escapes alike and cannot fail.

A CSV cell with a line break in it is quoted and every line of it formula-guarded; what
reaches standard output or error (a CSV for ``-``, a message that echoes a path) passes
one escaping; a surrogate in a name or a path is written as an escape, in a file as on a
strict terminal, never an internal error. The exact inputs of the campaign, run as a user
types them (tests/edges.py's promise: no traceback, one line for an error).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from rich.text import Text

from edges import rooflint
from rooflint.commands.stdio import PrintableConsole
from rooflint.common.printable import printable
from rooflint.formats.results import read_result
from rooflint.output.exports import export
from test_trust_outputs import EVIL, RAW, RESULT, assert_shown_escaped

FORMULA = "decode_attention\r=cmd|' /C calc'!A0"     # the campaign's name, CR inside
SURROGATE = "tiled\udcff"                            # JSON's "tiled\udcff"
STRICT = {"PYTHONIOENCODING": "utf-8"}               # as a UTF-8 locale's terminal is
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")        # OWASP's, as the issue names them


def named(tmp_path: Path, *names: str) -> Path:
    """The committed result with its first variants renamed ``names``, as a colleague's
    file could name them."""
    data = json.loads(RESULT.read_text())
    for variant, name in zip(data["families"][0]["variants"], names):
        variant["name"] = name
    path = tmp_path / "names.json"
    path.write_text(json.dumps(data))
    return path


def cells(text: str) -> list[list[str]]:
    """A CSV read back as Python's csv reads a file opened as its documentation says."""
    return list(csv.reader(io.StringIO(text, newline="")))


def assert_no_line_runs(cell: str) -> None:
    """No line of ``cell`` starts as a spreadsheet formula."""
    assert not any(line.startswith(FORMULA_STARTS) for line in cell.splitlines()), cell


# --- security: the formula guard covers the whole cell ---------------------------------

def test_a_name_with_a_cr_inside_is_quoted_and_guarded_on_every_line(tmp_path):
    table = tmp_path / "out.csv"
    outcome = rooflint("show", str(named(tmp_path, FORMULA)), "--csv", str(table))
    assert outcome.code == 0, outcome.stderr
    text = table.read_bytes().decode()
    rows = cells(text)
    assert rows[1][1] == "decode_attention\r'=cmd|' /C calc'!A0"
    assert len(rows) == 1 + sum(len(f.variants) for f in read_result(RESULT).families)
    for row in rows[1:]:
        assert_no_line_runs(row[1])
    # A reader that ends rows at every line break, quotes or not, still meets no formula.
    assert text.count("=cmd") == text.count("'=cmd") == 1


@pytest.mark.parametrize("line_break", ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e",
                                        "\x85", "\u2028", "\u2029"])
def test_every_line_break_is_quoted(tmp_path, line_break):
    """str.splitlines' every line break, not only the line ending the writer uses."""
    name = f"a{line_break}@SUM(1+1)"
    text = export([read_result(named(tmp_path, name))], "csv")
    assert f'"a{line_break}\'@SUM(1+1)"' in text
    assert cells(text)[1][1] == f"a{line_break}'@SUM(1+1)"


# --- terminal injection: one escaping for every sink -----------------------------------

def test_csv_to_standard_output_escapes_names(tmp_path):
    outcome = rooflint("show", str(named(tmp_path, f"tiled{EVIL}")), "--csv", "-")
    assert outcome.code == 0, outcome.stderr
    assert_shown_escaped(outcome)
    assert cells(outcome.stdout)[1][1] == f"tiled{printable(EVIL)}"


def test_a_path_echoed_in_a_message_is_escaped(tmp_path):
    picture = "\x1b[2J...x.svg"
    outcome = rooflint("plot", str(RESULT), "-o", picture, cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    assert not any(c in outcome.stdout + outcome.stderr for c in RAW)
    assert "roofline drawn to \\x1b[2J...x.svg" in outcome.stderr
    assert (tmp_path / picture).read_bytes().lstrip().startswith(b"<")   # named as asked


def test_the_console_escapes_text_and_keeps_its_own_styles():
    """On a terminal rich writes escape sequences of its own (bold); a name's are shown
    (rich itself drops the BEL)."""
    out = io.StringIO()
    console = PrintableConsole(file=out, force_terminal=True, color_system="standard")
    console.print(Text(f"tiled{EVIL}", style="bold"))
    assert out.getvalue() == "\x1b[1mtiled\\x1b]0;title\\x1b[2J\x1b[0m\n"


# --- internal error: encoders that cannot fail -----------------------------------------

def test_a_surrogate_in_a_name_is_escaped_in_a_csv_file(tmp_path):
    table = tmp_path / "out.csv"
    outcome = rooflint("show", str(named(tmp_path, SURROGATE)), "--csv", str(table),
                       env=STRICT)
    assert outcome.code == 0 and outcome.stderr == f"csv table written to {table}\n"
    assert cells(table.read_text())[1][1] == "tiled\\udcff"


def test_a_surrogate_in_a_name_is_escaped_on_standard_output(tmp_path):
    outcome = rooflint("show", str(named(tmp_path, SURROGATE)), "--csv", "-", env=STRICT)
    assert outcome.code == 0 and not outcome.stderr, outcome.stderr
    assert cells(outcome.stdout)[1][1] == "tiled\\udcff"


def test_a_report_under_an_undecodable_file_name_is_written_and_said(tmp_path):
    page = "r\udcff.html"                  # $'r\377.html': the byte Python cannot decode
    outcome = rooflint("report", str(RESULT), "-o", page, cwd=tmp_path, env=STRICT)
    assert outcome.code == 0 and not outcome.stdout, outcome.stdout
    assert outcome.stderr == "report written to r\\udcff.html\n"
    assert (tmp_path / page).read_text().startswith("<!DOCTYPE")


def test_text_the_terminal_cannot_encode_is_escaped(tmp_path):
    """A strict ASCII terminal: the stream itself writes what it cannot spell escaped."""
    outcome = rooflint("show", str(named(tmp_path, "tiled→2")), "--csv", "-",
                       env={"PYTHONIOENCODING": "ascii"})
    assert outcome.code == 0 and not outcome.stderr, outcome.stderr
    assert cells(outcome.stdout)[1][1] == "tiled\\u21922"
