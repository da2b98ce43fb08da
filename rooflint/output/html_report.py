"""`rooflint report`'s page: one self-contained HTML file from one or more result documents.

It holds what `show` prints, in a form to read, explore and pass around: the roofline with
each dot's numbers on hover (html_roofline.py), per family the table the terminal prints,
per variant its verdict, causes, moves (with the source lines behind them when the run
had a source pass), the moves ruled out and its notes, folded under its name and verdict;
for a profile, the program's summary and fixes and the kernel table first
(html_profile.py); for two documents, how each variant of one compares with its namesake
in the other. Its tables sort and filter (html_page.py's script), and read as written
without it. Every cell says what the terminal says (family_table.py, tables.py, roofs.py
give both), so the page and the screen never disagree. html_page.py holds the page's frame
and the escaping that keeps a name from another's file text, never markup.

A page is mailed and kept as an artifact: it names a result by its file's name, and every
path in a result, relative to the result's folder (common/paths.relative_paths), never
the folders of the machine it was made on.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text

from rooflint.judge.comparison import Comparison, describe_movement
from rooflint.judge.program_fixes import fixes_of
from rooflint.analysis.diagnose import Move
from rooflint.common.paths import relative_paths
from rooflint.common.printable import mapped_strings, printable
from rooflint.common.units import format_time
from rooflint.formats.results import FamilyResult, RunResult, VariantResult
from rooflint.formats.status import Status
from rooflint.output.family_table import (
    NUMERIC, WIDE, baseline_variant, context_notes, device_markup, family_roofs, family_title,
    measurement_notes, move_lines, variant_cells,
)
from rooflint.output.html_page import (
    Content, Html, Sorted, bulleted, coloured, esc, folded, page, table, tag,
)
from rooflint.judge.ranks import Job
from rooflint.output.html_job import job_section
from rooflint.output.html_profile import Anchors, kernel_table, program_summary
from rooflint.output.html_roofline import roofline_section
from rooflint.output.profile_view import is_profile
from rooflint.output.roofs import gain_words
from rooflint.output.terminal import shortened_names

COMPARED = ("variant", "time A", "time B", "A time / B time", "95 % interval", "decision",
            "movement")


@dataclass
class Document:
    """A result document as the page shows it: the name it gives it (the file's name, or
    what made a result no file holds), the folder the paths in it are written relative to,
    and the result."""

    name: str
    result: RunResult
    directory: Path

    @classmethod
    def of(cls, source: Path | str, result: RunResult) -> Document:
        """``result``, read from the file at ``source``, or made by ``source`` (words, such
        as ``rooflint run``, where no file holds it: paths are then relative to the
        current folder, where it ran)."""
        if isinstance(source, Path):
            return cls(source.name, result, Path(os.path.abspath(source)).parent)
        return cls(source, result, Path.cwd())


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


def report_html(documents: list[Document], comparison: ComparisonView | None = None,
                job: Job | None = None) -> str:
    """The whole page for ``documents`` (and their comparison, with two; the ``job`` their
    ranks make, where they are a job's rank documents): the job, then the profiles'
    summaries, fixes and kernel tables lead, above the roofline, then each document's
    families."""
    documents = [_shown(d) for d in documents]
    results = [d.result for d in documents]
    anchors = _anchors(results)
    figures, dots = roofline_section(results, anchors)
    numbered = list(enumerate(documents, start=1))
    body = [_heading(documents, comparison is not None, job is not None),
            job_section(job) if job else None,
            *(_program(number, d, anchors) for number, d in numbered if is_profile(d.result)),
            figures, *(_document(number, d) for number, d in numbered),
            _comparison(documents, comparison) if comparison else None]
    title = "rooflint report: " + ", ".join(d.name for d in documents)
    return page(title, esc(body), {"dots": dots})


def _shown(d: Document) -> Document:
    """``d`` as the page may show it: every string of its result printable, its paths
    relative to the document's folder."""
    return Document(printable(d.name), mapped_strings(
        d.result, lambda text: printable(relative_paths(text, d.directory))), d.directory)


def details_anchor(document: int, family: int, variant: int) -> str:
    """The id of a variant's details: by position, never by name (names are not unique
    across families and documents, and come from files)."""
    return f"details-{document}-{family}-{variant}"


def _anchors(results: list[RunResult]) -> Anchors:
    """Each variant's details anchor, by the variant's id(): the roofline's marks and the
    tables' links are made from these very objects, whatever the figure leaves out."""
    return {id(v): details_anchor(d, f, i)
            for d, result in enumerate(results, start=1)
            for f, family in enumerate(result.families, start=1)
            for i, v in enumerate(family.variants, start=1)}


def _heading(documents: list[Document], compared: bool, job: bool) -> Html:
    """The title, the documents, and links to every section."""
    links = [tag("a", "the job", href="#job")] if job else []
    links.append(tag("a", "roofline", href="#roofline"))
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


def _facts(number: int, d: Document) -> list[Html]:
    """A document's title, device and settings, and what made it."""
    result = d.result
    facts = [tag("h2", f"({number}) {d.name}"),
             tag("p", Text.from_markup(device_markup(result)).plain),
             tag("p", _provenance(result), class_="muted")]
    if result.settings.counters_unavailable:
        facts.append(tag("p", f"counters unavailable: {result.settings.counters_unavailable}",
                         class_="warning"))
    return facts


def _program(number: int, d: Document, anchors: Anchors) -> Html:
    """A profile's lead, as `profile` prints it: the program's summary and fixes, then each
    family's kernel table."""
    result = d.result
    return tag("section", [*_facts(number, d), program_summary(result, fixes_of(result), anchors),
                           *(kernel_table(family, result, anchors) for family in result.families)],
               id=f"document-{number}")


def _document(number: int, d: Document) -> Html:
    """A run: its device and settings, then each family. A profile, whose lead went first:
    each family's measurements and its kernels' details."""
    result = d.result
    families = [_family(number, f, family, is_profile(result))
                for f, family in enumerate(result.families, start=1)]
    if is_profile(result):
        return tag("section", [tag("h2", f"({number}) {d.name}: every kernel"), *families],
                   id=f"kernels-{number}")
    return tag("section", [*_facts(number, d), *families], id=f"document-{number}")


def _provenance(result: RunResult) -> str:
    """What made the document, and when: a run, or a profile of which program (or imported
    from which files)."""
    command, imported = result.settings.command, result.settings.imported
    what = (f"a profile of {shlex.join(command)}" if command else
            f"a profile imported from {' and '.join(imported)}" if imported else
            "a profile" if is_profile(result) else "a run")
    return f"{what}, {result.created}, rooflint {result.tool_version}"


def _family(number: int, f: int, family: FamilyResult, profiled: bool) -> Html:
    """A family: its table (a profile's folded: its kernel table leads), its roofs, each
    variant's details."""
    anchors = [details_anchor(number, f, i) for i in range(1, len(family.variants) + 1)]
    baseline = baseline_variant(family)
    measured = _family_table(family, anchors)
    if profiled:
        measured = folded(f"time, DRAM, FLOP/s and intensity of its {len(family.variants)} "
                          f"kernels", measured, class_="table")
    parts = [tag("h3", family_title(family)), measured,
             bulleted(family_roofs(family), class_="muted"),
             *(_variant(v, anchor, baseline) for v, anchor in zip(family.variants, anchors))]
    return tag("section", parts, id=f"family-{number}-{f}")


def _family_table(family: FamilyResult, anchors: list[str]) -> Html:
    """The terminal's wide table: the same cells, the name a link to the details, each
    measure sorted by its value."""
    rows = []
    names = shortened_names(v.name for v in family.variants)
    for v, anchor in zip(family.variants, anchors):
        cells = variant_cells(v, names[v.name])
        values = _measures(v)
        row: list[Content | Sorted] = [tag("a", cells["variant"].plain, href=f"#{anchor}")]
        for column in WIDE[1:]:
            text = _styled(column, v, cells[column].plain if column in cells else "")
            row.append(Sorted(text, values.get(column)) if column in NUMERIC else text)
        rows.append(row)
    return table(WIDE, rows, numeric=NUMERIC, class_="family", explorable=True)


def _measures(v: VariantResult) -> dict[str, float]:
    """What the table's numeric columns sort a variant by: its median time, DRAM bandwidth,
    FLOP/s and observed intensity, those it has."""
    values = {"time": v.time.median_s} if v.time else {}
    if v.point:
        values |= {"DRAM": v.point.achieved_bandwidth, "AI obs/alg": v.point.observed_ai}
        if v.point.flops:
            values["FLOP/s"] = v.point.achieved_flops
    return values


def _styled(column: str, v: VariantResult, text: str) -> Content:
    """A cell whose words carry a colour on the terminal: the status, the verdict."""
    if column == "status":
        return tag("span", text, class_=f"status-{v.status}")
    if column == "verdict" and v.verdict:
        return coloured(text, v.verdict.bound)
    return text


def _variant(v: VariantResult, anchor: str, baseline: VariantResult | None) -> Html:
    """A variant's details, folded under its name and verdict: its description, causes,
    moves, what was ruled out, its notes."""
    title = [tag("h4", [v.name, " (baseline)" if v.baseline else "",
                        tag("span", f" {v.status.upper()}", class_=f"status-{v.status}")
                        if v.status != Status.OK else ""])]
    if v.verdict:
        title += [" ", coloured(f"{v.verdict.bound}-bound", v.verdict.bound),
                  f": {v.verdict.summary}"]
    parts = [tag("p", v.description, class_="muted") if v.description else None]
    if v.verdict:
        parts += _listed("causes", [[tag("b", c.name), f": {c.detail}"]
                                     for c in v.verdict.causes])
        if v.verdict.moves:
            parts += [tag("h5", "moves"), _moves(v)]
        parts += _listed("ruled out", v.verdict.ruled_out)
    notes = measurement_notes(v) + context_notes(v, baseline)
    parts += _listed("notes", [note.plain for note in notes])
    return folded(title, parts, class_="variant", id=anchor)


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
                       numeric=COMPARED[1:5], class_="comparison", explorable=True))
    parts += _listed("only in A (vanished in B)", view.vanished)
    parts += _listed("only in B (new)", view.new)
    return tag("section", parts, id="comparison")


def _compared_row(pair: ComparedPair) -> list[Content | Sorted]:
    """A pair's row, each number sorted by its value; a pair that could not be compared
    says why in its decision."""
    c = pair.comparison
    if c is None:
        return [pair.variant, *(Sorted("", None) for _ in COMPARED[1:5]),
                tag("span", pair.reason, class_="warning"), ""]
    sides = [c.figures[c.a], c.figures[c.b]]
    times = [Sorted(f"{format_time(f.time_s)} ±{100 * f.spread:.0f}%"
                    + (" noisy" if f.noisy else ""), f.time_s) for f in sides]
    s = c.speedup
    return [pair.variant, *times, Sorted(f"{s.ratio:.3f}x", s.ratio),
            Sorted(f"{s.low:.2f}-{s.high:.2f}", s.low),
            tag("span", s.decision, class_=f"decision-{s.decision}", title=c.sentence),
            describe_movement(c.movement)]
