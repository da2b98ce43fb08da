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
from rooflint.common.units import format_bytes, format_rate, format_time
from rooflint.formats.results import FamilyResult, RunResult, VariantResult
from rooflint.judge.program_fixes import main_origin


@dataclass(frozen=True)
class Cell:
    """A value as a program reads it (``raw``) and as a person does (``shown``)."""

    raw: str
    shown: str
    text: bool = False          # words from a document (a name, a move), not a number


@dataclass(frozen=True)
class Row:
    """Where a row's values come from: a variant (or a profiled kernel), its family and the
    result that holds them."""

    result: RunResult
    family: FamilyResult
    variant: VariantResult


Value = Callable[[Row], "float | str | None"]


@dataclass(frozen=True)
class Column:
    name: str                   # the CSV's header, and the API's: plain, with units
    value: Value
    show: Callable[[float], str] = lambda x: f"{x:.3g}"
    title: str = ""             # the Markdown summary's header, where it has the column
    #                             (BRIEF); the name where none


def _level(name: str, field: str) -> Value:
    def read(r: Row) -> float | None:
        found = next((level for level in r.variant.levels if level.name == name), None)
        return getattr(found, field) if found else None
    return read


def _point(field: str) -> Value:
    return lambda r: getattr(r.variant.point, field) if r.variant.point else None


def _top_move(field: str) -> Value:
    return lambda r: getattr(r.variant.verdict.moves[0], field) \
        if r.variant.verdict and r.variant.verdict.moves else None


def _share(field: str) -> Value:
    return lambda r: getattr(r.variant.share, field) if r.variant.share else None


def _counted(field: str) -> Value:
    """A byte count Nsight Compute measured over the variant's launches."""
    return lambda r: getattr(r.variant.counters, field) if r.variant.counters else None


def _origin(field: str) -> Value:
    """The operator or source line of a profiled kernel's main origin (the one the program's
    fixes group it by: program_fixes.main_origin)."""
    def read(r: Row) -> str | None:
        main = main_origin(r.variant) if r.variant.share else None
        return getattr(main, field) if main else None
    return read


def _times(x: float) -> str:
    return f"{x:.2f}x"


def _bytes(x: float) -> str:
    return format_bytes(x)


COLUMNS: tuple[Column, ...] = (
    Column("family", lambda r: r.family.name, title="family"),
    Column("variant", lambda r: r.variant.name, title="variant"),
    Column("gpu", lambda r: r.result.gpu.name),
    Column("status", lambda r: r.variant.status),
    Column("precision", lambda r: r.variant.precision),
    Column("time_s", lambda r: r.variant.time.median_s if r.variant.time else None,
           format_time, title="time"),
    Column("time_spread", lambda r: r.variant.time.spread if r.variant.time else None, pct),
    Column("share", _share("share"), pct, title="share"),
    Column("launches", _share("launches"), lambda x: f"{x:.0f}"),
    Column("flops", lambda r: r.variant.flops.get("ncu"), lambda x: format_rate(x, "FLOP")),
    Column("model_flops", lambda r: r.variant.flops.get("model"),
           lambda x: format_rate(x, "FLOP")),
    Column("dram_bytes", lambda r: r.variant.dram_bytes.get("ncu"), _bytes),
    Column("model_dram_bytes", lambda r: r.variant.dram_bytes.get("model"), _bytes),
    Column("l2_bytes", _counted("l2_bytes"), _bytes),
    Column("l1_bytes", _counted("l1_bytes"), _bytes),
    Column("flops_per_s", _point("achieved_flops"), lambda x: format_rate(x, "FLOP/s")),
    Column("compute_fraction", _point("compute_fraction"), pct),
    Column("dram_bytes_per_s", _point("achieved_bandwidth"), lambda x: format_rate(x, "B/s")),
    Column("dram_fraction", _point("dram_fraction"), pct),
    Column("observed_ai", _point("observed_ai")),
    Column("algorithmic_ai", lambda r: r.variant.point.algorithmic_ai
           if r.variant.point and r.variant.point.algorithmic_known else None),
    Column("applicable_roof_flops_per_s", _point("applicable_roof"),
           lambda x: format_rate(x, "FLOP/s")),
    Column("roof_fraction", _point("roof_fraction"), pct, title="of roof"),
    Column("l2_ai", _level("l2", "intensity")),
    Column("l2_fraction", _level("l2", "fraction"), pct),
    Column("l1_ai", _level("l1", "intensity")),
    Column("l1_fraction", _level("l1", "fraction"), pct),
    Column("bound", lambda r: r.variant.verdict.bound if r.variant.verdict else None,
           title="bound"),
    Column("binding_level", lambda r: r.variant.verdict.level if r.variant.verdict else None),
    Column("top_move", _top_move("action"), title="top move"),
    Column("move_direction", _top_move("direction")),
    Column("move_gain", _top_move("gain"), _times, title="gain"),
    Column("upside_s", _share("upside_s"), format_time, title="saves"),
    Column("operator", _origin("operator")),
    Column("source_line", _origin("line")),
)
# The Markdown summary's columns, sized for a PR comment: a run's six or seven, a profile's
# eight (its kernel's saving in place of its move's gain: BRIEF_INSTEAD).
BRIEF = tuple(c.name for c in COLUMNS if c.title)
BRIEF_INSTEAD = {"upside_s": "move_gain"}
TITLES = {c.name: c.title for c in COLUMNS if c.title}
NAMES = {title: name for name, title in TITLES.items()}


NAMED = {c.name: c for c in COLUMNS}


def values(results: Sequence[RunResult], brief: bool = False
           ) -> tuple[list[str], list[list[float | str | None]]]:
    """The header and one row per variant (or profiled kernel) of every result, in order,
    each value as the document holds it (None: none); a column no row has a value in (a
    run's share, a profile's algorithmic AI) left out; ``brief``: the BRIEF columns alone.
    The notebook API's DataFrame is this table (rooflint.to_pandas)."""
    rows = [[c.value(Row(result, f, v)) for c in COLUMNS]
            for result in results for f in result.families for v in f.variants]
    kept = [i for i in range(len(COLUMNS)) if any(row[i] not in (None, "") for row in rows)
            and (not brief or COLUMNS[i].name in BRIEF)]
    names = [COLUMNS[i].name for i in kept]
    if brief:
        kept = [i for i in kept if COLUMNS[i].name not in
                {BRIEF_INSTEAD[n] for n in names if n in BRIEF_INSTEAD}]
    return [COLUMNS[i].name for i in kept], [[row[i] for i in kept] for row in rows]


def table(results: Sequence[RunResult], brief: bool = False
          ) -> tuple[list[str], list[list[Cell]]]:
    """The values' table (header and rows, as :func:`values` says) in cells, as a format
    lays them out."""
    header, rows = values(results, brief)
    columns = [NAMED[name] for name in header]
    return header, [[_cell(c, value) for c, value in zip(columns, row)] for row in rows]


def _cell(column: Column, value: float | str | None) -> Cell:
    if value is None:
        return Cell("", "-")
    if isinstance(value, str):
        return Cell(value, value, text=True)
    return Cell(repr(float(value)) if isinstance(value, float) else str(value),
                column.show(value))


class Exporter(Protocol):
    """A format of the table: the same header and rows, laid out (output/outputs.py tells
    a file of it, to replace only a table of rooflint's, by parsing it back)."""

    name: str
    brief: bool                  # the BRIEF columns alone, or every one

    def render(self, header: list[str], rows: list[list[Cell]]) -> str: ...


FIRST = (COLUMNS[0].name, COLUMNS[1].name)      # every table's first two columns


class Csv:
    """RFC 4180 CSV of every column, the values raw: a spreadsheet or pandas reads them as
    numbers. A cell is quoted when it holds a comma, a quote or any line break, not only
    the line ending written (\\n): a reader that ends a row at a CR (Python's csv does) or
    at another Unicode line break would otherwise start a new row, and a new cell, inside a
    name."""

    name = "a rooflint CSV table"
    brief = False

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
    """A GitHub-flavoured table of the BRIEF columns (export asks for them), under their
    titles, the values as the terminal shows them; text from the document made printable,
    its pipes escaped, so no cell breaks the table."""

    name = "a rooflint Markdown table"
    brief = True

    def render(self, header: list[str], rows: list[list[Cell]]) -> str:
        lines = [_row(titles(header)), "|" + "---|" * len(header)]
        lines += [_row([cell.shown for cell in row]) for row in rows]
        return "\n".join(lines) + "\n"


def titles(header: list[str]) -> list[str]:
    """The summary's headers of ``header``'s columns (the name of one with no title)."""
    return [TITLES.get(name, name) for name in header]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(printable(c).replace("|", "\\|") for c in cells) + " |"


EXPORTERS: dict[str, Exporter] = {"csv": Csv(), "markdown": Markdown()}


def export(results: Sequence[RunResult], format: str) -> str:
    """The results' table in ``format`` (a key of EXPORTERS)."""
    exporter = EXPORTERS[format]
    return exporter.render(*table(results, exporter.brief))


PAGE = "html"        # the export that is the report's page, not a table


@dataclass(frozen=True)
class Export:
    """A document asked of a command beside its result, and where it goes (``-``: standard
    output)."""

    option: str           # --csv
    format: str           # a key of EXPORTERS, or PAGE
    path: Path


def rendered(wanted: Export, results: Sequence[RunResult], source: Path | str) -> str:
    """The text ``wanted`` holds: the results' table, or their page, which names them by
    ``source``: the result document's path, or words saying what made the results."""
    return _page(results, source) if wanted.format == PAGE else export(results, wanted.format)


def _page(results: Sequence[RunResult], source: Path | str) -> str:
    """The report's page. Its module is imported here, not at the top: it draws with
    matplotlib, whose import is most of the time a profile takes to start (about 0.3 s
    warm, seconds on a fresh machine), and only --html needs it."""
    from rooflint.output.html_report import Document, report_html
    return report_html([Document.of(source, r) for r in results])
