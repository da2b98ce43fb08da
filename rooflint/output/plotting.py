"""The roofline picture: results -> SVG, PNG or PDF (matplotlib's Agg canvas, no display).

Log-log axes, x in FLOP per DRAM byte, y in FLOP/s labelled in TFLOP/s; the DRAM roof and
one compute roof per precision present, each precision in a colour of its own, calibrated
ones solid and datasheet ones dashed; ridge points marked and named by precision; the L2
and L1 roofs when a calibration measured them; each variant a dot at its
observed intensity, coloured by verdict, joined by a dotted gap line to a hollow marker at
its algorithmic intensity (where the dot would be if the kernel moved compulsory bytes
only); optional trajectory arrows in the order given. The legend explains every mark.
A variant measured with counters also has a mark per inner memory level, as in Nsight
Compute's hierarchical roofline: a square at its L2 intensity (FLOPs per L2 byte) and a
triangle at its L1 intensity, at the same FLOP/s, joined to the dot by a thin line; the
L2 roof is read against the squares and the L1 roof against the triangles, so an
L2-bound kernel's square sits on the L2 roof. A level most of the kernel's data went around
(roofline.bypassed: cuBLAS's TMA GEMMs and L1) has no mark; a note under the chart counts them.

The picture is the same size whatever the number of kernels (MAX_PIXELS): a run's variants
are named beside their dots where there is room; a profile's NUMBERED_KERNELS kernels with
the most GPU time are numbered, and named with their share in a key under the legend; the
notes under the axes count the dots left unnamed and name the first few of what is not
placed. In the SVG each dot's group has a <title> (its name, share and verdict), which a
browser shows on hover.

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
import re
import textwrap
from html import escape, unescape
from pathlib import Path
from weakref import WeakKeyDictionary

import matplotlib
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rooflint.analysis.evidence import pct
from rooflint.analysis.roofline import BYPASSED_BELOW
from rooflint.common.errors import RooflintError
from rooflint.common.printable import printable, printable_fields
from rooflint.formats.jsonfile import require_directory, write_bytes
from rooflint.formats.results import FamilyResult, RunResult
from rooflint.common.units import format_params
from rooflint.common.vocabularies import Precision
from rooflint.output.picture_marks import METADATA
from rooflint.output.plot_labels import label_points
from rooflint.output.plot_marks import (
    NUMBERED_KERNELS, Placed, bypassed_levels, draw_legend, draw_points, draw_trajectory,
    inner_levels, literal, numbered, placeable, shortened)

FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
TERA = 1e12                      # the y axis reads in TFLOP/s; a power of ten, so decades stay
# The figure's size in inches at 100 dots an inch: the axes, with the legend right of them
# and the notes under them, make a PNG of at most MAX_PIXELS whatever the number of kernels
# (labels, notes and the list of what is not placed are bounded; tests hold every recorded
# profile to it).
FIGURE_INCHES, DPI = (11, 6), 100
MAX_PIXELS = (1500, 750)         # width, height
# Each precision's compute roof in a colour of its own, none of the verdicts' (blue,
# purple, orange) nor the L2 and L1 roofs' (green, purple): a profile draws fp32, fp16 and
# bf16 tensor roofs together.
ROOF_COLOURS = {Precision.FP64: "#000000", Precision.FP64_TENSOR: "#666666",
                Precision.FP32: "#333333", Precision.FP16: "#b8860b",
                Precision.TF32_TENSOR: "#0f8a9d", Precision.FP16_TENSOR: "#d62728",
                Precision.BF16_TENSOR: "#c2188b", Precision.FP8_TENSOR: "#8c564b",
                Precision.INT8_TENSOR: "#393b79"}
DATASHEET_ALPHA = 0.5            # a datasheet roof is dashed, and this faint beside a measured one
NOTE_CHARS = 150                 # a note under the axes wraps at about the axes' width
NOT_PLACED_NAMED = 4             # what is not placed: this many named, the rest counted


# Each figure's dots' hover texts by SVG id, kept until the figure is written (rendered puts
# each in its dot's group as an SVG <title>, which a browser shows on hover); weak, so a
# figure dropped takes its own.
_TOOLTIPS: WeakKeyDictionary[Figure, dict[str, str]] = WeakKeyDictionary()


class RooflineFigure(Figure):
    """The roofline's figure, on an Agg canvas of its own (no pyplot: see the top); in a
    notebook it shows itself as the PNG `rooflint plot -o roofline.png` writes."""

    def __init__(self) -> None:
        super().__init__(figsize=FIGURE_INCHES, dpi=DPI)
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
                            "and DRAM bytes (copies have no arithmetic intensity on log axes)")
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
    renderer = fig.canvas.get_renderer()
    _fit_title(ax, renderer, _titles(placed, results[0].gpu.name))
    unnamed = label_points(fig, ax, placed)
    _note(ax, _unnamed_line(placed, unnamed) + _bypassed_lines(placed) +
          _not_placed_lines(skipped))
    _TOOLTIPS[fig] = {f"variant-{p.key}": _tooltip(p) for p in placed}
    return fig


def _unnamed_line(placed: list[Placed], unnamed: int) -> list[str]:
    """How many dots carry no label (or number), and which do."""
    if not unnamed:
        return []
    hover = "(the SVG and the HTML report name every dot on hover)"
    if numbered(placed):
        return [f"{unnamed:,} of {len(placed):,} kernels unnumbered: the "
                f"{NUMBERED_KERNELS} with the most GPU time are numbered where there is room "
                f"{hover}"]
    return [f"{unnamed:,} dots unnamed, with no room beside them {hover}"]


def _bypassed_lines(placed: list[Placed]) -> list[str]:
    """For each inner level, how many kernels have no mark for it, and why."""
    return [f"{name.upper()} marks left out for {_count(count, 'kernel')}: {name.upper()} moved "
            f"under {pct(BYPASSED_BELOW)} of the kernel's DRAM bytes, so its data went around "
            f"{name.upper()} (TMA, bulk copies)"
            for name, count in sorted(bypassed_levels(placed).items())]


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _not_placed_lines(skipped: list[str]) -> list[str]:
    """What is not placed, the most GPU time first, NOT_PLACED_NAMED of them by name."""
    if not skipped:
        return []
    named = ", ".join(shortened(name) for name in skipped[:NOT_PLACED_NAMED])
    more = len(skipped) - NOT_PLACED_NAMED
    return [f"not placed (no FLOPs, no DRAM bytes or no measurement): {named}"
            + (f" and {more:,} more" if more > 0 else "")]


def _note(ax, lines: list[str]) -> None:
    """What the picture leaves out, under the axes, each line wrapped to NOTE_CHARS."""
    if lines:
        text = "\n".join(wrapped for line in lines for wrapped in textwrap.wrap(line, NOTE_CHARS))
        ax.annotate(literal(text), (0, 0), xycoords="axes fraction", xytext=(0, -36),
                    textcoords="offset points", fontsize=7, color="#666666", va="top")


def _tooltip(p: Placed) -> str:
    """What a dot says on hover: its name in full, its share of the GPU time, its verdict."""
    share = f", {pct(p.variant.share.share)} of the GPU time" if p.variant.share else ""
    return f"{p.label}{share}: {p.variant.verdict.bound}-bound"


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
    """Every intensity drawn, with room around: the dots, hollow markers, ridges and the
    inner levels drawn (a bypassed L1's 3e8 FLOP/B had run a profile's axis to 1e9)."""
    xs = [p.variant.point.observed_ai for p in placed] + \
         [p.variant.point.algorithmic_ai for p in placed] + \
         [p.variant.roofs.ridge for p in placed] + \
         [level.intensity for p in placed for level in inner_levels(p.variant)]
    return min(xs) / 4, max(xs) * 4


def _roof_line(ax, x_low: float, x_high: float, bandwidth: float, compute: float, gid: str,
               style, colour: str, label: str, alpha: float = 1.0) -> None:
    ridge = compute / bandwidth
    xs = [x_low, ridge, x_high] if x_low < ridge < x_high else [x_low, x_high]
    ys = [min(compute, x * bandwidth) for x in xs]
    (line,) = ax.plot(xs, ys, linestyle=style, color=colour, linewidth=1.4, label=label,
                      alpha=alpha)
    line.set_gid(gid)


def _roof_name(precision: str) -> str:
    """A precision as a roof's label says it: ``bf16 tensor`` for bf16-tensor."""
    return precision.replace("-tensor", " tensor")


def _draw_roofs(ax, placed: list[Placed], result: RunResult, x_low: float, x_high: float) -> None:
    """Each precision's compute roof in its own colour (ROOF_COLOURS), calibrated solid and
    datasheet dashed (fainter beside a calibrated one), named in the legend and at its ridge
    point; then the L2 and L1 roofs a calibration measured, under the highest compute roof."""
    roofs = {}
    for p in placed:
        roofs.setdefault(p.variant.roofs.precision, p.variant.roofs)
    ridges: dict[tuple[float, float], list[str]] = {}   # (ridge, compute) -> precisions
    for precision, r in roofs.items():
        colour, name = ROOF_COLOURS[precision], _roof_name(precision)
        calibrated = (r.compute != r.datasheet_compute
                      or r.dram_bandwidth != r.datasheet_dram_bandwidth)
        if calibrated:
            _roof_line(ax, x_low, x_high, r.dram_bandwidth, r.compute, f"roof-{precision}",
                       "-", colour, f"{name} roof ({r.source})")
        _roof_line(ax, x_low, x_high, r.datasheet_dram_bandwidth, r.datasheet_compute,
                   f"roof-{precision}-datasheet", "--", colour, f"{name} roof (datasheet)",
                   DATASHEET_ALPHA if calibrated else 1.0)
        ridge = r.compute / r.dram_bandwidth
        marker = ax.plot([ridge], [r.compute], "D", color=colour, markersize=4)[0]
        marker.set_gid(f"ridge-{precision}")
        ridges.setdefault((ridge, r.compute), []).append(precision)
    for (ridge, compute), precisions in ridges.items():   # roofs meeting at one point: one note
        _ridge_note(ax, f"{', '.join(map(_roof_name, precisions))} ridge {ridge:.3g}",
                    (ridge, compute), ROOF_COLOURS[precisions[0]])
    top = max(r.compute for r in roofs.values())
    for level, style, colour in (("l2", "-.", "#2ca02c"), ("l1", (0, (1, 1)), "#9467bd")):
        bandwidth = getattr(result.settings, f"{level}_bandwidth")
        if bandwidth:
            _roof_line(ax, x_low, x_high, bandwidth, top, f"roof-{level}", style, colour,
                       f"{level.upper()} roof (calibrated)")


def _ridge_note(ax, text: str, ridge: tuple[float, float], colour: str) -> None:
    """``text`` above the ridge point, to its right, or to its left where it would run out
    of the axes (into the legend: a tensor roof's ridge lies near the right end)."""
    note = ax.annotate(text, ridge, textcoords="offset points", xytext=(4, 4), fontsize=7,
                       color=colour)
    if note.get_window_extent(ax.figure.canvas.get_renderer()).x1 > ax.bbox.x1:
        note.set_horizontalalignment("right")
        note.xyann = (-4, 4)


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
    if kind == "svg":
        return _with_titles(picture.getvalue(), _TOOLTIPS.get(fig, {}))
    return picture.getvalue()


_GROUP = re.compile(rb'<g id="([^"]*)">')


def _with_titles(svg: bytes, tooltips: dict[str, str]) -> bytes:
    """Each dot's group of ``svg`` with its tooltip as its first child, a <title>."""
    def titled(group: re.Match) -> bytes:
        tooltip = tooltips.get(unescape(group[1].decode()))
        return group[0] if tooltip is None else \
            group[0] + f"<title>{escape(tooltip, quote=False)}</title>".encode()
    return _GROUP.sub(titled, svg)


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
