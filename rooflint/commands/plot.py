"""`rooflint plot` as the command line runs it: the picture's path guarded, the result
documents read, the roofline drawn to its file or, for ``-o -``, as SVG to standard output
(a pipe has no extension to name another format)."""

from __future__ import annotations

from rooflint.commands.requests import PlotRequest
from rooflint.commands.stdio import emit, status
from rooflint.formats.results import read_result
from rooflint.output import plotting
from rooflint.output.outputs import PICTURE, STDOUT, Named, Output, guard_outputs
from rooflint.output.tables import check_held
from rooflint.output.written import roofline_drawn


def plot_command(request: PlotRequest) -> None:
    """Draw the results asked (only the variants asked, in their order, if any) to the
    output asked. A bad or precious path fails before any file is read."""
    paths, output, variants = request.results, request.output, list(request.variants)
    guard_outputs([] if output == STDOUT else [Output("--output", output, PICTURE)],
                  [Named("RESULT", p) for p in paths])
    results = [read_result(path) for path in paths]
    check_held(dict(zip(paths, results)), variants)
    figure = plotting.figure(results, variants or None, request.trajectory)
    if output == STDOUT:
        emit(plotting.rendered(figure, "svg").decode().rstrip("\n"))
        return
    plotting.save(figure, output)
    status(roofline_drawn(output))
