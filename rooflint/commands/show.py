"""`rooflint show` as the command line runs it: a saved result printed as `run` printed
it, and its table written as CSV or Markdown when asked (``-``: instead of the print)."""

from __future__ import annotations

from rooflint.commands.requests import ShowRequest
from rooflint.commands import writing
from rooflint.commands.stdio import console, status
from rooflint.formats.results import read_result
from rooflint.judge.program_fixes import fixes_of
from rooflint.output.outputs import Named, export_outputs, guard_outputs
from rooflint.output.profile_view import render_result
from rooflint.output.tables import only_variants


def show_command(request: ShowRequest) -> None:
    """Print the result (only the variants asked, if any); write its tables and page."""
    result_path = request.result_path
    tables = writing.asked(request.exports)
    piped = writing.to_stdout(*((t.option, t.path) for t in tables))
    guard_outputs(export_outputs(tables), [Named("RESULT", result_path)], force=request.force)
    result = only_variants(read_result(result_path), list(request.variants), result_path)
    if not piped:
        render_result(console, result, fixes_of(result), request.depth)
    for said in writing.write(tables, [result], str(result_path)):
        status(said)
