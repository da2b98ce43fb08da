"""Labels for the roofline's dots that never overlap one another, a marker or another text:
each takes the free spot nearest its dot (as rendered by Agg), preferring spots that cross no
line, and is joined to its dot by a thin leader line when it had to move away. Apart from
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

from rooflint.output.plot_marks import DOT_SIZE, Placed, literal

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
# Labels placed at most: each search costs time growing with the labels already near it
# (1,000 dots in one cluster took 147 s), and a picture reads no more names than this. The
# dots come in their results' order (a profile's by GPU time), so the first are labelled.
MAX_LABELS = 200


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
    # a box drawn many times (variants at one point) is one obstacle: each label's search
    # costs time in proportion to the boxes near it
    return Scene(area, np.unique(np.array(boxes).reshape(-1, 4), axis=0),
                 np.unique(np.vstack(points or [np.empty((0, 2))]), axis=0), np.empty((0, 4)),
                 np.unique(dots, axis=0))


def _samples(polyline: np.ndarray, step: float) -> np.ndarray:
    """Points every ``step`` pixels along a polyline (display coordinates)."""
    pieces = [polyline[:1]]
    for a, b in zip(polyline[:-1], polyline[1:]):
        count = max(1, math.ceil(np.hypot(*(b - a)) / step))
        pieces.append(a + np.outer(np.arange(1, count + 1) / count, b - a))
    return np.vstack(pieces)


def label_points(fig: Figure, ax, placed: list[Placed]) -> int:
    """Label the first MAX_LABELS dots, the most crowded first (top to bottom among
    equals), so that dots in a cluster get the spots nearest them before lone dots, which
    have room anywhere. Returns how many dots were left unlabelled."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pixels = renderer.points_to_pixels(1.0)
    dots = ax.transData.transform([p.xy for p in placed])
    scene = _scene(ax, renderer, dots, CLEARANCE * pixels, LINE_SAMPLE * pixels)
    labelled = dots[:MAX_LABELS]
    gaps = np.hypot(*(labelled[:, None, :] - labelled[None, :, :]).transpose(2, 0, 1))
    crowding = (gaps < SEARCH_RADIUS * pixels).sum(axis=1)
    order = sorted(range(len(labelled)),
                   key=lambda i: (-crowding[i], -labelled[i][1], placed[i].key))
    for i in order:
        _label_point(ax, renderer, scene, placed[i], dots[i])
    return len(placed) - len(labelled)


def _label_point(ax, renderer: RendererBase, scene: Scene, p: Placed, dot: np.ndarray) -> None:
    """Put ``p``'s label on the best free spot, with a leader if that is away from the dot,
    and add both to the scene for the labels still to come."""
    pixels = renderer.points_to_pixels(1.0)
    text = ax.annotate(literal(p.label), p.xy, textcoords="offset points", xytext=(0, 0),
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
