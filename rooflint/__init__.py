"""rooflint: a roofline profiler and kernel diagnostician for NVIDIA GPUs.

The Python API for notebooks (no GPU needed for any of it; docs/notebook.md)::

    import rooflint
    result = rooflint.load("examples/h200-bundled.json")    # shown as its summary table
    frame = result.to_pandas()                             # the CSV's columns (pandas extra)
    figure = rooflint.plot(result)                         # a matplotlib Figure
    tiled, blocked = rooflint.variant(result, "tiled"), rooflint.variant(result, "blocked_2d")
    print(rooflint.compare(tiled, blocked).sentence)
    rooflint.explain(gpu="h100-sxm", time="2.5ms", flops=137.4e9, bytes="201MB")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rooflint.commands.requests import ExplainRequest
# re-exported: `rooflint.__version__`
from rooflint.common.version import __version__ as __version__

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from pandas import DataFrame

    from rooflint.judge.comparison import Comparison
    from rooflint.formats.results import RunResult, VariantResult
    from rooflint.notebook import Explained, Result


def load(path: str | Path) -> "Result":
    """A result document, a run's (`rooflint run --json`) or a profile's (`rooflint profile
    --json`), shown in a notebook as its summary table; RooflintError for any other file."""
    from rooflint.formats.results import read_result
    from rooflint.notebook import Result
    return Result.of(read_result(Path(path)))


def to_pandas(result: "RunResult") -> "DataFrame":
    """The result's CSV table (`show --csv`) as a DataFrame: the same columns, the values
    as numbers; needs the pandas extra (pip install 'rooflint[pandas]')."""
    from rooflint.notebook import to_pandas as frame
    return frame(result)


def variant(result: "RunResult", name: str) -> "VariantResult":
    """The variant called ``name`` in any family of ``result``."""
    from rooflint.common.errors import RooflintError
    for family in result.families:
        for v in family.variants:
            if v.name == name:
                return v
    raise RooflintError(f"no variant {name!r} in this result")


def plot(results: "RunResult | list[RunResult]", ax: "Axes | None" = None,
         variants: list[str] | None = None, trajectory: bool = False) -> "Figure":
    """The roofline of one or more results, drawn on ``ax`` (or a new figure, which a
    notebook shows)."""
    from rooflint.output.plotting import figure    # matplotlib: only when drawing
    return figure(results if isinstance(results, list) else [results], variants, trajectory, ax)


def compare(a: "VariantResult", b: "VariantResult") -> "Comparison":
    """B against A: speedup with an interval, movement, bytes, FLOPs, prediction."""
    from rooflint.judge.comparison import compare as compare_variants
    return compare_variants(a, b)


def explain(gpu: str, time: float | str, flops: float | str, bytes: float | str,
            algorithmic_bytes: float | str | None = None,
            precision: str = ExplainRequest.precision, datasheet: bool = False) -> "Explained":
    """`rooflint explain` from Python: the point placed on ``gpu``'s roofline and judged,
    shown in a notebook as the command prints it. Numbers are seconds, FLOPs and bytes;
    text takes the command's units ("0.713ms", "128MiB"); a mistake is a RooflintError
    that names the command's option (--bytes for ``bytes``)."""
    from rooflint.commands.explain import explained
    from rooflint.notebook import Explained
    request = ExplainRequest(
        time=_typed(time), flops=_typed(flops), dram_bytes=_typed(bytes), gpu=gpu,
        algorithmic_bytes=None if algorithmic_bytes is None else _typed(algorithmic_bytes),
        precision=precision, datasheet=datasheet)
    return Explained.of(explained(request))


def _typed(amount: float | str) -> str:
    """``amount`` as the command line would have it typed."""
    return amount if isinstance(amount, str) else str(amount)
