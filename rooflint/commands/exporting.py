"""The documents a command writes beside its result (``--csv``, ``--markdown``, ``--html``),
and which of its outputs goes to standard output (``-``).

run, profile and show take the same three options, with the same meaning: a file path,
or ``-`` for standard output, where the terminal's tables then give way (to standard
error for run and profile, whose display goes on; not at all for show, whose table it
is). The tables are output/exports.py's; the page is `rooflint report`'s of the one
result. At most one output can be ``-``: two documents on one stream could not be told
apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from rooflint.commands.requests import Exports
from rooflint.commands.stdio import emit
from rooflint.common.errors import RooflintError
from rooflint.formats.jsonfile import write_text
from rooflint.formats.results import RunResult
from rooflint.output import exports
from rooflint.commands.guards import guard_outputs
from rooflint.output.outputs import REPORT, TABLES, Kind, Output

STDOUT = Path("-")


PAGE = "html"        # the export that is the report's page, not a table
KINDS = {**TABLES, PAGE: REPORT}


@dataclass(frozen=True)
class Export:
    option: str           # --csv
    format: str           # a key of exports.EXPORTERS, or PAGE
    path: Path


def asked(exports: Exports) -> list[Export]:
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


def files(wanted: Sequence[Export]) -> list[Output]:
    """The exports written to files, for the output guard."""
    return [Output(e.option, e.path, KINDS[e.format]) for e in wanted if e.path != STDOUT]


def written_json(path: Optional[Path], kind: Kind) -> None:
    """The guard for the --json of explain, compare and calibrate: a file replaced only if
    it is one of theirs (``-`` is standard output)."""
    if path and path != STDOUT:
        guard_outputs([Output("--json", path, kind)])


def write_json(document: dict, path: Path) -> None:
    """A JSON document to ``path``, or printed for ``-``."""
    text = json.dumps(document, indent=1)
    if path == STDOUT:
        emit(text)
    else:
        write_text(text + "\n", path)


def _page(results: Sequence[RunResult], name: str) -> str:
    """The report's page. Its module is imported here, not at the top: it draws with
    matplotlib, whose import is most of the time a profile takes to start (about 0.3 s
    warm, seconds on a fresh machine), and only --html needs it."""
    from rooflint.output.html_report import Document, report_html
    return report_html([Document(name, r) for r in results])


def write(wanted: Sequence[Export], results: Sequence[RunResult], name: str) -> list[str]:
    """Each export written (``-``: printed); what was written where, to say so. ``name``
    heads the page: the result document's path, or what made the result."""
    said = []
    for e in wanted:
        text = (_page(results, name) if e.format == PAGE
                else exports.export(results, e.format))
        if e.path == STDOUT:
            emit(text.rstrip("\n"))
        else:
            write_text(text, e.path)
            said.append(f"{'report' if e.format == PAGE else e.format + ' table'} written "
                        f"to {e.path}")
    return said
