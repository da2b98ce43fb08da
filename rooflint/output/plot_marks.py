"""What the roofline shows of each variant, drawn on the axes plotting.py has set up: the
dot coloured by verdict, the dotted gap line to the hollow marker at its algorithmic
intensity, its L2 and L1 marks, the trajectory arrows between variants, and the legend that
explains every mark (for a profile, with the key to its numbered kernels). Apart from
plotting.py (the figure: axes, roofs, ridges, title, file) because these are the marks a
reader compares, each keyed to one variant.

Imported through plotting.py, which the CLI and ``rooflint.plot`` import inside their
functions: matplotlib, imported here at the top, costs start-up only when a picture is drawn.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from matplotlib.lines import Line2D

from rooflint.analysis.evidence import Bound, pct
from rooflint.analysis.roofline import bypassed
from rooflint.formats.results import FamilyResult, RunResult, VariantResult

VERDICT_COLOURS = {Bound.BANDWIDTH: "#1f77b4", Bound.COMPUTE: "#9467bd", Bound.CHAIN: "#ff7f0e"}
DOT_SIZE, HOLLOW_SIZE = 7, 6     # marker diameters, points
LEVEL_MARKERS = {"l2": "s", "l1": "^"}   # inner memory levels: square, triangle
LEVEL_SIZE = 5                   # their marker diameter, points
SHARE_DOT_SIZE = 28      # marker diameter of a kernel that took all of a profiled program's time
# The most characters of a name drawn beside a dot or in the list of what is not placed:
# a variant's name, a family's with it, a PyTorch kernel's with its template argument.
LABEL_CHARS = 40
# A profile's kernels numbered on the chart, the most GPU time first, and named in a key
# beside it: their names (cuBLAS's and cuDNN's run to 150 characters, and differ in the
# middle: ..._nn_n_tilesize128x128x32_... against ..._tn_n_tilesize128x128x32_...) neither
# fit beside a cluster of GEMMs under the tensor roof nor tell each other apart when cut.
# Ten: the kernels a reader of a program's roofline looks for, and a key that fits the
# chart's height under the legend.
NUMBERED_KERNELS = 10
KEY_CHARS = 56                   # the most characters of a name in the key


@dataclass
class Placed:
    """A variant the figure can place: its dot's position, its label and its SVG id key."""

    name: str                    # the variant's (FAMILY/NAME where two families share it)
    run: int | None              # the result file's number when several are drawn
    key: str                     # as used in the SVG ids
    family: FamilyResult
    variant: VariantResult

    @property
    def xy(self) -> tuple[float, float]:
        return self.variant.point.observed_ai, self.variant.point.achieved_flops

    @property
    def label(self) -> str:
        """The name in full, with the file's number when several are drawn."""
        return _numbered(self.name, self.run)

    def short_label(self, chars: int = LABEL_CHARS) -> str:
        """The label with its name cut to ``chars``."""
        return _numbered(shortened(self.name, chars), self.run)


def _numbered(name: str, run: int | None) -> str:
    return f"{name} ({run})" if run else name


def placeable(results: list[RunResult], names: list[str] | None) -> tuple[list[Placed], list[str]]:
    """Variants with a point and arithmetic at a finite intensity (log axes need
    0 < AI < inf: no FLOPs, or no DRAM bytes, has no place on them); the rest, by label,
    the most GPU time first (by_time)."""
    placed, skipped = [], []
    many = len(results) > 1
    for index, result in enumerate(results, start=1):
        shared = _shared_names(result)
        for family in result.families:
            for v in family.variants:
                if names and v.name not in names:
                    continue
                name = f"{family.name}/{v.name}" if v.name in shared else v.name
                p = Placed(name, index if many else None,
                           f"{index}-{name}" if many else name, family, v)
                if v.point and v.point.flops > 0 and 0 < v.point.observed_ai < math.inf:
                    placed.append(p)
                else:
                    skipped.append(p)
    if names:
        order = {n: i for i, n in enumerate(names)}
        placed.sort(key=lambda p: order[p.variant.name])
    return placed, [p.label for p in by_time(skipped)]


def by_time(placed: list[Placed]) -> list[Placed]:
    """A profile's kernels by their share of the program's GPU time, the most first; a
    run's variants (no share: each is its family's, and times of different families say
    nothing of each other) in the order given, after any kernel."""
    return sorted(placed, key=lambda p: -p.variant.share.share if p.variant.share else 0.0)


def _shared_names(result: RunResult) -> set[str]:
    """Variant names that more than one family of ``result`` uses."""
    counts = Counter(name for family in result.families
                     for name in {v.name for v in family.variants})
    return {name for name, count in counts.items() if count > 1}


def literal(text: str) -> str:
    """``text`` drawn as written: matplotlib reads a pair of $ as mathematics (and fails
    on some), so each is escaped."""
    return text.replace("$", r"\$")


def shortened(name: str, chars: int = LABEL_CHARS) -> str:
    """``name`` cut to ``chars`` by an ellipsis in its middle: the end tells kernels of one
    template apart (``...<direct_copy_kernel_cuda>@6144``, ``..._coopA_bias_TNT``)."""
    if len(name) <= chars:
        return name
    tail = chars // 3
    return name[:chars - tail - 1] + "\u2026" + name[-tail:]


def numbered(placed: list[Placed]) -> list[Placed]:
    """A profile's NUMBERED_KERNELS kernels with the most GPU time, the most first (number
    1); none for a run's variants."""
    return [p for p in by_time(placed) if p.variant.share][:NUMBERED_KERNELS]


def inner_levels(v: VariantResult) -> list:
    """The L2 and L1 levels drawn: a finite, positive intensity (log axes) of a level the
    kernel's data went through (roofline.bypassed)."""
    return [level for level in v.levels if level.name in LEVEL_MARKERS
            and 0 < level.intensity < math.inf and not bypassed(level, v.point.dram_bytes)]


def bypassed_levels(placed: list[Placed]) -> Counter[str]:
    """How many placed kernels have each inner level left out as gone around."""
    return Counter(level.name for p in placed for level in p.variant.levels
                   if level.name in LEVEL_MARKERS and bypassed(level, p.variant.point.dram_bytes))


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
    ax.legend(handles=handles + marks + runs + _key(placed), loc="upper left",
              bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _key(placed: list[Placed]) -> list[Line2D]:
    """The numbered kernels' names and shares, under a heading, one entry each."""
    kernels = numbered(placed)
    if not kernels:
        return []
    every = len(kernels) == sum(p.variant.share is not None for p in placed)
    heading = ("the kernels by GPU time, numbered on the chart:" if every else
               f"the {len(kernels)} kernels with the most GPU time, numbered on the chart:")
    return [Line2D([], [], linestyle="none", label=text) for text in [heading] + [
        literal(f"{rank}  {p.short_label(KEY_CHARS)}, {pct(p.variant.share.share)}")
        for rank, p in enumerate(kernels, start=1)]]
