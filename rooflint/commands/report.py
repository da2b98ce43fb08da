"""`rooflint report` as the command line runs it: the output guarded, the result documents
read, two of them compared as `rooflint compare A.json B.json` compares them, and the page
(output/html_report.py) written to its file or to standard output.

Apart from the page's module because the comparison's pairing is the engine's
(engine/compare_sides.py), and output/ never calls the engine.
"""

from __future__ import annotations


from rooflint.commands.requests import ReportRequest
from rooflint.judge.comparison import compare as compare_variants
from rooflint.engine.compare_sides import Side, gpu_warning, paired, result_sides, unmatched_names
from rooflint.commands.stdio import emit, status
from rooflint.common.errors import RooflintError
from rooflint.formats.jsonfile import write_text
from rooflint.formats.results import read_result
from rooflint.judge.ranks import is_job, job_of
from rooflint.output.html_report import ComparedPair, ComparisonView, Document, report_html
from rooflint.output.outputs import REPORT, STDOUT, Named, Output, guard_outputs
from rooflint.output.written import report_written


def report_command(request: ReportRequest) -> None:
    """Write the HTML report of the result documents asked to its output (``-``: standard
    output). The output is checked first, so a bad path costs no reading."""
    paths, output = request.results, request.output
    to_stdout = output == STDOUT
    guard_outputs([] if to_stdout else [Output("--output", output, REPORT)],
                  [Named("RESULT", p) for p in paths], force=request.force)
    documents = [Document.of(p, read_result(p)) for p in paths]
    results = [d.result for d in documents]
    job = job_of(results, [str(p) for p in paths]) if is_job(results) else None
    comparison = compared(documents[0], documents[1]) if len(documents) == 2 and not job \
        else None
    html = report_html(documents, comparison, job)
    if to_stdout:
        emit(html.rstrip("\n"))
        return
    write_text(html, output)
    status(report_written(output))


def compared(a: Document, b: Document) -> ComparisonView:
    """B against A, every variant of one paired with its namesake in the other, as
    `compare A.json B.json` pairs them; results from different GPUs are compared (a report
    shows what it is given) under the warning compare gives them."""
    left, right = result_sides(a.result), result_sides(b.result)
    pairs = paired(left, right, (a.name, b.name))
    vanished, new = unmatched_names(left, right)
    return ComparisonView(warning=gpu_warning(pairs, allow_different_gpu=True) if pairs else None,
                          pairs=[_compared(x, y) for x, y in pairs], vanished=vanished, new=new)


def _compared(a: Side, b: Side) -> ComparedPair:
    """One pair compared; a side with no time to compare (failed, skipped) says why."""
    x, y = a.variant.name, b.variant.name
    variant = x if x == y else f"{x} vs {y}"
    try:
        return ComparedPair(variant, compare_variants(a.variant, b.variant, a.label, b.label))
    except RooflintError as exc:
        return ComparedPair(variant, None, str(exc))
