"""Where a command may write: the guard every command runs before it reads or measures.

Nothing a user named is overwritten unless it is the output they asked for, of the kind
they asked for (issue 22):

- an output path that starts with ``-`` is an option whose value went missing
  (``--markdown --junit j.xml``), not a file name;
- two outputs are never one file, and no output is one of the command's inputs, compared
  as files (a link, a ``./`` spelling or a hard link to the input is the input); that
  holds for a file appended to ($GITHUB_STEP_SUMMARY) as for one replaced;
- an existing file is replaced only if it is empty or already a document of the kind
  written (``--update`` replaces a baseline, never a result or notes; ``-o`` a picture
  rooflint drew, never a user's diagram; ``--markdown`` an earlier gate summary, never a
  README), and appended to ($GITHUB_STEP_SUMMARY) only if it is empty or a Markdown
  summary. A kind is told by parsing the whole file, not its first bytes: a user's
  notes.csv whose header began ``family,variant`` was replaced by ``show --csv``, and
  any PNG by ``plot -o`` (issue 45); pass 1's trace alone is told by its two ends
  (_pass_one_trace says why). Every kind is told here. ``--force`` (every command that
  writes a file has it, as ncu has ``-f``) replaces such a file all the same; it never
  lets an output be an input or another output, nor appends to a file of another kind.

:func:`jsonfile.require_writable` is the other half, that a path can be written at all;
guard_outputs runs both. Every command runs it first, before its reading or its minutes of
measuring, so no work ends in a file that cannot be written.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass
from itertools import chain, combinations
from pathlib import Path
from typing import IO, Callable, Optional, Sequence

from rooflint.formats import baseline as baselines, results

from rooflint.formats import calibration as calibrations
from rooflint.common.errors import RooflintError
from rooflint.formats.gate_outcomes import Report
from rooflint.formats.jsonfile import read_limited, read_versioned, require_writable
from rooflint.formats.ncu_log import ID
from rooflint.output import exports
from rooflint.output.gate_report import GATE_HEADING, gate_junit, gate_markdown
from rooflint.output.picture_marks import drawn_by_rooflint, svg_root

# What is read of each end of pass 1's trace, which is told by its ends (_pass_one_trace).
END_BYTES = 4096

STDOUT = Path("-")      # an output's path that names standard output, not a file


def _any_name(path: Path) -> None:
    """Every name will do (JSON and reports are written whatever their extension)."""


@dataclass(frozen=True)
class Kind:
    """What a command writes; ``holds`` tells whether an existing regular file already is
    one (so that replacing it loses nothing the user did not ask to replace), and
    ``check_name`` refuses a name it cannot be written under (a picture's extension)."""

    name: str                       # as the refusal says it: "a rooflint baseline"
    holds: Callable[[Path], bool]
    check_name: Callable[[Path], object] = _any_name


@dataclass(frozen=True)
class Named:
    """A path and how the user named it: ``--current``, ``RESULT``, ``GITHUB_STEP_SUMMARY``."""

    option: str
    path: Path


@dataclass(frozen=True)
class Output(Named):
    """A path a command writes, and what it writes there."""

    kind: Kind
    appended: bool = False          # added at its end (the step summary), never replaced


def refuse_overwrites(outputs: Sequence[Output], inputs: Sequence[Named] = (),
                      force: bool = False) -> None:
    """RooflintError, one line naming the options, for an output that would replace or
    append to something the user did not ask to replace (see the module docstring);
    ``force``: the user asked to replace files of another kind."""
    for output in outputs:
        if str(output.path).startswith("-"):
            raise RooflintError(f"{output.option} {output.path}: an option, not a file name; "
                                f"{output.option} is missing its value (give a file whose "
                                f"name starts with - by its full path)")
        output.kind.check_name(output.path)
    for a, b in combinations(outputs, 2):
        if _same_path(a.path, b.path):
            raise RooflintError(f"{a.option} {a.path} and {b.option} {b.path} are one file; "
                                f"give each its own path")
    for output in outputs:
        for source in inputs:
            if _same_file(output.path, source.path):
                verb = "append to" if output.appended else "write over"
                raise RooflintError(f"{output.option} {output.path} is {source.option} "
                                    f"{source.path}: rooflint does not {verb} a file it "
                                    f"reads; give {output.option} another path")
    for output in outputs:
        if force and not output.appended:
            continue
        if _nonempty_file(output.path) and not output.kind.holds(output.path):
            verb, remedy = (("append to", "choose another path") if output.appended else
                            ("replace", "choose another path, or add --force to replace it"))
            raise RooflintError(f"{output.option} {output.path} exists and is not "
                                f"{output.kind.name}, so rooflint will not {verb} it: "
                                f"{remedy}")


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one existing file (device and inode: links count)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _same_path(a: Path, b: Path) -> bool:
    """One file, or one path once resolved (two outputs not written yet)."""
    return _same_file(a, b) or os.path.realpath(a) == os.path.realpath(b)


def _nonempty_file(path: Path) -> bool:
    """A regular file with something in it to lose (a pipe or device is written in place)."""
    return path.is_file() and path.stat().st_size > 0


def _opened(path: Path, mode: str = "rb", **options) -> IO:
    """``path`` opened to read without blocking: a FIFO swapped in for the file since its
    kind was checked does not hang the command. OSError where it cannot be."""
    return open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), mode, **options)


def _ends(path: Path) -> tuple[bytes, bytes]:
    """The first and the last END_BYTES of ``path`` (none if it cannot be read)."""
    try:
        with _opened(path) as handle:
            start = handle.read(END_BYTES)
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - END_BYTES))
            return start, handle.read(END_BYTES)
    except OSError:
        return b"", b""


def _bytes(path: Path) -> bytes | None:
    """All of ``path``; None if it cannot be read whole (past the size of any document
    rooflint reads: no picture it draws comes near)."""
    try:
        return read_limited(path, "file")
    except RooflintError:
        return None


def _document(schema: str) -> Callable[[Path], bool]:
    """Whether a file is a rooflint JSON document declaring ``schema``."""
    def holds(path: Path) -> bool:
        try:
            read_versioned(path, schema, "document")
        except RooflintError:
            return False
        return True
    return holds


def _text(path: Path) -> str | None:
    """All of ``path`` as UTF-8 text; None if it cannot be read whole (past the size of
    any document rooflint reads) or is not UTF-8, as no text rooflint writes is."""
    data = _bytes(path)
    try:
        return data.decode("utf-8") if data is not None else None
    except UnicodeDecodeError:
        return None


def _parsed(recognises: Callable[[str], bool]) -> Callable[[Path], bool]:
    """Whether a file, read whole, is a document that ``recognises`` tells from its text."""
    def holds(path: Path) -> bool:
        text = _text(path)
        return text is not None and recognises(text)
    return holds


def _json_document(text: str) -> dict | list | None:
    """The JSON object or array ``text`` is; None if it is none."""
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return found if isinstance(found, (dict, list)) else None


def _json_object_with(key: str) -> Callable[[str], bool]:
    """Whether a text is a JSON object with ``key`` (explain's and compare's --json)."""
    def recognises(text: str) -> bool:
        found = _json_document(text)
        return isinstance(found, dict) and key in found
    return recognises


def _rooflint_header(names: list[str]) -> bool:
    """Whether ``names`` is a header rooflint's tables have: exports.COLUMNS in their
    order, any of them left out (those no row has a value in), the first two never."""
    order = [column.name for column in exports.COLUMNS]
    places = [order.index(name) for name in names if name in order]
    return (len(places) == len(names) and places == sorted(set(places))
            and tuple(names[:2]) == exports.FIRST)


def _laid_out_as(format: str, header: list[str], text: str) -> bool:
    """Whether ``text`` begins with ``header`` exactly as the exporter of ``format`` lays
    a table's header (and the Markdown rule under it) out."""
    return text.startswith(exports.EXPORTERS[format].render(header, []))


def _csv_table(text: str) -> bool:
    """Whether ``text`` is a CSV table of rooflint's: its header row one of rooflint's,
    and every row, read as RFC 4180 reads it, as wide."""
    try:
        header, *rows = csv.reader(io.StringIO(text, newline=""), strict=True)
    except (csv.Error, ValueError):       # not CSV; no header row at all
        return False
    return (_rooflint_header(header) and _laid_out_as("csv", header, text)
            and all(len(row) == len(header) for row in rows))


def _markdown_cells(line: str) -> list[str] | None:
    """The cells of a Markdown table's row as rooflint writes one (``| a | b |``, a pipe
    in a cell escaped ``\\|``, so `` | `` only ever parts two cells), or None."""
    if not (line.startswith("| ") and line.endswith(" |")) or len(line) < 4:
        return None
    return line[2:-2].split(" | ")


def _markdown_rows(lines: list[str], width: int) -> bool:
    """Whether every one of ``lines`` is a Markdown table's row of ``width`` cells."""
    return all(len(_markdown_cells(line) or ()) == width for line in lines)


def _markdown_table(text: str) -> bool:
    """Whether ``text`` is a Markdown table of rooflint's (--markdown of run, profile and
    show): its header one of rooflint's, laid out as rooflint does with its rule under
    it, then rows as wide, each on its line, and nothing else."""
    lines = text.split("\n")
    titles = _markdown_cells(lines[0])
    header = [exports.NAMES.get(title, title) for title in titles] if titles else None
    return (header is not None and _rooflint_header(header) and lines[-1] == ""
            and _laid_out_as("markdown", header, text)
            and _markdown_rows(lines[2:-1], len(header)))


def _gate_summary(text: str) -> bool:
    """Whether ``text`` is a summary `gate --markdown` wrote: its heading, the note on
    the GPUs it may have, then the table (header and rule as the gate writes them) and
    rows as wide, and nothing else."""
    heading, *lines = text.split("\n")
    note = lines[1][2:] if len(lines) > 2 and lines[1].startswith("> ") else None
    expected = gate_markdown(Report([], gpu_note=note)).split("\n")[1:-1]
    table = lines[len(expected):-1]
    width = len(_markdown_cells(expected[-2]) or ())
    return (heading.startswith(GATE_HEADING) and lines[:len(expected)] == expected
            and lines[-1:] == [""] and _markdown_rows(table, width))


def _junit(text: str) -> bool:
    """Whether ``text`` is JUnit XML that `gate --junit` wrote: its test suite, named as
    the gate names it, of test cases only (another tool's JUnit report is not replaced)."""
    import xml.etree.ElementTree as ET     # start-up time: as gate_report.gate_junit
    written = ET.fromstring(gate_junit(Report([])).encode("utf-8"))
    try:
        root = ET.fromstring(text.encode("utf-8"))
    except (ET.ParseError, LookupError, ValueError):    # declared encodings: unknown, multi-byte
        return False
    return ((root.tag, root.get("name")) == (written.tag, written.get("name"))
            and all(case.tag == "testcase" for case in root))


RESULT = Kind("a rooflint result", _document(results.SCHEMA))
BASELINE = Kind("a rooflint baseline", _document(baselines.SCHEMA))
CALIBRATION = Kind("a rooflint calibration", _document(calibrations.SCHEMA))
GATE_SUMMARY = Kind("a rooflint gate summary", _parsed(_gate_summary))
JUNIT = Kind("a rooflint JUnit report", _parsed(_junit))
EXPLANATION = Kind("a rooflint explanation", _parsed(_json_object_with("verdict")))
COMPARISON = Kind("a rooflint comparison", _parsed(_json_object_with("comparisons")))
# --csv and --markdown: tables of rooflint's, each told by its format's recogniser.
_TABLE_RECOGNISERS = {"csv": _csv_table, "markdown": _markdown_table}
TABLES = {format: Kind(exporter.name, _parsed(_TABLE_RECOGNISERS[format]))
          for format, exporter in exports.EXPORTERS.items()}


# A line of Nsight Compute's own in its log: ==PROF==, ==WARNING==, ==ERROR== and the like.
_NCU_MESSAGE = re.compile(r"==[A-Z]+==")


def _ncu_log(path: Path) -> bool:
    """Whether a file is a log Nsight Compute wrote for `rooflint profile` (``--csv --page
    raw``): its messages, each line ``==PROF== ...`` and the like, then, where it profiled
    a kernel, its table, whose header begins with the ID column, every row as wide as the
    header. Read row by row, never whole: pass 1's log of every launch of a long program
    outgrows what rooflint reads whole, and it only counts the width of each row."""
    try:
        with _opened(path, "r", encoding="utf-8", errors="replace", newline="") as handle:
            line = handle.readline()
            while _NCU_MESSAGE.match(line):
                line = handle.readline()
            if not line:
                return True
            rows = csv.reader(chain([line], handle), strict=True)
            width = len(next(rows))
            return line.startswith(f'"{ID}",') and all(len(row) == width for row in rows)
    except (OSError, csv.Error):
        return False


# The first key of the traces profile's pass 1 keeps: PyTorch's profiler's (Kineto's
# schemaVersion) and that of rooflint's CUPTI recorder (kernel_records: traceEvents).
_TRACE_START = re.compile(rb'\s*\{\s*"(schemaVersion|traceEvents)"\s*:')


def _pass_one_trace(path: Path) -> bool:
    """Whether a file is a trace profile's pass 1 wrote: a JSON object that opens with the
    key PyTorch's profiler or rooflint's recorder writes first and ends as an object does.
    Told by its ends, not parsed: a trace rooflint reads may be 1 GiB, and PyTorch's export
    leaves some names unescaped, so a trace it wrote need not parse as JSON at all; the
    file's name (pass1-trace.json, in the folder named for logs) says the rest."""
    start, end = _ends(path)
    return _TRACE_START.match(start) is not None and end.rstrip().endswith(b"}")


NCU_LOG = Kind("a log of rooflint profile", _ncu_log)
PASS_ONE_TRACE = Kind("a trace of rooflint profile", _pass_one_trace)


def _picture(path: Path) -> bool:
    """Whether a file is a picture rooflint drew, in the format its extension names (the
    mark it leaves, read as that format is read: picture_marks)."""
    data = _bytes(path)
    return data is not None and drawn_by_rooflint(data, _picture_format(path))


def _picture_format(path: Path) -> str:
    from rooflint.output.plotting import picture_format    # matplotlib: only when drawing
    return picture_format(path)


PICTURE = Kind("a picture rooflint drew in the format its extension names", _picture,
               _picture_format)


def _svg(path: Path) -> bool:
    """Whether a file is an SVG document, parsed whole: whoever drew it, not Markdown."""
    data = _bytes(path)
    return data is not None and svg_root(data) is not None


def _report(text: str) -> bool:
    """Whether ``text`` is a page `rooflint report` wrote: an HTML document whose head
    names rooflint as its generator."""
    from rooflint.output.html_page import DOCTYPE, GENERATOR    # matplotlib: only for reports
    head, ended, _ = text.partition("</head>")
    return text.startswith(DOCTYPE) and bool(ended) and GENERATOR in head


REPORT = Kind("a rooflint report", _parsed(_report))


def _markdown_summary(path: Path) -> bool:
    """Whether the gate's summary may be added at the end of a file ($GITHUB_STEP_SUMMARY):
    text, as the runner's file and whatever earlier steps appended to it are, that is no
    JSON document, no SVG and none of the other kinds of text rooflint writes (a result, a
    table, a report, JUnit XML or a picture with a summary after it is no longer read)."""
    text = _text(path)
    others = (JUNIT.holds, REPORT.holds, TABLES["csv"].holds, _svg)
    return (text is not None and "\0" not in text and _json_document(text) is None
            and not any(holds(path) for holds in others))


STEP_SUMMARY = Kind("a Markdown summary", _markdown_summary)


# What --csv, --markdown and --html write: tables of rooflint's, or the report's page.
EXPORT_KINDS = {**TABLES, exports.PAGE: REPORT}


def guard_outputs(asked: Sequence[Output], inputs: Sequence[Named] = (),
                  writable: bool = True, force: bool = False) -> None:
    """The guard every command runs first: nothing the user named is overwritten unless it
    is the output asked for, of its kind, or ``force`` says to (refuse_overwrites); with
    ``writable``, each replaced output can be written, too (jsonfile.require_writable)."""
    refuse_overwrites(asked, inputs, force)
    for output in asked if writable else ():
        if not output.appended:
            require_writable(output.path)


def check_outputs(json_path: Optional[Path], picture: Optional[Path] = None,
                  logs: Optional[Path] = None, model: Optional[Path] = None,
                  tables: Sequence[Output] = (), force: bool = False) -> None:
    """`run`'s and `profile`'s outputs, checked before minutes of measuring, not after:
    --json replaces only a rooflint result, --svg only a picture rooflint drew, profile's
    --logs only its own earlier logs (pass 1's trace, Nsight Compute's logs), the --csv
    and --markdown ``tables`` only tables of their own format (any file, with ``force``),
    none of them is --model, and all can be written."""
    # here, not at the top: the logs' names are the profiler's, and no other guard needs them
    from rooflint.measure.program import LOGS, TRACE_LOG
    asked = ([Output("--json", json_path, RESULT)] if json_path else []) + \
        ([Output("--svg", picture, PICTURE)] if picture else []) + \
        [Output("--logs", logs / name, PASS_ONE_TRACE if name == TRACE_LOG else NCU_LOG)
         for name in LOGS if logs] + list(tables)
    guard_outputs(asked, [Named("--model", model)] if model else [], force=force)


def guard_json(path: Optional[Path], kind: Kind, force: bool = False) -> None:
    """The guard for the --json of explain, compare and calibrate: a file replaced only if
    it is one of theirs, or ``force`` says to (``-`` is standard output)."""
    if path and path != STDOUT:
        guard_outputs([Output("--json", path, kind)], force=force)


def export_outputs(wanted: Sequence[exports.Export]) -> list[Output]:
    """The exports written to files (not ``-``), for the guard."""
    return [Output(e.option, e.path, EXPORT_KINDS[e.format]) for e in wanted
            if e.path != STDOUT]
