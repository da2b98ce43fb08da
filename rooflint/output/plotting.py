"""The roofline picture: results -> SVG, PNG or PDF (matplotlib, Agg backend, no display).

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

Labels never overlap one another, a marker or another text: each takes the free spot
nearest its dot (as rendered by Agg), preferring spots that cross no line, and is joined
to its dot by a thin leader line when it had to move away.

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
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.backend_bases import RendererBase  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from rooflint.common.errors import RooflintError  # noqa: E402
from rooflint.common.printable import printable, printable_fields  # noqa: E402
from rooflint.formats.jsonfile import require_directory, write_bytes  # noqa: E402
from rooflint.formats.results import FamilyResult, RunResult, VariantResult  # noqa: E402
from rooflint.common.units import format_params  # noqa: E402

VERDICT_COLOURS = {"bandwidth": "#1f77b4", "compute": "#9467bd", "chain": "#ff7f0e"}
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
TERA = 1e12                      # the y axis reads in TFLOP/s; a power of ten, so decades stay
DOT_SIZE, HOLLOW_SIZE = 7, 6     # marker diameters, points
LEVEL_MARKERS = {"l2": "s", "l1": "^"}   # inner memory levels: square, triangle
LEVEL_SIZE = 5                   # their marker diameter, points
SHARE_DOT_SIZE = 28      # marker diameter of a kernel that took all of a profiled program's time
LABEL_SIZE = 8                   # label font size, points
CLEARANCE = 2.0                  # points kept free around every label
SEARCH_RADIUS = 110              # how far (points) a label may move from its dot
SEARCH_STEP = 3                  # spacing (points) of the spots tried
LEADER_FROM = 6                  # a label further than this (points) from its dot gets a leader
LINE_COST = 4.0                  # points of distance a label pays per line sample it covers
LINE_SAMPLE = 2.0                # spacing (points) of the samples taken along lines
AMBIGUITY_MARGIN = 6             # a label must be this much nearer its own dot than another
AMBIGUITY_COST = 3.0             # ... or pay this per point it falls short
CENTRE_COST = 0.05               # among spots as near, the one centred nearest the dot wins


@dataclass
class Placed:
    label: str                   # as printed beside the dot
    key: str                     # as used in the SVG ids
    family: FamilyResult
    variant: VariantResult

    @property
    def xy(self) -> tuple[float, float]:
        return self.variant.point.observed_ai, self.variant.point.achieved_flops


def _placeable(results: list[RunResult], names: list[str] | None) -> tuple[list[Placed], list[str]]:
    """Variants with a point and arithmetic (log axes need AI > 0); the rest, by label."""
    placed, skipped = [], []
    many = len(results) > 1
    for index, result in enumerate(results, start=1):
        shared = _shared_names(result)
        for family in result.families:
            for v in family.variants:
                if names and v.name not in names:
                    continue
                name = f"{family.name}/{v.name}" if v.name in shared else v.name
                label, key = (f"{name} ({index})", f"{index}-{name}") if many else (name, name)
                if v.point and v.point.flops > 0 and v.point.observed_ai > 0:
                    placed.append(Placed(label, key, family, v))
                else:
                    skipped.append(label)
    if names:
        order = {n: i for i, n in enumerate(names)}
        placed.sort(key=lambda p: order[p.variant.name])
    return placed, skipped


def _shared_names(result: RunResult) -> set[str]:
    """Variant names that more than one family of ``result`` uses."""
    counts = Counter(name for family in result.families
                     for name in {v.name for v in family.variants})
    return {name for name, count in counts.items() if count > 1}


def figure(results: list[RunResult], names: list[str] | None = None, trajectory: bool = False,
           ax: plt.Axes | None = None) -> Figure:
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
    placed, skipped = _placeable(results, names)
    if not placed:
        raise RooflintError("no variant can be placed: none has a measured point with FLOPs "
                            "(copies have no arithmetic intensity on log axes)")
    if ax is None:
        fig, ax = plt.subplots(figsize=(11, 6), dpi=100)
    else:
        fig = ax.figure
    x_low, x_high = _x_range(placed)
    _set_axes(ax, placed, x_low, x_high)
    _draw_roofs(ax, placed, results[0], x_low, x_high)
    _draw_points(ax, placed)
    if trajectory:
        _draw_trajectory(ax, placed)
    _legend(ax, results, placed)
    if skipped:
        ax.annotate(_literal(f"not placed (no FLOPs or no measurement): {', '.join(skipped)}"),
                    (0, 0),
                    xycoords="axes fraction", xytext=(0, -36), textcoords="offset points",
                    fontsize=7, color="#666666", va="top")
    renderer = fig.canvas.get_renderer()
    _fit_title(ax, renderer, _titles(placed, results[0].gpu.name))
    _label_points(fig, ax, placed)
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


def _literal(text: str) -> str:
    """``text`` drawn as written: matplotlib reads a pair of $ as mathematics (and fails
    on some), so each is escaped."""
    return text.replace("$", r"\$")


def _fit_title(ax, renderer: RendererBase, titles: list[str]) -> None:
    """The first title as wide as the axes at most (the last one whatever its width)."""
    for title in titles:
        ax.set_title(_literal(title))
        if ax.title.get_window_extent(renderer).width <= ax.bbox.width:
            return


def _x_range(placed: list[Placed]) -> tuple[float, float]:
    xs = [p.variant.point.observed_ai for p in placed] + \
         [p.variant.point.algorithmic_ai for p in placed] + \
         [p.variant.roofs.ridge for p in placed] + \
         [level.intensity for p in placed for level in _inner_levels(p.variant)]
    return min(xs) / 4, max(xs) * 4


def _inner_levels(v: VariantResult) -> list:
    """L2 and L1 levels with a finite, positive intensity (log axes)."""
    return [level for level in v.levels if level.name in LEVEL_MARKERS
            and 0 < level.intensity < math.inf]


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
        calibrated = r.compute != r.datasheet_compute or r.dram_bandwidth != r.datasheet_dram_bandwidth
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
        bandwidth = result.settings.get(f"{level}_bandwidth")
        if bandwidth:
            _roof_line(ax, x_low, x_high, bandwidth, top, f"roof-{level}", style, colour,
                       f"{level.upper()} roof (calibrated)")


def dot_size(v: VariantResult) -> float:
    """A profiled kernel's dot has an area in proportion to its share of the program's GPU
    time (the whole program would be a dot SHARE_DOT_SIZE across); a variant's is DOT_SIZE."""
    if v.share is None:
        return DOT_SIZE
    return max(DOT_SIZE / 2, SHARE_DOT_SIZE * math.sqrt(v.share.share))


def _draw_points(ax, placed: list[Placed]) -> None:
    seen = set()
    for p in placed:
        point, bound = p.variant.point, p.variant.verdict.bound
        colour = VERDICT_COLOURS[bound]
        if point.algorithmic_known:     # no compulsory bytes counted: no gap to draw
            gap = ax.plot([point.observed_ai, point.algorithmic_ai], [point.achieved_flops] * 2,
                          ":", color=colour, linewidth=1)[0]
            gap.set_gid(f"gap-{p.key}")
            hollow = ax.plot([point.algorithmic_ai], [point.achieved_flops], "o", mfc="none",
                             mec=colour, markersize=HOLLOW_SIZE)[0]
            hollow.set_gid(f"algorithmic-{p.key}")
        _draw_levels(ax, p, colour)
        dot = ax.plot([point.observed_ai], [point.achieved_flops], "o", color=colour,
                      markersize=dot_size(p.variant))[0]
        dot.set_gid(f"variant-{p.key}")
        if bound not in seen:           # the legend's entry: a dot of the usual size
            ax.plot([], [], "o", color=colour, markersize=DOT_SIZE, label=f"{bound}-bound")
        seen.add(bound)


def _draw_levels(ax, p: Placed, colour: str) -> None:
    """The variant's L2 and L1 marks at its FLOP/s, joined to its dot."""
    levels = _inner_levels(p.variant)
    if not levels:
        return
    y = p.variant.point.achieved_flops
    xs = sorted([p.variant.point.observed_ai, *(level.intensity for level in levels)])
    ax.plot([xs[0], xs[-1]], [y, y], "-", color=colour, linewidth=0.6,
            alpha=0.5)[0].set_gid(f"levels-{p.key}")
    for level in levels:
        ax.plot([level.intensity], [y], LEVEL_MARKERS[level.name], mfc="none", mec=colour,
                markersize=LEVEL_SIZE)[0].set_gid(f"level-{level.name}-{p.key}")


def _draw_trajectory(ax, placed: list[Placed]) -> None:
    for index, (a, b) in enumerate(zip(placed, placed[1:]), start=1):
        arrow = ax.annotate("", xy=b.xy, xytext=a.xy,
                            arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 1.2,
                                        "shrinkA": 5, "shrinkB": 5})
        arrow.arrow_patch.set_gid(f"trajectory-{index}")


def _legend(ax, results: list[RunResult], placed: list[Placed]) -> None:
    """Roofs and verdict colours (labelled where drawn), the marks, and which run is which."""
    grey = "#666666"
    marks = [Line2D([], [], linestyle="none", marker="o", mfc="none", mec=grey,
                    markersize=HOLLOW_SIZE,
                    label="algorithmic intensity: where the dot would be\n"
                          "with compulsory bytes only"),
             Line2D([], [], linestyle=":", color=grey, linewidth=1,
                    label="gap between observed and\nalgorithmic intensity")]
    drawn = {level.name for p in placed for level in _inner_levels(p.variant)}
    marks += [Line2D([], [], linestyle="none", marker=LEVEL_MARKERS[name], mfc="none", mec=grey,
                     markersize=LEVEL_SIZE, label=f"the same kernel's FLOP per {name.upper()} byte")
              for name in LEVEL_MARKERS if name in drawn]
    runs = [Line2D([], [], linestyle="none", label=_literal(f"({index}) run of {r.created}"))
            for index, r in enumerate(results, start=1)] if len(results) > 1 else []
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + marks + runs, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              fontsize=8, frameon=False)


@dataclass
class Scene:
    """What labels must avoid, in display pixels: boxes they may not touch (markers, texts,
    labels already placed) and samples along lines they had rather not cover."""

    area: np.ndarray             # the axes: x0, y0, x1, y1
    boxes: np.ndarray            # (n, 4) x0, y0, x1, y1
    line_points: np.ndarray      # (m, 2)
    leaders: np.ndarray          # (k, 4) x0, y0, x1, y1: leader lines drawn so far
    dots: np.ndarray             # (d, 2) the variants' dots, which a label must not seem to name

    def near(self, centre: np.ndarray, reach: float) -> "Scene":
        """The part of the scene within ``reach`` pixels (per axis) of ``centre``."""
        lows, highs = centre - reach, centre + reach
        boxes = np.all((self.boxes[:, 2:] >= lows) & (self.boxes[:, :2] <= highs), axis=1)
        points = np.all((self.line_points >= lows) & (self.line_points <= highs), axis=1)
        dots = np.all((self.dots >= lows) & (self.dots <= highs), axis=1)
        return Scene(self.area, self.boxes[boxes], self.line_points[points], self.leaders,
                     self.dots[dots])

    def add(self, box: np.ndarray, leader: np.ndarray | None, step: float) -> None:
        """A placed label, and its leader (from the dot to the label) if it has one."""
        self.boxes = np.vstack([self.boxes, box])
        if leader is not None:
            self.line_points = np.vstack([self.line_points, _samples(leader.reshape(2, 2), step)])
            self.leaders = np.vstack([self.leaders, leader])


def _scene(ax, renderer: RendererBase, dots: np.ndarray, pad: float, step: float) -> Scene:
    """The scene as drawn so far: every marker and text (``pad`` pixels wider) as a box;
    lines, arrows included, as samples ``step`` pixels apart."""
    boxes, points = [], []
    for line in ax.get_lines():
        xy = line.get_transform().transform(line.get_xydata())
        if line.get_marker() not in ("None", "", None):
            radius = renderer.points_to_pixels(line.get_markersize()) / 2 + pad
            boxes += [(x - radius, y - radius, x + radius, y + radius) for x, y in xy]
        if line.get_linestyle() not in ("None", ""):
            points.append(_samples(xy, step))
    for text in ax.texts:
        if text.get_text():
            b = text.get_window_extent(renderer)
            boxes.append((b.x0 - pad, b.y0 - pad, b.x1 + pad, b.y1 + pad))
        if getattr(text, "arrow_patch", None) is not None:
            patch = text.arrow_patch
            for polyline in patch.get_transform().transform_path(patch.get_path()).to_polygons(
                    closed_only=False):
                points.append(_samples(polyline, step))
    area = np.array(ax.bbox.extents)
    return Scene(area, np.array(boxes).reshape(-1, 4), np.vstack(points or [np.empty((0, 2))]),
                 np.empty((0, 4)), dots)


def _samples(polyline: np.ndarray, step: float) -> np.ndarray:
    """Points every ``step`` pixels along a polyline (display coordinates)."""
    pieces = [polyline[:1]]
    for a, b in zip(polyline[:-1], polyline[1:]):
        count = max(1, math.ceil(np.hypot(*(b - a)) / step))
        pieces.append(a + np.outer(np.arange(1, count + 1) / count, b - a))
    return np.vstack(pieces)


def _label_points(fig: Figure, ax, placed: list[Placed]) -> None:
    """Label every dot, the most crowded first (top to bottom among equals), so that dots
    in a cluster get the spots nearest them before lone dots, which have room anywhere."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pixels = renderer.points_to_pixels(1.0)
    dots = ax.transData.transform([p.xy for p in placed])
    scene = _scene(ax, renderer, dots, CLEARANCE * pixels, LINE_SAMPLE * pixels)
    reach = SEARCH_RADIUS * pixels
    crowding = [sum(np.hypot(*(dot - other)) < reach for other in dots) for dot in dots]
    order = sorted(range(len(placed)), key=lambda i: (-crowding[i], -dots[i][1], placed[i].key))
    for i in order:
        _label_point(ax, renderer, scene, placed[i], dots[i])


def _label_point(ax, renderer: RendererBase, scene: Scene, p: Placed, dot: np.ndarray) -> None:
    """Put ``p``'s label on the best free spot, with a leader if that is away from the dot,
    and add both to the scene for the labels still to come."""
    pixels = renderer.points_to_pixels(1.0)
    text = ax.annotate(_literal(p.label), p.xy, textcoords="offset points", xytext=(0, 0),
                       fontsize=LABEL_SIZE, ha="left", va="bottom")
    text.set_gid(f"label-{p.key}")
    extent = text.get_window_extent(renderer)
    box = _free_spot(scene, dot, np.array([extent.width, extent.height]), pixels)
    text.xyann = tuple((box[:2] - dot) / pixels)
    near = np.clip(dot, box[:2], box[2:])
    leader = None
    if np.hypot(*(near - dot)) > LEADER_FROM * pixels:
        leader = np.concatenate([dot, near])
        line = ax.annotate("", xy=p.xy, xytext=tuple((near - dot) / pixels),
                           textcoords="offset points",
                           arrowprops={"arrowstyle": "-", "color": "#888888", "lw": 0.6,
                                       "shrinkA": 0, "shrinkB": DOT_SIZE / 2})
        line.arrow_patch.set_gid(f"leader-{p.key}")
    clear = CLEARANCE * pixels
    scene.add(box + np.array([-clear, -clear, clear, clear]), leader, LINE_SAMPLE * pixels)


def _free_spot(scene: Scene, dot: np.ndarray, size: np.ndarray, pixels: float) -> np.ndarray:
    """The box of ``size`` near ``dot`` that touches no obstacle and whose leader crosses
    none, cheapest by distance, lines covered and nearness to other dots; if no spot is
    free, the nearest inside the axes."""
    offsets = np.arange(-SEARCH_RADIUS, SEARCH_RADIUS + SEARCH_STEP, SEARCH_STEP) * pixels
    centres = dot + np.stack(np.meshgrid(offsets, offsets), axis=-1).reshape(-1, 2)
    candidates = np.hstack([centres - size / 2, centres + size / 2])
    near = np.clip(dot, candidates[:, :2], candidates[:, 2:])
    distance = np.hypot(*(near - dot).T)
    inside = np.all((candidates[:, :2] >= scene.area[:2]) & (candidates[:, 2:] <= scene.area[2:]),
                    axis=1)
    scene = scene.near(dot, SEARCH_RADIUS * pixels + size.max())
    free = np.flatnonzero(inside & ~_overlaps(candidates, scene.boxes))
    leaders = np.hstack([np.broadcast_to(dot, near[free].shape), near[free]])
    free = free[~_leader_blocked(scene, dot, near[free]) & ~_crosses(leaders, scene.leaders)]
    if not len(free):
        return candidates[int(np.argmin(np.where(inside, distance, np.inf)))]
    others = scene.dots[np.any(scene.dots != dot, axis=1)]
    closer = np.maximum(0.0, distance[free] + AMBIGUITY_MARGIN * pixels -
                        _nearest(candidates[free], others))
    cost = distance[free] + CENTRE_COST * np.hypot(*(centres[free] - dot).T) + \
        LINE_COST * pixels * _covered(candidates[free], scene.line_points) + \
        AMBIGUITY_COST * closer
    return candidates[free[int(np.argmin(cost))]]


def _overlaps(candidates: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """For each candidate box, whether it intersects any of ``boxes``."""
    if not len(boxes):
        return np.zeros(len(candidates), bool)
    c, b = candidates[:, None, :], boxes[None, :, :]
    return np.any((c[..., 0] < b[..., 2]) & (b[..., 0] < c[..., 2]) &
                  (c[..., 1] < b[..., 3]) & (b[..., 1] < c[..., 3]), axis=1)


def _leader_blocked(scene: Scene, dot: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether a leader from ``dot`` to each of ``ends`` would run through a box other than
    the dot's own markers."""
    others = scene.boxes[~np.all((scene.boxes[:, :2] <= dot) & (dot <= scene.boxes[:, 2:]), axis=1)]
    if not len(others) or not len(ends):
        return np.zeros(len(ends), bool)
    t = np.linspace(0.0, 1.0, 8)[None, :, None]
    points = dot + t * (ends - dot)[:, None, :]                      # (n, 8, 2)
    p, b = points[:, :, None, :], others[None, None, :, :]
    hit = (b[..., 0] < p[..., 0]) & (p[..., 0] < b[..., 2]) & \
          (b[..., 1] < p[..., 1]) & (p[..., 1] < b[..., 3])
    return hit.any(axis=(1, 2))


def _crosses(segments: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For each segment (x0, y0, x1, y1), whether it properly crosses any of ``others``."""
    if not len(others):
        return np.zeros(len(segments), bool)
    a, b = segments[:, None, :2], segments[:, None, 2:]
    c, d = others[None, :, :2], others[None, :, 2:]

    def side(p, q, r):
        return np.sign((q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1]) -
                       (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0]))

    return np.any((side(a, b, c) * side(a, b, d) < 0) & (side(c, d, a) * side(c, d, b) < 0),
                  axis=1)


def _nearest(candidates: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For each candidate box, its distance to the nearest of ``points`` (inf if none)."""
    if not len(points):
        return np.full(len(candidates), np.inf)
    c, p = candidates[:, None, :], points[None, :, :]
    gap = np.maximum(0.0, np.maximum(c[..., :2] - p, p - c[..., 2:]))
    return np.hypot(gap[..., 0], gap[..., 1]).min(axis=1)


def _covered(candidates: np.ndarray, points: np.ndarray) -> np.ndarray:
    """How many line samples each candidate box covers."""
    if not len(points):
        return np.zeros(len(candidates))
    c, p = candidates[:, None, :], points[None, :, :]
    return np.sum((c[..., 0] <= p[..., 0]) & (p[..., 0] <= c[..., 2]) &
                  (c[..., 1] <= p[..., 1]) & (p[..., 1] <= c[..., 3]), axis=1)


def save(fig: Figure, path: Path) -> None:
    """Write by extension (.svg, .png, .pdf), all or nothing (jsonfile.write_bytes: a failed
    write leaves no partial file and an existing one untouched). The SVG is deterministic."""
    path = Path(path)
    kind = output_format(path)
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": {}}[kind]
    picture = io.BytesIO()
    with plt.rc_context({"svg.hashsalt": "rooflint", "svg.fonttype": "none"}):
        fig.savefig(picture, format=kind, metadata=metadata, bbox_inches="tight")
    write_bytes(picture.getvalue(), path)


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
