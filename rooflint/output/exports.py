"""A result as a table for other tools: CSV for a spreadsheet or a notebook, Markdown for a
PR comment or an agent's prompt. One row per variant of a run, or per kernel of a profile.

The columns are declared once (COLUMNS: name and how the value is read from a variant),
and every format is an Exporter that only lays out the same header and rows, so CSV and
Markdown never disagree on what a row says. Numbers are plain (seconds, bytes/s, FLOP/s,
fractions of 1) in CSV, for a program to read; Markdown shows them as the terminal does.

An Export is one of these asked of a command (``--csv``, ``--markdown``), or ``--html``,
the page `rooflint report` writes of the same results: what each holds is said here, and
where it goes (a file, or standard output) is the command's (commands/writing.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rooflint.common.printable import printable
from rooflint.analysis.evidence import pct
from rooflint.common.units import format_rate, format_time
from rooflint.formats.results import FamilyResult, RunResult, VariantResult


@dataclass(frozen=True)
class Cell:
    """A value as a program reads it (``raw``) and as a person does (``shown``)."""

    raw: str
    shown: str
    text: bool = False          # words from a document (a name, a move), not a number


Value = Callable[[FamilyResult, VariantResult], "float | str | None"]


@dataclass(frozen=True)
class Column:
    name: str
    value: Value
    show: Callable[[float], str] = lambda x: f"{x:.3g}"


def _level(name: str, field: str) -> Value:
    def read(_: FamilyResult, v: VariantResult) -> float | None:
        found = next((level for level in v.levels if level.name == name), None)
        return getattr(found, field) if found else None
    return read


def _point(field: str) -> Value:
    return lambda _, v: getattr(v.point, field) if v.point else None


def _top_move(field: str) -> Value:
    return lambda _, v: getattr(v.verdict.moves[0], field) if v.verdict and v.verdict.moves \
        else None


def _share(field: str) -> Value:
    return lambda _, v: getattr(v.share, field) if v.share else None


def _times(x: float) -> str:
    return f"{x:.2f}x"


COLUMNS: tuple[Column, ...] = (
    Column("family", lambda f, _: f.name),
    Column("variant", lambda _, v: v.name),
    Column("status", lambda _, v: v.status),
    Column("precision", lambda _, v: v.precision),
    Column("time_s", lambda _, v: v.time.median_s if v.time else None, format_time),
    Column("time_spread", lambda _, v: v.time.spread if v.time else None, pct),
    Column("flops_per_s", _point("achieved_flops"), lambda x: format_rate(x, "FLOP/s")),
    Column("compute_fraction", _point("compute_fraction"), pct),
    Column("dram_bytes_per_s", _point("achieved_bandwidth"), lambda x: format_rate(x, "B/s")),
    Column("dram_fraction", _point("dram_fraction"), pct),
    Column("observed_ai", _point("observed_ai")),
    Column("algorithmic_ai", lambda _, v: v.point.algorithmic_ai
           if v.point and v.point.algorithmic_known else None),
    Column("applicable_roof_flops_per_s", _point("applicable_roof"),
           lambda x: format_rate(x, "FLOP/s")),
    Column("roof_fraction", _point("roof_fraction"), pct),
    Column("l2_ai", _level("l2", "intensity")),
    Column("l2_fraction", _level("l2", "fraction"), pct),
    Column("l1_ai", _level("l1", "intensity")),
    Column("l1_fraction", _level("l1", "fraction"), pct),
    Column("bound", lambda _, v: v.verdict.bound if v.verdict else None),
    Column("binding_level", lambda _, v: v.verdict.level if v.verdict else None),
    Column("top_move", _top_move("action")),
    Column("move_direction", _top_move("direction")),
    Column("move_gain", _top_move("gain"), _times),
    Column("share", _share("share"), pct),
    Column("launches", _share("launches"), lambda x: f"{x:.0f}"),
    Column("upside_s", _share("upside_s"), format_time),
)


def _cell(column: Column, family: FamilyResult, variant: VariantResult) -> Cell:
    value = column.value(family, variant)
    if value is None:
        return Cell("", "-")
    if isinstance(value, str):
        return Cell(value, value, text=True)
    return Cell(repr(float(value)) if isinstance(value, float) else str(value),
                column.show(value))


def table(results: Sequence[RunResult]) -> tuple[list[str], list[list[Cell]]]:
    """The header and one row per variant (or profiled kernel) of every result, in order;
    a column no row has a value in (a run's share, a profile's algorithmic AI) left out."""
    rows = [[_cell(c, f, v) for c in COLUMNS]
            for result in results for f in result.families for v in f.variants]
    kept = [i for i in range(len(COLUMNS)) if any(row[i].raw for row in rows)]
    return [COLUMNS[i].name for i in kept], [[row[i] for i in kept] for row in rows]


class Exporter(Protocol):
    """A format of the table: the same header and rows, laid out (output/outputs.py tells
    a file of it, to replace only a table of rooflint's, by parsing it back)."""

    name: str

    def render(self, header: list[str], rows: list[list[Cell]]) -> str: ...


FIRST = (COLUMNS[0].name, COLUMNS[1].name)      # every table's first two columns


class Csv:
    """RFC 4180 CSV, the values raw: a spreadsheet or pandas reads them as numbers. A cell
    is quoted when it holds a comma, a quote or any line break, not only the line ending
    written (\\n): a reader that ends a row at a CR (Python's csv does) or at another
    Unicode line break would otherwise start a new row, and a new cell, inside a name."""

    name = "a rooflint CSV table"

    def render(self, header: list[str], rows: list[list[Cell]]) -> str:
        lines = [header, *([_inert(cell) for cell in row] for row in rows)]
        return "".join(",".join(_field(text) for text in line) + "\n" for line in lines)


def _field(text: str) -> str:
    """``text`` as a CSV cell: quoted, its quotes doubled, if it holds a comma, a quote or
    a line break (any of str.splitlines': \\r, \\v, U+2028 as well as \\n)."""
    if "," in text or '"' in text or "".join(text.splitlines()) != text:
        return '"' + text.replace('"', '""') + '"'
    return text


# A spreadsheet runs a cell that starts so as a formula (=HYPERLINK(...) from a variant's
# name in a result someone else wrote): such text is written after a quote, as OWASP's
# advice on CSV injection has it; numbers, a negative one too, are left as they are.
# Every line of the cell is guarded, not its start only: a reader that splits a cell at
# its line breaks (or ends a row at a CR) starts a cell with each line.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _inert(cell: Cell) -> str:
    """``cell`` as CSV holds it: text from a document with a quote before each of its
    lines that a spreadsheet would run."""
    if not cell.text:
        return cell.raw
    return "".join("'" + line if line.startswith(_FORMULA_STARTS) else line
                   for line in cell.raw.splitlines(keepends=True))


class Markdown:
    """A GitHub-flavoured table, the values as the terminal shows them; text from the
    document made printable, its pipes escaped, so no cell breaks the table."""

    name = "a rooflint Markdown table"

    def render(self, header: list[str], rows: list[list[Cell]]) -> str:
        lines = [_row(header), "|" + "---|" * len(header)]
        lines += [_row([cell.shown for cell in row]) for row in rows]
        return "\n".join(lines) + "\n"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(printable(c).replace("|", "\\|") for c in cells) + " |"


EXPORTERS: dict[str, Exporter] = {"csv": Csv(), "markdown": Markdown()}


def export(results: Sequence[RunResult], format: str) -> str:
    """The results' table in ``format`` (a key of EXPORTERS)."""
    return EXPORTERS[format].render(*table(results))


PAGE = "html"        # the export that is the report's page, not a table


@dataclass(frozen=True)
class Export:
    """A document asked of a command beside its result, and where it goes (``-``: standard
    output)."""

    option: str           # --csv
    format: str           # a key of EXPORTERS, or PAGE
    path: Path


def rendered(wanted: Export, results: Sequence[RunResult], name: str) -> str:
    """The text ``wanted`` holds: the results' table, or their page headed by ``name``
    (the result document's path, or what made the result)."""
    return _page(results, name) if wanted.format == PAGE else export(results, wanted.format)


def _page(results: Sequence[RunResult], name: str) -> str:
    """The report's page. Its module is imported here, not at the top: it draws with
    matplotlib, whose import is most of the time a profile takes to start (about 0.3 s
    warm, seconds on a fresh machine), and only --html needs it."""
    from rooflint.output.html_report import Document, report_html
    return report_html([Document(name, r) for r in results])
