"""The HTML report's roofline: the figure `rooflint plot` draws (plotting.figure), inlined
as SVG, and for each variant's dot what its tooltip shows and which details it leads to.

The figure's marks keep the ids plotting.py gives them (``variant-KEY`` for a dot), so the
page's script finds a dot by the id the JSON data names. Results from one GPU share a
figure, as `plot A B` draws them; results from several GPUs get one figure per GPU (one
roofline per GPU), and then every id of each figure is prefixed with its number so that no
two elements of the page share one.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from rooflint.analysis.evidence import pct
from rooflint.common.errors import RooflintError
from rooflint.common.units import format_rate
from rooflint.formats.results import RunResult
from rooflint.output import plotting
from rooflint.output.family_table import family_title, variant_cells
from rooflint.output.html_page import Html, tag
from rooflint.output.picture_marks import SVG
from rooflint.output.plot_marks import Placed, placeable
from rooflint.output.terminal import ai_text

XLINK = "http://www.w3.org/1999/xlink"
# Attributes that point at another element of the SVG: markers, clip paths.
REFERENCES = (f"{{{XLINK}}}href", "clip-path")


def roofline_section(results: Sequence[RunResult], anchors: dict[int, str]
                     ) -> tuple[Html, dict[str, dict]]:
    """The roofline figures of ``results`` (made printable already), and for each dot, by
    its SVG id, its tooltip's facts and the anchor of its details (``anchors``: by the
    id() of each variant of ``results``)."""
    groups = _by_gpu(results)
    figures, dots = [], {}
    for number, group in enumerate(groups, start=1):
        prefix = f"roofline{number}-" if len(groups) > 1 else ""
        try:
            figures.append(_figure(group, prefix))
        except RooflintError as exc:     # nothing placeable: copies only, or all failed
            figures.append(tag("p", f"No roofline for {group[0].gpu.name}: {exc}",
                               class_="muted"))
            continue
        placed, _ = placeable(list(group), None)
        dots |= {f"{prefix}variant-{p.key}": _dot(p, anchors[id(p.variant)]) for p in placed}
    intro = tag("p", "Point at a dot for its numbers; click it (or focus it and press Enter) "
                     "for the variant's verdict and moves.", class_="muted")
    return tag("section", [tag("h2", "Roofline"), intro, *figures], id="roofline"), dots


def _by_gpu(results: Sequence[RunResult]) -> list[list[RunResult]]:
    """The results grouped by the GPU they ran on, in the order given."""
    groups: dict[str, list[RunResult]] = {}
    for result in results:
        groups.setdefault(result.gpu.name, []).append(result)
    return list(groups.values())


def _figure(results: list[RunResult], prefix: str) -> Html:
    """The figure `rooflint plot` draws of ``results``, as an inline <svg>."""
    svg = plotting.rendered(plotting.figure(results), "svg")
    caption = tag("figcaption", f"{results[0].gpu.name}: " + ", ".join(
        f"run of {r.created}" for r in results), class_="muted")
    return tag("figure", [_inline(svg, prefix), caption], class_="roofline")


def _inline(svg: bytes, prefix: str) -> Html:
    """The SVG as an element of the page: no XML prologue, no metadata (matplotlib's name
    and address), no dot's <title> (the page's own tooltip shows more, and a browser would
    show both), and each id, and each reference to one, prefixed with ``prefix``.
    Parsed and written again by ElementTree, which escapes every text and attribute."""
    ET.register_namespace("", SVG)
    ET.register_namespace("xlink", XLINK)
    root = ET.fromstring(svg)
    for metadata in root.findall(f"{{{SVG}}}metadata"):
        root.remove(metadata)
    for group in root.iter(f"{{{SVG}}}g"):
        for title in group.findall(f"{{{SVG}}}title"):
            group.remove(title)
    if prefix:
        for element in root.iter():
            _prefix_ids(element, prefix)
    return Html(ET.tostring(root, encoding="unicode"))


def _prefix_ids(element: ET.Element, prefix: str) -> None:
    """``id="x"`` -> ``id="PREFIXx"``; ``href="#x"`` and ``url(#x)`` follow."""
    if "id" in element.attrib:
        element.set("id", prefix + element.get("id"))
    for name in REFERENCES:
        value = element.get(name)
        if value:
            element.set(name, value.replace("#", f"#{prefix}", 1))


def _dot(p: Placed, anchor: str) -> dict:
    """What the dot's tooltip shows, as the terminal words it, and where a click goes."""
    v, point = p.variant, p.variant.point
    algorithmic = f"{ai_text(point.algorithmic_ai)} FLOP/B" if point.algorithmic_known else "-"
    rows = [("family", family_title(p.family)),
            ("time", variant_cells(v)["time"].plain),
            ("FLOP/s", f"{format_rate(point.achieved_flops, 'FLOP/s')} "
                       f"({pct(point.compute_fraction)} of the {v.roofs.precision} roof)"),
            ("DRAM", f"{format_rate(point.achieved_bandwidth, 'B/s')} "
                     f"({pct(point.dram_fraction)} of the roof)"),
            ("AI observed", f"{ai_text(point.observed_ai)} FLOP/B "
                            f"({point.bytes_source} bytes)"),
            ("AI algorithmic", algorithmic),
            ("verdict", f"{v.verdict.bound}-bound: {v.verdict.summary}")]
    if v.verdict.moves:
        top = v.verdict.moves[0]
        rows.append(("top move", f"{top.direction}: {top.action}"))
    return {"name": p.label, "anchor": anchor, "rows": rows}
