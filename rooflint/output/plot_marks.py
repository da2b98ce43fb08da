"""What the roofline shows of each variant, drawn on the axes plotting.py has set up: the
dot coloured by verdict, the dotted gap line to the hollow marker at its algorithmic
intensity, its L2 and L1 marks, the trajectory arrows between variants, and the legend that
explains every mark. Apart from plotting.py (the figure: axes, roofs, ridges, title, file)
because these are the marks a reader compares, each keyed to one variant.

Imported through plotting.py, which the CLI and ``rooflint.plot`` import inside their
functions: matplotlib, imported here at the top, costs start-up only when a picture is drawn.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from matplotlib.lines import Line2D

from rooflint.analysis.evidence import Bound
from rooflint.formats.results import FamilyResult, RunResult, VariantResult

VERDICT_COLOURS = {Bound.BANDWIDTH: "#1f77b4", Bound.COMPUTE: "#9467bd", Bound.CHAIN: "#ff7f0e"}
DOT_SIZE, HOLLOW_SIZE = 7, 6     # marker diameters, points
LEVEL_MARKERS = {"l2": "s", "l1": "^"}   # inner memory levels: square, triangle
LEVEL_SIZE = 5                   # their marker diameter, points
SHARE_DOT_SIZE = 28      # marker diameter of a kernel that took all of a profiled program's time


@dataclass
class Placed:
    """A variant the figure can place: its dot's position, its label and its SVG id key."""

    label: str                   # as printed beside the dot
    key: str                     # as used in the SVG ids
    family: FamilyResult
    variant: VariantResult

    @property
    def xy(self) -> tuple[float, float]:
        return self.variant.point.observed_ai, self.variant.point.achieved_flops


def placeable(results: list[RunResult], names: list[str] | None) -> tuple[list[Placed], list[str]]:
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


def literal(text: str) -> str:
    """``text`` drawn as written: matplotlib reads a pair of $ as mathematics (and fails
    on some), so each is escaped."""
    return text.replace("$", r"\$")


def inner_levels(v: VariantResult) -> list:
    """L2 and L1 levels with a finite, positive intensity (log axes)."""
    return [level for level in v.levels if level.name in LEVEL_MARKERS
            and 0 < level.intensity < math.inf]


def dot_size(v: VariantResult) -> float:
    """A profiled kernel's dot has an area in proportion to its share of the program's GPU
    time (the whole program would be a dot SHARE_DOT_SIZE across); a variant's is DOT_SIZE."""
    if v.share is None:
        return DOT_SIZE
    return max(DOT_SIZE / 2, SHARE_DOT_SIZE * math.sqrt(v.share.share))


def draw_points(ax, placed: list[Placed]) -> None:
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
    levels = inner_levels(p.variant)
    if not levels:
        return
    y = p.variant.point.achieved_flops
    xs = sorted([p.variant.point.observed_ai, *(level.intensity for level in levels)])
    ax.plot([xs[0], xs[-1]], [y, y], "-", color=colour, linewidth=0.6,
            alpha=0.5)[0].set_gid(f"levels-{p.key}")
    for level in levels:
        ax.plot([level.intensity], [y], LEVEL_MARKERS[level.name], mfc="none", mec=colour,
                markersize=LEVEL_SIZE)[0].set_gid(f"level-{level.name}-{p.key}")


def draw_trajectory(ax, placed: list[Placed]) -> None:
    for index, (a, b) in enumerate(zip(placed, placed[1:]), start=1):
        arrow = ax.annotate("", xy=b.xy, xytext=a.xy,
                            arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 1.2,
                                        "shrinkA": 5, "shrinkB": 5})
        arrow.arrow_patch.set_gid(f"trajectory-{index}")


def draw_legend(ax, results: list[RunResult], placed: list[Placed]) -> None:
    """Roofs and verdict colours (labelled where drawn), the marks, and which run is which."""
    grey = "#666666"
    marks = [Line2D([], [], linestyle="none", marker="o", mfc="none", mec=grey,
                    markersize=HOLLOW_SIZE,
                    label="algorithmic intensity: where the dot would be\n"
                          "with compulsory bytes only"),
             Line2D([], [], linestyle=":", color=grey, linewidth=1,
                    label="gap between observed and\nalgorithmic intensity")]
    drawn = {level.name for p in placed for level in inner_levels(p.variant)}
    marks += [Line2D([], [], linestyle="none", marker=LEVEL_MARKERS[name], mfc="none", mec=grey,
                     markersize=LEVEL_SIZE, label=f"the same kernel's FLOP per {name.upper()} byte")
              for name in LEVEL_MARKERS if name in drawn]
    runs = [Line2D([], [], linestyle="none", label=literal(f"({index}) run of {r.created}"))
            for index, r in enumerate(results, start=1)] if len(results) > 1 else []
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + marks + runs, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              fontsize=8, frameon=False)
