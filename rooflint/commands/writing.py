"""Writing what a command was asked to write beside its work: each document to its file, or
to standard output for ``-`` (a JSON document, the tables, a roofline as SVG), and the line
that says what was written where (none for ``-``).

run, profile and show take the same three export options (``--csv``, ``--markdown``,
``--html``), with the same meaning: a file path, or ``-`` for standard output, where the
terminal's tables then give way (to standard error for run and profile, whose display goes
on; not at all for show, whose table it is). What each export holds is
output/exports.py's; whether a file may be replaced, output/outputs.py's. At most one
output can be ``-``: two documents on one stream could not be told apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

from rooflint.commands.requests import Exports
from rooflint.commands.stdio import emit, status
from rooflint.common.errors import RooflintError
from rooflint.formats.jsonfile import write_text
from rooflint.formats.results import RunResult, write_result
from rooflint.output.exports import PAGE, Export, rendered
from rooflint.output.outputs import STDOUT
from rooflint.output.written import (report_written, result_written, roofline_drawn,
                                      table_written, written_to)


def asked(exports: Exports) -> list[Export]:
    """The exports a request names, each with the option that named it."""
    return [Export(option, format, path) for option, format, path in
            (("--csv", "csv", exports.csv), ("--markdown", "markdown", exports.markdown),
             ("--html", PAGE, exports.html)) if path]


def to_stdout(*named: tuple[str, Optional[Path]]) -> bool:
    """Whether one of the outputs ``(option, path)`` is ``-``; RooflintError if several."""
    dashes = [option for option, path in named if path == STDOUT]
    if len(dashes) > 1:
        raise RooflintError(f"{' and '.join(dashes)} each name - (standard output), where "
                            f"only one output can go; give the others a file")
    return bool(dashes)


def write_json(document: dict, path: Path, what: str) -> Optional[str]:
    """A JSON document to ``path``, or printed for ``-``; what was written where, to say so
    (None for ``-``): ``what`` names the document."""
    text = json.dumps(document, indent=1)
    if path == STDOUT:
        emit(text)
        return None
    write_text(text + "\n", path)
    return written_to(what, path)


def draw(results: Sequence[RunResult], path: Path, names: Optional[list[str]] = None,
         trajectory: bool = False) -> Optional[str]:
    """The roofline of ``results`` drawn to ``path`` (by its extension), or as SVG on
    standard output for ``-``, where no extension names another format; what was drawn
    where, to say so (None for ``-``)."""
    from rooflint.output import plotting    # matplotlib: only when drawing
    figure = plotting.figure(list(results), names, trajectory)
    if path == STDOUT:
        emit(plotting.rendered(figure, "svg").decode().rstrip("\n"))
        return None
    plotting.save(figure, path)
    return roofline_drawn(path)


def write_result_document(result: RunResult, path: Path) -> None:
    """A result document to --json's ``path``, said when written; printed for ``-``."""
    if path == STDOUT:
        emit(json.dumps(result.to_json(), indent=1))
    else:
        write_result(result, path)
        status(result_written(path))


def write(wanted: Sequence[Export], results: Sequence[RunResult],
          source: Path | str) -> list[str]:
    """Each export written (``-``: printed); what was written where, to say so. ``source``
    names the results on the page: the result document's path, or words saying what made
    the result."""
    said = []
    for e in wanted:
        text = rendered(e, results, source)
        if e.path == STDOUT:
            emit(text.rstrip("\n"))
        else:
            write_text(text, e.path)
            said.append(report_written(e.path) if e.format == PAGE
                        else table_written(e.format, e.path))
    return said
