"""Labels for the roofline's dots that never overlap one another, a marker or another text:
each takes the free spot nearest its dot (as rendered by Agg), preferring spots that cross no
line, and is joined to its dot by a thin leader line when it had to move away; a dot with
no free spot near it stays unnamed. A profile's costliest kernels get their number. Apart from
the drawing because it is a search in display pixels over the picture as rendered (numpy
geometry), run once every other mark is drawn.

Imported through plotting.py, which the CLI and ``rooflint.plot`` import inside their
functions: matplotlib and numpy, imported here at the top, cost start-up only when drawing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib.backend_bases import RendererBase
from matplotlib.figure import Figure

from rooflint.output.plot_marks import DOT_SIZE, Placed, literal, numbered

LABEL_SIZE = 8                   # label font size, points
CLEARANCE = 2.0                  # points kept free around every label
SEARCH_RADIUS = 110              # how far (points) a label may move from its dot
CLUSTER_SEARCH_RADIUS = 220      # ... when no spot that near is free (a cluster of GEMMs)
SEARCH_STEP = 3                  # spacing (points) of the spots tried
LEADER_FROM = 6                  # a label further than this (points) from its dot gets a leader
LINE_COST = 4.0                  # points of distance a label pays per line sample it covers
LINE_SAMPLE = 2.0                # spacing (points) of the samples taken along lines
AMBIGUITY_MARGIN = 6             # a label must be this much nearer its own dot than another
AMBIGUITY_COST = 3.0             # ... or pay this per point it falls short
CENTRE_COST = 0.05               # among spots as near, the one centred nearest the dot wins
# A run's variants named at most (each is its author's, so each gets a name where there is
# room; a profile's kernels are numbered, plot_marks.NUMBERED_KERNELS): each search costs
# time growing with the labels already near it (1,000 dots in one cluster took 147 s), and
# a picture reads no more names than this.
MAX_LABELS = 200


@dataclass
class Scene:
    """What labels must avoid, in display pixels: boxes they may not touch (markers, texts,
    labels already placed), the texts' among them, which no leader may cross either, and
    samples along lines they had rather not cover."""

    area: np.ndarray             # the axes: x0, y0, x1, y1
    boxes: np.ndarray            # (n, 4) x0, y0, x1, y1
    writing: np.ndarray          # (w, 4) the boxes of texts and labels
    line_points: np.ndarray      # (m, 2)
    leaders: np.ndarray          # (k, 4) x0, y0, x1, y1: leader lines drawn so far
    dots: np.ndarray             # (d, 2) the variants' dots, which a label must not seem to name

    def near(self, centre: np.ndarray, reach: float) -> "Scene":
        """The part of the scene within ``reach`` pixels (per axis) of ``centre``."""
        lows, highs = centre - reach, centre + reach
        points = np.all((self.line_points >= lows) & (self.line_points <= highs), axis=1)
        dots = np.all((self.dots >= lows) & (self.dots <= highs), axis=1)
        return Scene(self.area, _within(self.boxes, lows, highs),
                     _within(self.writing, lows, highs), self.line_points[points],
                     self.leaders, self.dots[dots])

    def add(self, box: np.ndarray, leader: np.ndarray | None, step: float) -> None:
        """A placed label, and its leader (from the dot to the label) if it has one."""
        self.boxes = np.vstack([self.boxes, box])
        self.writing = np.vstack([self.writing, box])
        if leader is not None:
            self.line_points = np.vstack([self.line_points, _samples(leader.reshape(2, 2), step)])
            self.leaders = np.vstack([self.leaders, leader])


def _within(boxes: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> np.ndarray:
    """The ``boxes`` that reach into the rectangle from ``lows`` to ``highs``."""
    return boxes[np.all((boxes[:, 2:] >= lows) & (boxes[:, :2] <= highs), axis=1)]


def _scene(ax, renderer: RendererBase, dots: np.ndarray, pad: float, step: float) -> Scene:
    """The scene as drawn so far: every marker and text (``pad`` pixels wider) as a box;
    lines, arrows included, as samples ``step`` pixels apart."""
    boxes, writing, points = [], [], []
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
            writing.append((b.x0 - pad, b.y0 - pad, b.x1 + pad, b.y1 + pad))
        if getattr(text, "arrow_patch", None) is not None:
            patch = text.arrow_patch
            for polyline in patch.get_transform().transform_path(patch.get_path()).to_polygons(
                    closed_only=False):
                points.append(_samples(polyline, step))
    area = np.array(ax.bbox.extents)
    # a box drawn many times (variants at one point) is one obstacle: each label's search
    # costs time in proportion to the boxes near it
    return Scene(area, np.unique(np.array(boxes + writing).reshape(-1, 4), axis=0),
                 np.unique(np.array(writing).reshape(-1, 4), axis=0),
                 np.unique(np.vstack(points or [np.empty((0, 2))]), axis=0), np.empty((0, 4)),
                 np.unique(dots, axis=0))


def _samples(polyline: np.ndarray, step: float) -> np.ndarray:
    """Points every ``step`` pixels along a polyline (display coordinates)."""
    pieces = [polyline[:1]]
    for a, b in zip(polyline[:-1], polyline[1:]):
        count = max(1, math.ceil(np.hypot(*(b - a)) / step))
        pieces.append(a + np.outer(np.arange(1, count + 1) / count, b - a))
    return np.vstack(pieces)


def to_name(placed: list[Placed]) -> list[tuple[Placed, str]]:
    """The dots a label is looked for, with its text: a profile's numbered kernels, their
    number (the key beside the chart names them); a run's first MAX_LABELS variants, their
    name."""
    kernels = numbered(placed)
    if kernels:
        return [(p, str(rank)) for rank, p in enumerate(kernels, start=1)]
    return [(p, p.short_label()) for p in placed[:MAX_LABELS]]


def label_points(fig: Figure, ax, placed: list[Placed]) -> int:
    """Label the dots to_name chooses: a profile's kernels the most GPU time first, so that
    the costliest get their number where room runs out; then the most crowded first (top to
    bottom among equals), so that dots in a cluster get the spots nearest them before lone
    dots, which have room anywhere. A dot with no free spot near it stays unnamed: a label
    on another names neither. Returns how many dots were left unnamed."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pixels = renderer.points_to_pixels(1.0)
    dots = ax.transData.transform([p.xy for p in placed])
    scene = _scene(ax, renderer, dots, CLEARANCE * pixels, LINE_SAMPLE * pixels)
    chosen = to_name(placed)
    at = ax.transData.transform([p.xy for p, _ in chosen])
    gaps = np.hypot(*(at[:, None, :] - at[None, :, :]).transpose(2, 0, 1))
    crowding = (gaps < SEARCH_RADIUS * pixels).sum(axis=1)
    order = sorted(range(len(chosen)), key=lambda i: (-_share(chosen[i][0]), -crowding[i],
                                                      -at[i][1], chosen[i][0].key))
    named, crowded = 0, set()       # where a label found no room, the next finds none either
    for i in order:
        spot = tuple(np.round(at[i]))
        if spot in crowded:
            continue
        if _label_point(ax, renderer, scene, *chosen[i], at[i]):
            named += 1
        else:
            crowded.add(spot)
    return len(placed) - named


def _share(p: Placed) -> float:
    return p.variant.share.share if p.variant.share else 0.0


def _label_point(ax, renderer: RendererBase, scene: Scene, p: Placed, label: str,
                 dot: np.ndarray) -> bool:
    """Put ``label`` on the best free spot near ``p``'s dot, with a leader if that is away
    from the dot, and add both to the scene for the labels still to come; False, and no
    label, where no spot is free."""
    pixels = renderer.points_to_pixels(1.0)
    text = ax.annotate(literal(label), p.xy, textcoords="offset points", xytext=(0, 0),
                       fontsize=LABEL_SIZE, ha="left", va="bottom")
    text.set_gid(f"label-{p.key}")
    extent = text.get_window_extent(renderer)
    size = np.array([extent.width, extent.height])
    box = _free_spot(scene, dot, size, pixels, scene.boxes, SEARCH_RADIUS)
    if box is None:     # a dot inside a cluster: further, its leader past markers, not a text
        box = _free_spot(scene, dot, size, pixels, scene.writing, CLUSTER_SEARCH_RADIUS)
    if box is None:
        text.remove()
        return False
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
    return True


def _free_spot(scene: Scene, dot: np.ndarray, size: np.ndarray, pixels: float,
               barriers: np.ndarray, radius: float) -> np.ndarray | None:
    """The box of ``size`` within ``radius`` points of ``dot``, inside the axes, that
    touches no obstacle and whose leader crosses none of ``barriers`` (boxes) nor another
    leader, cheapest by distance, lines covered and nearness to other dots; None if no spot
    is free."""
    offsets = np.arange(-radius, radius + SEARCH_STEP, SEARCH_STEP) * pixels
    centres = dot + np.stack(np.meshgrid(offsets, offsets), axis=-1).reshape(-1, 2)
    candidates = np.hstack([centres - size / 2, centres + size / 2])
    near = np.clip(dot, candidates[:, :2], candidates[:, 2:])
    distance = np.hypot(*(near - dot).T)
    inside = np.all((candidates[:, :2] >= scene.area[:2]) & (candidates[:, 2:] <= scene.area[2:]),
                    axis=1)
    reach = radius * pixels + size.max()
    scene, barriers = scene.near(dot, reach), _within(barriers, dot - reach, dot + reach)
    free = np.flatnonzero(inside & ~_overlaps(candidates, scene.boxes))
    leaders = np.hstack([np.broadcast_to(dot, near[free].shape), near[free]])
    free = free[~_leader_blocked(barriers, dot, near[free]) & ~_crosses(leaders, scene.leaders)]
    if not len(free):
        return None
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


def _leader_blocked(barriers: np.ndarray, dot: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether a leader from ``dot`` to each of ``ends`` would run through one of
    ``barriers`` other than the dot's own markers."""
    others = barriers[~np.all((barriers[:, :2] <= dot) & (dot <= barriers[:, 2:]), axis=1)]
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
