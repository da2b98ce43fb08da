"""rooflint: a roofline profiler and kernel diagnostician for NVIDIA GPUs.

The Python API for notebooks (no GPU needed for any of it)::

    import rooflint
    result = rooflint.load("examples/h200-bundled.json")
    figure = rooflint.plot(result)                     # a matplotlib Figure
    tiled, blocked = rooflint.variant(result, "tiled"), rooflint.variant(result, "blocked_2d")
    print(rooflint.compare(tiled, blocked).sentence)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

# re-exported: `rooflint.__version__`
from rooflint.common.version import __version__ as __version__

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from rooflint.judge.comparison import Comparison
    from rooflint.formats.results import RunResult, VariantResult


def load(path: str | Path) -> "RunResult":
    """A result document written by `rooflint run --json`."""
    from rooflint.formats.results import read_result
    return read_result(Path(path))


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
    """The roofline of one or more results, drawn on ``ax`` (or a new figure)."""
    from rooflint.output.plotting import figure    # matplotlib: only when drawing
    return figure(results if isinstance(results, list) else [results], variants, trajectory, ax)


def compare(a: "VariantResult", b: "VariantResult") -> "Comparison":
    """B against A: speedup with an interval, movement, bytes, FLOPs, prediction."""
    from rooflint.judge.comparison import compare as compare_variants
    return compare_variants(a, b)
