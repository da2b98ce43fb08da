"""`rooflint plot` as the command line runs it: the picture's path guarded, the result
documents read, the roofline drawn to its file or, for ``-o -``, as SVG to standard output
(a pipe has no extension to name another format)."""

from __future__ import annotations

from rooflint.commands.requests import PlotRequest
from rooflint.commands.stdio import status
from rooflint.commands.writing import draw
from rooflint.formats.results import read_result
from rooflint.output.outputs import PICTURE, STDOUT, Named, Output, guard_outputs
from rooflint.output.tables import check_held


def plot_command(request: PlotRequest) -> None:
    """Draw the results asked (only the variants asked, in their order, if any) to the
    output asked. A bad or precious path fails before any file is read."""
    paths, output, variants = request.results, request.output, list(request.variants)
    guard_outputs([] if output == STDOUT else [Output("--output", output, PICTURE)],
                  [Named("RESULT", p) for p in paths], force=request.force)
    results = [read_result(path) for path in paths]
    check_held(dict(zip(paths, results)), variants)
    drawn = draw(results, output, variants or None, request.trajectory)
    if drawn:
        status(drawn)
