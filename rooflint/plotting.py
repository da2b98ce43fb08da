"""The roofline picture: results -> SVG, PNG or PDF (matplotlib, Agg backend, no display).

Log-log axes; the DRAM roof and one compute roof per precision present, calibrated ones
solid and datasheet ones dashed; ridge points marked; the L2 roof when a calibration
measured it; each variant a dot at its observed intensity, coloured by verdict, joined
by a horizontal gap line to a hollow marker at its algorithmic intensity; optional
trajectory arrows in the order given. Artists carry ids (``roof-dram``, ``variant-NAME``,
``trajectory-1``...) that survive into the SVG, so tests and scripts can find them, and
the SVG is byte-for-byte reproducible for the same input (fixed hash salt, no date).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rooflint.errors import RooflintError  # noqa: E402
from rooflint.results import RunResult, VariantResult  # noqa: E402

VERDICT_COLOURS = {"bandwidth": "#1f77b4", "compute": "#9467bd", "chain": "#ff7f0e"}
LABEL_OFFSETS = [(6, 4), (6, -10), (-6, 4), (-6, -10), (8, 14), (8, -20), (-8, 14), (-8, -20),
                 (10, 26), (10, -32), (-10, 26), (-10, -32), (40, 0), (-40, 0)]


@dataclass
class Placed:
    label: str
    variant: VariantResult


def _placeable(results: list[RunResult], names: list[str] | None) -> tuple[list[Placed], list[str]]:
    """Variants with a point and arithmetic (log axes need AI > 0); the rest, by label."""
    placed, skipped = [], []
    many = len(results) > 1
    for index, result in enumerate(results):
        for family in result.families:
            for v in family.variants:
                if names and v.name not in names:
                    continue
                label = f"{v.name} ({index + 1})" if many and not names else v.name
                if v.point and v.point.flops > 0 and v.point.observed_ai > 0:
                    placed.append(Placed(label, v))
                else:
                    skipped.append(label)
    if names:
        order = {n: i for i, n in enumerate(names)}
        placed.sort(key=lambda p: order[p.variant.name])
    return placed, skipped


def figure(results: list[RunResult], names: list[str] | None = None, trajectory: bool = False,
           ax: plt.Axes | None = None) -> Figure:
    """Draw the roofline of ``results`` (all from one GPU) and return the figure."""
    if not results:
        raise RooflintError("nothing to plot: no results given")
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
    ax.set_xscale("log")
    ax.set_yscale("log")
    x_low, x_high = _x_range(placed)
    _draw_roofs(ax, placed, results[0], x_low, x_high)
    _draw_points(ax, placed)
    if trajectory:
        _draw_trajectory(ax, placed)
    _label_points(fig, ax, placed)
    ax.set_xlim(x_low, x_high)
    lowest = min(p.variant.point.achieved_flops for p in placed)
    highest = max(p.variant.roofs.compute for p in placed)
    ax.set_ylim(lowest / 3, highest * 2)
    ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title(f"{results[0].gpu.name}: roofline, {results[0].created[:10]}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if skipped:
        ax.text(0.01, 0.01, f"not placed (no FLOPs or no measurement): {', '.join(skipped)}",
                transform=ax.transAxes, fontsize=7, color="#666666", va="bottom")
    return fig


def _x_range(placed: list[Placed]) -> tuple[float, float]:
    xs = [p.variant.point.observed_ai for p in placed] + \
         [p.variant.point.algorithmic_ai for p in placed] + \
         [p.variant.roofs.ridge for p in placed]
    return min(xs) / 4, max(xs) * 4


def _roof_line(ax, x_low, x_high, bandwidth, compute, gid, style, colour, label):
    ridge = compute / bandwidth
    xs = [x_low, ridge, x_high] if x_low < ridge < x_high else [x_low, x_high]
    ys = [min(compute, x * bandwidth) for x in xs]
    (line,) = ax.plot(xs, ys, style, color=colour, linewidth=1.4, label=label)
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
    l2 = result.settings.get("l2_bandwidth")
    if l2:
        top = max(r.compute for r in roofs.values())
        _roof_line(ax, x_low, x_high, l2, top, "roof-l2", "-.", "#2ca02c", "L2 roof (calibrated)")


def _draw_points(ax, placed: list[Placed]) -> None:
    seen = set()
    for p in placed:
        point, bound = p.variant.point, p.variant.verdict.bound
        colour = VERDICT_COLOURS[bound]
        gap = ax.plot([point.observed_ai, point.algorithmic_ai], [point.achieved_flops] * 2,
                      ":", color=colour, linewidth=1)[0]
        gap.set_gid(f"gap-{p.label}")
        hollow = ax.plot([point.algorithmic_ai], [point.achieved_flops], "o", mfc="none",
                         mec=colour, markersize=6)[0]
        hollow.set_gid(f"algorithmic-{p.label}")
        dot = ax.plot([point.observed_ai], [point.achieved_flops], "o", color=colour,
                      markersize=7, label=f"{bound}-bound" if bound not in seen else None)[0]
        dot.set_gid(f"variant-{p.label}")
        seen.add(bound)


def _draw_trajectory(ax, placed: list[Placed]) -> None:
    for index, (a, b) in enumerate(zip(placed, placed[1:]), start=1):
        arrow = ax.annotate("", xy=(b.variant.point.observed_ai, b.variant.point.achieved_flops),
                            xytext=(a.variant.point.observed_ai, a.variant.point.achieved_flops),
                            arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 1.2,
                                        "shrinkA": 5, "shrinkB": 5})
        arrow.arrow_patch.set_gid(f"trajectory-{index}")


def _label_points(fig: Figure, ax, placed: list[Placed]) -> None:
    """Greedy placement: each label takes the first offset that overlaps no earlier label."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    taken = []
    for p in sorted(placed, key=lambda q: (q.variant.point.achieved_flops, q.label)):
        xy = (p.variant.point.observed_ai, p.variant.point.achieved_flops)
        for dx, dy in LABEL_OFFSETS:
            text = ax.annotate(p.label, xy, textcoords="offset points", xytext=(dx, dy),
                               fontsize=8, ha="left" if dx > 0 else "right")
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in taken) or (dx, dy) == LABEL_OFFSETS[-1]:
                taken.append(box)
                break
            text.remove()


def save(fig: Figure, path: Path) -> None:
    """Write by extension (.svg, .png, .pdf); the SVG is deterministic for the same input."""
    path = Path(path)
    kinds = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
    if path.suffix.lower() not in kinds:
        raise RooflintError(f"cannot write {path.name}: use .svg, .png or .pdf")
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": {}}[kinds[path.suffix.lower()]]
    with plt.rc_context({"svg.hashsalt": "rooflint", "svg.fonttype": "none"}):
        fig.savefig(path, format=kinds[path.suffix.lower()], metadata=metadata,
                    bbox_inches="tight")
