"""`rooflint show` as the command line runs it: a saved result printed as `run` printed
it, and its table written as CSV or Markdown when asked (``-``: instead of the print); a
job's rank documents (``show r.rank*.json``) printed as one job (judge/ranks.py)."""

from __future__ import annotations

from pathlib import Path

from rooflint.commands.requests import ShowRequest
from rooflint.commands import writing
from rooflint.commands.stdio import console, fail, status
from rooflint.formats.results import read_result
from rooflint.judge.program_fixes import fixes_of
from rooflint.judge.ranks import job_of
from rooflint.output.outputs import Named, export_outputs, guard_outputs
from rooflint.output.profile_view import render_result
from rooflint.output.rank_view import render_job
from rooflint.output.tables import only_variants


def show_command(request: ShowRequest) -> None:
    """Print the result (only the variants asked, if any); write its tables and page."""
    result_path = request.result_path
    ranks = [Path(name) for name in request.variants if _is_document(name)]
    if ranks:
        _show_job([result_path, *ranks], request)
        return
    tables = writing.asked(request.exports)
    piped = writing.to_stdout(*((t.option, t.path) for t in tables))
    guard_outputs(export_outputs(tables), [Named("RESULT", result_path)], force=request.force)
    result = only_variants(read_result(result_path), list(request.variants), result_path)
    if not piped:
        render_result(console, result, fixes_of(result), request.depth)
    for said in writing.write(tables, [result], result_path):
        status(said)


def _is_document(name: str) -> bool:
    """A NAME that is a result file beside RESULT: the documents of one job's ranks."""
    return name.endswith(".json") and Path(name).is_file()


def _show_job(paths: list[Path], request: ShowRequest) -> None:
    """Several ranks' documents as one job: the ranks, the straggler, the kernels' times on
    each rank."""
    names = [n for n in request.variants if not _is_document(n)]
    if names or writing.asked(request.exports):
        fail(f"{' '.join(names) or 'an export'} with several documents: show prints one job "
             f"of them; give one RESULT to choose variants or to export")
    render_job(console, job_of([read_result(p) for p in paths], [str(p) for p in paths]),
               request.depth)
