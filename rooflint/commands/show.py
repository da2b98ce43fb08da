"""`rooflint show` as the command line runs it: a saved result printed as `run` printed
it, and its table written as CSV or Markdown when asked (``-``: instead of the print)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rooflint.commands.requests import Exports
from rooflint.commands import exporting
from rooflint.commands.guards import guard_outputs
from rooflint.commands.stdio import console
from rooflint.formats.results import read_result
from rooflint.output.outputs import Named
from rooflint.output.tables import only_variants, render_run


def show_command(result_path: Path, variants: list[str], csv: Optional[Path],
                 markdown: Optional[Path], html: Optional[Path] = None) -> None:
    """Print ``result_path`` (only ``variants``, if given); write its tables and page."""
    tables = exporting.asked(Exports(csv, markdown, html))
    piped = exporting.to_stdout(*((t.option, t.path) for t in tables))
    guard_outputs(exporting.files(tables), [Named("RESULT", result_path)])
    result = only_variants(read_result(result_path), variants, result_path)
    if not piped:
        render_run(console, result)
    for said in exporting.write(tables, [result], str(result_path)):
        console.print(said, markup=False)
