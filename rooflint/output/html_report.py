"""`rooflint report`'s page: one self-contained HTML file from one or more result documents.

It holds what `show` prints, in a form to read and pass around: the roofline with each
dot's numbers on hover (html_roofline.py), per family the table the terminal prints,
per variant its verdict, causes, moves (with the source lines behind them when the run
had a source pass), the moves ruled out and its notes; for a profile, the application
view; for two documents, how each variant of one compares with its namesake in the other.
Every cell says what the terminal says (family_table.py, tables.py, roofs.py give both),
so the page and the screen never disagree. html_page.py holds the page's frame and the
escaping that keeps a name from another's file text, never markup.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace

from rich.text import Text

from rooflint.judge.comparison import Comparison, describe_movement
from rooflint.analysis.diagnose import Move
from rooflint.analysis.evidence import pct
from rooflint.common.printable import printable_fields
from rooflint.common.units import format_time
from rooflint.formats.results import FamilyResult, RunResult, VariantResult
from rooflint.formats.status import Status
from rooflint.output.family_table import (
    NUMERIC, WIDE, baseline_variant, context_notes, device_markup, family_roofs, family_title,
    measurement_notes, move_lines, variant_cells,
)
from rooflint.output.html_page import Content, Html, bulleted, esc, page, table, tag
from rooflint.output.html_roofline import roofline_section
from rooflint.output.roofs import gain_words
from rooflint.output.terminal import shortened_names
from rooflint.output.tables import (
    application_heading, at_roof_cell, autotuning_line, biggest_upside_line, unprofiled_line,
    unrecorded_line,
    upside_cell,
)

APPLICATION = ("kernel", "what", "launched from", "share", "launches", "verdict", "at roof",
               "upside")
COMPARED = ("variant", "time A", "time B", "A time / B time", "95 % interval", "decision",
            "movement")


@dataclass
class Document:
    """A result document and the path it was read from, as the user named it."""

    name: str
    result: RunResult


@dataclass
class ComparedPair:
    """Two variants of the same name, one from each document (or the only one of each):
    their comparison, or why there is none (a side that failed has no time to compare)."""

    variant: str                # the name, or "A vs B" for two of different names
    comparison: Comparison | None
    reason: str = ""


@dataclass
class ComparisonView:
    """The second document against the first, as `rooflint compare A.json B.json` pairs
    them: by variant name, the GPU warning if they ran on different GPUs, and the names
    that only one of them holds."""

    warning: str | None
    pairs: list[ComparedPair]
    vanished: list[str]
    new: list[str]


def report_html(documents: list[Document], comparison: ComparisonView | None = None) -> str:
    """The whole page for ``documents`` (and their comparison, with two)."""
    documents = [replace(d, result=printable_fields(d.result)) for d in documents]
    results = [d.result for d in documents]
    figures, dots = roofline_section(results, _anchors(results))
    body = [_heading(documents, comparison is not None), figures,
            *(_document(number, d) for number, d in enumerate(documents, start=1)),
            _comparison(documents, comparison) if comparison else None]
    title = "rooflint report: " + ", ".join(d.name for d in documents)
    return page(title, esc(body), {"dots": dots})


def details_anchor(document: int, family: int, variant: int) -> str:
    """The id of a variant's details: by position, never by name (names are not unique
    across families and documents, and come from files)."""
    return f"details-{document}-{family}-{variant}"


def _anchors(results: list[RunResult]) -> dict[int, str]:
    """Each variant's details anchor, by the variant's id(): the roofline's marks are
    made from these very objects, whatever the figure leaves out."""
    return {id(v): details_anchor(d, f, i)
            for d, result in enumerate(results, start=1)
            for f, family in enumerate(result.families, start=1)
            for i, v in enumerate(family.variants, start=1)}


def _heading(documents: list[Document], compared: bool) -> Html:
    """The title, the documents, and links to every section."""
    links = [tag("a", "roofline", href="#roofline")]
    for number, d in enumerate(documents, start=1):
        links.append(tag("a", f"({number}) {d.name}", href=f"#document-{number}"))
        links += [tag("a", family.name, href=f"#family-{number}-{f}")
                  for f, family in enumerate(d.result.families, start=1)]
    if compared:
        links.append(tag("a", "comparison", href="#comparison"))
    return tag("header", [tag("h1", "rooflint report"),
                          tag("p", f"{len(documents)} result document"
                                   f"{'s' if len(documents) > 1 else ''}", class_="muted"),
                          tag("nav", links)])


def _document(number: int, d: Document) -> Html:
    """One document: the device and settings, then each family."""
    result = d.result
    facts = [tag("p", Text.from_markup(device_markup(result)).plain),
             tag("p", _provenance(result), class_="muted")]
    if result.settings.counters_unavailable:
        facts.append(tag("p", f"counters unavailable: {result.settings.counters_unavailable}",
                         class_="warning"))
    families = [_family(number, f, family, result)
                for f, family in enumerate(result.families, start=1)]
    return tag("section", [tag("h2", f"({number}) {d.name}"), *facts, *families],
               id=f"document-{number}")


def _provenance(result: RunResult) -> str:
    """What made the document, and when: a run, or a profile of which program (or imported
    from which files)."""
    command, imported = result.settings.command, result.settings.imported
    what = (f"a profile of {shlex.join(command)}" if command else
            f"a profile imported from {' and '.join(imported)}" if imported else
            "a profile" if result.settings.mode == "profile" else "a run")
    return f"{what}, {result.created}, rooflint {result.tool_version}"


def _family(number: int, f: int, family: FamilyResult, result: RunResult) -> Html:
    """A family: the application view (a profile), its table, its roofs, its variants."""
    anchors = [details_anchor(number, f, i) for i in range(1, len(family.variants) + 1)]
    baseline = baseline_variant(family)
    parts = [tag("h3", family_title(family))]
    if result.settings.mode == "profile":
        parts.append(_application(family, result, anchors))
    parts += [_family_table(family, anchors), bulleted(family_roofs(family), class_="muted")]
    parts += [_variant(v, anchor, baseline) for v, anchor in zip(family.variants, anchors)]
    return tag("section", parts, id=f"family-{number}-{f}")


def _family_table(family: FamilyResult, anchors: list[str]) -> Html:
    """The terminal's wide table: the same cells, the name a link to the details."""
    rows = []
    names = shortened_names(v.name for v in family.variants)
    for v, anchor in zip(family.variants, anchors):
        cells = variant_cells(v, names[v.name])
        row: list[Content] = [tag("a", cells["variant"].plain, href=f"#{anchor}")]
        for column in WIDE[1:]:
            text = cells[column].plain if column in cells else ""
            row.append(_styled(column, v, text))
        rows.append(row)
    return table(WIDE, rows, numeric=NUMERIC, class_="family")


def _styled(column: str, v: VariantResult, text: str) -> Content:
    """A cell whose words carry a colour on the terminal: the status, the verdict."""
    if column == "status":
        return tag("span", text, class_=f"status-{v.status}")
    if column == "verdict" and v.verdict:
        return _bound(text, v)
    return text


def _bound(text: str, v: VariantResult) -> Html:
    """``text`` in the colour of the variant's bound, the dots' colour on the roofline."""
    return tag("span", text, class_=f"bound-{v.verdict.bound}")


def _application(family: FamilyResult, result: RunResult, anchors: list[str]) -> Html:
    """A profile's application view, as `profile` prints it: each kernel's share of the
    GPU time, who launched it, its verdict, how near its roof, what a fix could save."""
    region = result.settings.gpu_time_s or 0.0
    rows = [_kernel_row(v, anchor, region)
            for v, anchor in zip(family.variants, anchors) if v.share]
    lines = [unprofiled_line(result), autotuning_line(result), unrecorded_line(result),
             biggest_upside_line(family, region, name=str)]
    return tag("div", [tag("h4", application_heading(result, family)),
                       table(APPLICATION, rows, numeric=APPLICATION[3:5] + APPLICATION[6:],
                             class_="kernels"),
                       bulleted([line for line in lines if line])], class_="application")


def _kernel_row(v: VariantResult, anchor: str, region: float) -> list[Content]:
    """A profiled kernel's row: the terminal's, with the whole name and the whole line it
    was launched from (the page has the room the terminal has not)."""
    s = v.share
    return [tag("a", v.name, href=f"#{anchor}"), s.library or "",
            s.origins[0].line if s.origins else "", pct(s.share), str(s.launches),
            _bound(v.verdict.bound, v) if v.verdict else "-", at_roof_cell(s),
            upside_cell(v, region)]


def _variant(v: VariantResult, anchor: str, baseline: VariantResult | None) -> Html:
    """A variant's details: its verdict, causes, moves, what was ruled out, its notes."""
    title = [v.name, " (baseline)" if v.baseline else "",
             tag("span", f" {v.status.upper()}", class_=f"status-{v.status}")
             if v.status != Status.OK else ""]
    parts = [tag("h4", title), tag("p", v.description, class_="muted") if v.description
             else None]
    if v.verdict:
        parts.append(tag("p", [_bound(f"{v.verdict.bound}-bound", v), f": {v.verdict.summary}"]))
        parts += _listed("causes", [[tag("b", c.name), f": {c.detail}"]
                                     for c in v.verdict.causes])
        if v.verdict.moves:
            parts += [tag("h5", "moves"), _moves(v)]
        parts += _listed("ruled out", v.verdict.ruled_out)
    notes = measurement_notes(v) + context_notes(v, baseline)
    parts += _listed("notes", [note.plain for note in notes])
    return tag("section", parts, id=anchor, class_="variant")


def _listed(heading: str, items: list[Content]) -> list[Html]:
    """A heading and its list; nothing when the list is empty."""
    return [tag("h5", heading), bulleted(items)] if items else []


def _moves(v: VariantResult) -> Html:
    """The verdict's moves, best first; the source lines behind each when the run had a
    source pass (`run --source`)."""
    columns = ("direction", "action", "why", "expected movement", "estimated gain")
    lines = ("source lines",) if v.source_lines else ()
    rows = [[m.direction, m.action, m.reason, m.expect, gain_words(m) or "-",
             *([_source_lines(v, m)] if lines else [])]
            for m in v.verdict.moves]
    return table(columns + lines, rows, class_="moves")


def _source_lines(v: VariantResult, move: Move) -> Html:
    """The lines behind ``move``, one a row, as the terminal prints them under it."""
    return tag("pre", [tag("span", line) for line in move_lines(v, move)], class_="lines")


def _comparison(documents: list[Document], view: ComparisonView) -> Html:
    """(2) against (1): per variant name, each side's time, the ratio with its interval,
    the decision `compare` and `gate` share, and how the dot moved."""
    a, b = documents[0].name, documents[1].name
    parts = [tag("h2", "Comparison"),
             tag("p", f"B, {b}, against A, {a}: variants paired by name, as rooflint compare "
                      f"pairs two result files")]
    if view.warning:
        parts.append(tag("p", view.warning, class_="warning"))
    parts.append(table(COMPARED, [_compared_row(pair) for pair in view.pairs],
                       numeric=COMPARED[1:5], class_="comparison"))
    parts += _listed("only in A (vanished in B)", view.vanished)
    parts += _listed("only in B (new)", view.new)
    return tag("section", parts, id="comparison")


def _compared_row(pair: ComparedPair) -> list[Content]:
    """A pair's row; a pair that could not be compared says why in its decision."""
    c = pair.comparison
    if c is None:
        return [pair.variant, "", "", "", "", tag("span", pair.reason, class_="warning"), ""]
    sides = [c.figures[c.a], c.figures[c.b]]
    times = [f"{format_time(f.time_s)} ±{100 * f.spread:.0f}%" + (" noisy" if f.noisy else "")
             for f in sides]
    s = c.speedup
    return [pair.variant, *times, f"{s.ratio:.3f}x", f"{s.low:.2f}-{s.high:.2f}",
            tag("span", s.decision, class_=f"decision-{s.decision}", title=c.sentence),
            describe_movement(c.movement)]
