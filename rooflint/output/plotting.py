"""The roofline picture: results -> SVG, PNG or PDF (matplotlib's Agg canvas, no display).

Log-log axes, x in FLOP per DRAM byte, y in FLOP/s labelled in TFLOP/s; the DRAM roof and
one compute roof per precision present, calibrated ones solid and datasheet ones dashed;
ridge points marked; the L2 and L1 roofs when a calibration measured them; each variant a dot at its
observed intensity, coloured by verdict, joined by a dotted gap line to a hollow marker at
its algorithmic intensity (where the dot would be if the kernel moved compulsory bytes
only); optional trajectory arrows in the order given. The legend explains every mark.
A variant measured with counters also has a mark per inner memory level, as in Nsight
Compute's hierarchical roofline: a square at its L2 intensity (FLOPs per L2 byte) and a
triangle at its L1 intensity, at the same FLOP/s, joined to the dot by a thin line; the
L2 roof is read against the squares and the L1 roof against the triangles, so an
L2-bound kernel's square sits on the L2 roof.

This module draws the figure itself (axes, roofs, ridge points, title) and writes it;
plot_marks.py draws each variant's marks and the legend on it, and plot_labels.py names
the dots last, where no label overlaps another, a marker or a text. The CLI and
``rooflint.plot`` import this module inside their functions, so matplotlib, imported here
at the top, costs the CLI's start-up only when a picture is drawn.

A figure is made without pyplot (a RooflineFigure on an Agg canvas of its own), so drawing
one changes no matplotlib state: a notebook keeps its backend (``matplotlib.use("Agg")``
here once switched a notebook's inline plots off), nothing has to be closed, and the figure
shows itself as a PNG where IPython displays it.

Several result files: each variant is labelled ``NAME (K)``, K being the file's place in
the order given (1, 2, ...), and the legend says which run K is. A name that two families
of one file share is written ``FAMILY/NAME``.

Artists carry ids that survive into the SVG, so tests and scripts can find them:
``roof-PRECISION``, ``roof-PRECISION-datasheet``, ``roof-l2``, ``roof-l1``, ``ridge-PRECISION``,
``trajectory-1``..., and per variant ``variant-KEY`` (the dot), ``algorithmic-KEY`` (the
hollow marker), ``gap-KEY`` (the dotted line), ``level-l2-KEY`` and ``level-l1-KEY`` (the
level marks), ``levels-KEY`` (their line), ``label-KEY`` and ``leader-KEY``. KEY is the
variant's name (``FAMILY/NAME`` where shared), prefixed with ``K-`` when several files are
drawn: ``variant-tiled`` for one file, ``variant-1-tiled`` and ``variant-2-tiled`` for two.
The SVG is byte-for-byte reproducible for the same input (fixed hash salt, no date).
"""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rooflint.common.errors import RooflintError
from rooflint.common.printable import printable, printable_fields
from rooflint.formats.jsonfile import require_directory, write_bytes
from rooflint.formats.results import FamilyResult, RunResult
from rooflint.common.units import format_params
from rooflint.output.picture_marks import METADATA
from rooflint.output.plot_labels import label_points
from rooflint.output.plot_marks import (
    Placed, draw_legend, draw_points, draw_trajectory, inner_levels, literal, placeable)

FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
TERA = 1e12                      # the y axis reads in TFLOP/s; a power of ten, so decades stay


class RooflineFigure(Figure):
    """The roofline's figure, on an Agg canvas of its own (no pyplot: see the top); in a
    notebook it shows itself as the PNG `rooflint plot -o roofline.png` writes."""

    def __init__(self) -> None:
        super().__init__(figsize=(11, 6), dpi=100)
        FigureCanvasAgg(self)

    def _repr_png_(self) -> bytes:
        return rendered(self, "png")


def figure(results: list[RunResult], names: list[str] | None = None, trajectory: bool = False,
           ax: Axes | None = None) -> Figure:
    """Draw the roofline of ``results`` (all from one GPU) and return the figure. Names
    are drawn printable (they came from files), so the SVG's text is valid XML."""
    if not results:
        raise RooflintError("nothing to plot: no results given")
    results = printable_fields(results)
    names = [printable(name) for name in names] if names else names
    gpus = {r.gpu.name for r in results}
    if len(gpus) > 1:
        raise RooflintError(f"results come from different GPUs ({', '.join(sorted(gpus))}): "
                            f"one roofline per GPU")
    placed, skipped = placeable(results, names)
    if not placed:
        raise RooflintError("no variant can be placed: none has a measured point with FLOPs "
                            "(copies have no arithmetic intensity on log axes)")
    if ax is None:
        fig = RooflineFigure()
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    x_low, x_high = _x_range(placed)
    _set_axes(ax, placed, x_low, x_high)
    _draw_roofs(ax, placed, results[0], x_low, x_high)
    draw_points(ax, placed)
    if trajectory:
        draw_trajectory(ax, placed)
    draw_legend(ax, results, placed)
    if skipped:
        ax.annotate(literal(f"not placed (no FLOPs or no measurement): {', '.join(skipped)}"),
                    (0, 0),
                    xycoords="axes fraction", xytext=(0, -36), textcoords="offset points",
                    fontsize=7, color="#666666", va="top")
    renderer = fig.canvas.get_renderer()
    _fit_title(ax, renderer, _titles(placed, results[0].gpu.name))
    unlabelled = label_points(fig, ax, placed)
    if unlabelled:
        ax.annotate(f"{unlabelled:,} more dots, not labelled", (1, 0), xycoords="axes fraction",
                    xytext=(0, -36), textcoords="offset points", fontsize=7, color="#666666",
                    ha="right", va="top")
    return fig


def _set_axes(ax, placed: list[Placed], x_low: float, x_high: float) -> None:
    """Scales, limits and axis labels: fixed before labels are placed around the dots."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_low, x_high)
    lowest = min(p.variant.point.achieved_flops for p in placed)
    highest = max(p.variant.roofs.compute for p in placed)
    ax.set_ylim(lowest / 3, highest * 2)
    ax.yaxis.set_major_formatter(TeraFormatter())
    ax.yaxis.set_minor_formatter(TeraFormatter(labelOnlyBase=False))
    ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.grid(True, which="major", alpha=0.3)


class TeraFormatter(ticker.LogFormatter):
    """FLOP/s ticks written in TFLOP/s (10 for 1e13); labels the ticks LogFormatter would."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x / TERA:g}" if super().__call__(x, pos) else ""


def _titles(placed: list[Placed], gpu: str) -> list[str]:
    """Titles from the most to the least detailed: families with sizes, names, a count."""
    families = list(dict.fromkeys((p.family.name, _params(p.family)) for p in placed))
    names = list(dict.fromkeys(name for name, _ in families))
    detailed = ", ".join(f"{name} ({params})" if params else name for name, params in families)
    return [f"{detailed} on {gpu}", f"{', '.join(names)} on {gpu}",
            f"{len(names)} families on {gpu}"]


def _params(family: FamilyResult) -> str:
    return format_params(family.params)


def _fit_title(ax, renderer: RendererBase, titles: list[str]) -> None:
    """The first title as wide as the axes at most (the last one whatever its width)."""
    for title in titles:
        ax.set_title(literal(title))
        if ax.title.get_window_extent(renderer).width <= ax.bbox.width:
            return


def _x_range(placed: list[Placed]) -> tuple[float, float]:
    xs = [p.variant.point.observed_ai for p in placed] + \
         [p.variant.point.algorithmic_ai for p in placed] + \
         [p.variant.roofs.ridge for p in placed] + \
         [level.intensity for p in placed for level in inner_levels(p.variant)]
    return min(xs) / 4, max(xs) * 4


def _roof_line(ax, x_low, x_high, bandwidth, compute, gid, style, colour, label):
    ridge = compute / bandwidth
    xs = [x_low, ridge, x_high] if x_low < ridge < x_high else [x_low, x_high]
    ys = [min(compute, x * bandwidth) for x in xs]
    (line,) = ax.plot(xs, ys, linestyle=style, color=colour, linewidth=1.4, label=label)
    line.set_gid(gid)
    return ridge


def _draw_roofs(ax, placed: list[Placed], result: RunResult, x_low: float, x_high: float) -> None:
    roofs = {}
    for p in placed:
        roofs.setdefault(p.variant.roofs.precision, p.variant.roofs)
    for precision, r in roofs.items():
        calibrated = (r.compute != r.datasheet_compute
                      or r.dram_bandwidth != r.datasheet_dram_bandwidth)
        if calibrated:
            ridge = _roof_line(ax, x_low, x_high, r.dram_bandwidth, r.compute, f"roof-{precision}",
                               "-", "#333333", f"{precision} roof ({r.source})")
        _roof_line(ax, x_low, x_high, r.datasheet_dram_bandwidth, r.datasheet_compute,
                   f"roof-{precision}-datasheet", "--", "#999999",
                   f"{precision} roof (datasheet)")
        if not calibrated:
            ridge = r.datasheet_compute / r.datasheet_dram_bandwidth
        marker = ax.plot([ridge], [r.compute], "D", color="#333333", markersize=4)[0]
        marker.set_gid(f"ridge-{precision}")
        ax.annotate(f"ridge {ridge:.3g}", (ridge, r.compute), textcoords="offset points",
                    xytext=(4, 4), fontsize=7, color="#333333")
    top = max(r.compute for r in roofs.values())
    for level, style, colour in (("l2", "-.", "#2ca02c"), ("l1", (0, (1, 1)), "#9467bd")):
        bandwidth = getattr(result.settings, f"{level}_bandwidth")
        if bandwidth:
            _roof_line(ax, x_low, x_high, bandwidth, top, f"roof-{level}", style, colour,
                       f"{level.upper()} roof (calibrated)")


def save(fig: Figure, path: Path) -> None:
    """Write by extension (.svg, .png, .pdf), all or nothing (jsonfile.write_bytes: a failed
    write leaves no partial file and an existing one untouched). The SVG is deterministic."""
    path = Path(path)
    write_bytes(rendered(fig, output_format(path)), path)


def rendered(fig: Figure, kind: str) -> bytes:
    """The figure as a picture of ``kind`` (svg, png, pdf), cropped to what is drawn and
    marked as rooflint's (picture_marks: only such a picture is ever replaced); the SVG is
    deterministic (no date, a fixed hash salt) and keeps its text as text, so a file and a
    report that inlines it draw the same picture."""
    picture = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "rooflint", "svg.fonttype": "none"}):
        fig.savefig(picture, format=kind, metadata=METADATA[kind], bbox_inches="tight")
    return picture.getvalue()


def output_format(path: Path) -> str:
    """The picture format that ``path`` names; RooflintError, naming the path, for an
    extension we do not write or a directory that does not exist (checked before drawing)."""
    kind = picture_format(path)
    require_directory(path)
    return kind


def picture_format(path: Path) -> str:
    """The picture format that ``path``'s extension names; RooflintError, naming the
    path, for one we do not write."""
    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise RooflintError(f"cannot write {path}: use .svg, .png or .pdf")
    return kind
