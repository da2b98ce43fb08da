"""`rooflint show` as the command line runs it: a saved result printed as `run` printed
it, and its table written as CSV or Markdown when asked (``-``: instead of the print)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rooflint.commands.requests import Exports
from rooflint.commands import writing
from rooflint.commands.stdio import console
from rooflint.formats.results import read_result
from rooflint.output.outputs import Named, export_outputs, guard_outputs
from rooflint.output.tables import only_variants, render_run


def show_command(result_path: Path, variants: list[str], csv: Optional[Path],
                 markdown: Optional[Path], html: Optional[Path] = None) -> None:
    """Print ``result_path`` (only ``variants``, if given); write its tables and page."""
    tables = writing.asked(Exports(csv, markdown, html))
    piped = writing.to_stdout(*((t.option, t.path) for t in tables))
    guard_outputs(export_outputs(tables), [Named("RESULT", result_path)])
    result = only_variants(read_result(result_path), variants, result_path)
    if not piped:
        render_run(console, result)
    for said in writing.write(tables, [result], str(result_path)):
        console.print(said, markup=False)
