"""A whole result on the terminal, as `show` and `profile` print it: the header and every
family's table (family_table.py), a profile's application view (each kernel's share of the
GPU time, how near its roof it runs and its upside), seconds per phase (``run
--timings``), and `compare`'s two sides.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from rooflint.judge.comparison import Comparison, Decision, Figures, describe_movement
from rooflint.analysis.evidence import pct
from rooflint.output.profile_words import autotuners_words, names_words, unrecorded_words
from rooflint.judge.upside import is_done
from rooflint.common.errors import RooflintError
from rooflint.common.phases import PHASES
from rooflint.common.printable import printable_fields
from rooflint.common.units import counted, format_bytes, format_rate, format_time
from rooflint.formats.results import FamilyResult, KernelShare, RunResult, VariantResult
from rooflint.output.family_table import render_family, render_run_header
from rooflint.output.depth import Depth
from rooflint.output.terminal import (
    BOUND_STYLE, HEAD_RULE, labelled, lead_phrase, shortened, shortened_names,
)


def render_run(console: Console, result: RunResult, depth: Depth) -> None:
    result = printable_fields(result)
    render_run_header(console, result)
    for family in result.families:
        if result.settings.mode == "profile":
            render_upside(console, result, family)
        render_family(console, family, depth)


def render_timings(console: Console, result: RunResult) -> None:
    """Where the run's seconds went, by phase, per family and in all (``rooflint run
    --timings``). The counter pass's own worker phases are in the result document."""
    result = printable_fields(result)
    shown = [p for p in PHASES if result.timings.get(p)]
    table = Table(title="seconds per phase", title_justify="left", box=HEAD_RULE,
                  show_edge=False, pad_edge=False)
    table.add_column("phase")
    columns = [(f.name, f.timings) for f in result.families] + [("run", result.timings)]
    for name, _ in columns:
        table.add_column(name, justify="right", overflow="fold")
    for phase in shown:
        table.add_row(phase, *(f"{seconds.get(phase, 0.0):.1f}" for _, seconds in columns))
    table.add_row("total", *(f"{sum(seconds.get(p, 0.0) for p in shown):.1f}"
                             for _, seconds in columns))
    console.print(table)


ORIGIN_COLUMNS = 137     # the table has room for "launched from" from this width (else the notes)
ORIGIN_WIDTH = 26        # its line there (file:line function); the operator in the notes
ORIGIN_FILE_WIDTH = 12   # the least of the file's name shown; the function gives way first
COLUMN_GAP = 2           # what a table without edges puts between two columns


def origin_cell(line: str | None) -> str:
    """``train_step.py:37 in Block.forward`` as the table has room for it: the file and
    line, then the function's own name (``forward``, not its class or enclosing
    functions). The line number is never cut: a long file name loses its end, and where
    that would leave less than ORIGIN_FILE_WIDTH of it, the function goes first
    (``benchmark_rms_no…3 forward`` had hidden Liger-Kernel's line 33)."""
    if not line:
        return ""
    place, _, function = line.partition(" in ")
    file, colon, number = place.rpartition(":")
    if not colon:
        return shortened(place, ORIGIN_WIDTH)
    tail = f":{number} {function.rsplit('.', 1)[-1]}".rstrip()
    if len(file) + len(tail) > ORIGIN_WIDTH and ORIGIN_WIDTH - len(tail) < ORIGIN_FILE_WIDTH:
        tail = f":{number}"
    room = ORIGIN_WIDTH - len(tail)
    return (file if len(file) <= room else f"{file[:room - 1]}…") + tail


def render_upside(console: Console, result: RunResult, family: FamilyResult) -> None:
    """The application view: each profiled kernel's share of the GPU time, how near its
    roof it runs, and the most a fix could save, the biggest saving first."""
    result, family = printable_fields((result, family))
    region = result.settings.gpu_time_s or 0.0
    # The heading is a line of its own, as wide as the screen: a table title would wrap at
    # the width of a table of one short kernel.
    console.print(Text(application_heading(result, family)))
    traced = (any(v.share and v.share.origins for v in family.variants)
              and console.width >= ORIGIN_COLUMNS)
    # "what" names library kernels; a program of the user's own kernels has none
    named = any(v.share and v.share.library for v in family.variants)
    columns = ("kernel", *(("what",) if named else ()), *(("launched from",) if traced else ()),
               "share", "launches", "verdict", "at roof", "upside")
    names = shortened_names(v.name for v in family.variants)
    rows = []
    for v in family.variants:
        s = v.share
        if not s:
            continue
        verdict = Text(v.verdict.bound, BOUND_STYLE[v.verdict.bound]) if v.verdict else Text("-")
        origin = [Text(origin_cell(s.origins[0].line) if s.origins else "")] if traced else []
        what = [Text(s.library or "")] if named else []
        rows.append([Text(names[v.name]), *what, *origin, Text(pct(s.share)),
                     Text(str(s.launches)), verdict, Text(at_roof_cell(s)),
                     Text(upside_cell(v, region))])
    # "what" gives way when the screen is narrow; the figures never do (a 140-column
    # nanoGPT table had read "shar", "launche", "7.52 ms (4%")
    widths = [max([len(column), *(row[i].cell_len for row in rows)])
              for i, column in enumerate(columns)]
    room = console.width - sum(w for c, w in zip(columns, widths) if c != "what") \
        - COLUMN_GAP * (len(columns) - 1)
    table = Table(box=HEAD_RULE, show_edge=False, pad_edge=False, collapse_padding=True)
    for column, width in zip(columns, widths):
        table.add_column(column, justify="right" if column in ("share", "launches", "at roof",
                                                               "upside") else "left",
                         no_wrap=column != "what" or traced,
                         overflow="ellipsis" if column == "what" else "fold",
                         ratio=1 if column == "what" else None,
                         min_width=None if column == "what" else width,
                         max_width=max(room, len(column)) if column == "what" and traced
                         else None)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for line in (unprofiled_line(result), autotuning_line(result), unrecorded_line(result),
                 biggest_upside_line(family, region, names.__getitem__)):
        if line:
            console.print(Text(f"  {line}"))


def application_heading(result: RunResult, family: FamilyResult) -> str:
    """What the application view covers: the region's GPU time and its kernel count."""
    return (f"{family.name}: {format_time(result.settings.gpu_time_s or 0.0)} of GPU time in "
            f"{counted(result.settings.kernels or 0, 'kernel')}; where a fix could save the most")


def at_roof_cell(share: KernelShare) -> str:
    """How near its nearest roof the kernel runs; - without counters to tell."""
    return pct(share.best_fraction) if share.best_fraction is not None else "-"


def upside_cell(v: VariantResult, region: float) -> str:
    """``done``, or the most a fix could save with its part of the region's GPU time."""
    s = v.share
    if is_done(v):
        return "done"
    if s is None or s.upside_s is None or not region:
        return "-"
    return f"{format_time(s.upside_s)} ({pct(s.upside_s / region)})"


def unprofiled_line(result: RunResult) -> str | None:
    """The kernels the profile left out, with their part of the GPU time; None if none."""
    other = result.settings.other_kernels
    if not other:
        return None
    return (f"not profiled: {other} more kernels, {pct(result.settings.other_share or 0.0)} "
            f"of the GPU time")


def autotuning_line(result: RunResult) -> str | None:
    """The benchmarking launches (autotuners', cache flushes) the profile left out; None if
    none."""
    launches = result.settings.autotuning_launches
    if not launches:
        return None
    return (f"left out: {counted(launches, 'launch', 'launches')} of "
            f"{autotuners_words(result.settings.autotuners or ())} "
            f"({format_time(result.settings.autotuning_s or 0.0)}): benchmarking, not the "
            f"program's work")


def unrecorded_line(result: RunResult) -> str | None:
    """The repeated calls pass 1 did not record, whose kernels' launches and time are
    counted from the recorded ones; None if none."""
    unrecorded = result.settings.unrecorded
    return unrecorded_words(unrecorded) if unrecorded else None


def missing_metrics_line(result: RunResult) -> str | None:
    """The metrics an imported report lacked, over its kernels (each kernel's own are in
    its notes); None where no kernel's report lacked any."""
    lacking = [v.missing_metrics for f in result.families for v in f.variants
               if v.missing_metrics]
    if not lacking:
        return None
    every = list(dict.fromkeys(m for names in lacking for m in names))
    return (f"the report lacks {counted(len(every), 'metric')} rooflint reads, for "
            f"{counted(len(lacking), 'kernel')}: {names_words(every)}; what they would judge "
            f"is not judged (--detail names each kernel's)")


def biggest_upside_line(family: FamilyResult, region: float,
                        name: Callable[[str], str]) -> str | None:
    """The kernel whose best move could save the most, with that move; None when no kernel
    has one. ``name`` writes the kernel's name (the terminal as its table row does, HTML
    whole)."""
    top = next((v for v in family.variants if v.share and v.share.upside_s
                and not is_done(v) and v.verdict and v.verdict.moves), None)
    if top is None:
        return None
    move = top.verdict.moves[0]
    return (f"biggest upside: {name(top.name)}, {pct(top.share.share)} of GPU time, "
            f"{top.verdict.bound}-bound at {pct(top.share.best_fraction)} of its roof: "
            f"{move.direction}: {lead_phrase(move.action)}; up to "
            f"{format_time(top.share.upside_s)} of {format_time(region)}")


def only_variants(result: RunResult, names: list[str], path: Path) -> RunResult:
    """The result cut down to the named families (each whole) and variants (all with no
    names), families in order; a name the file does not hold is bad input, answered with
    the names it does hold."""
    if not names:
        return result
    check_held({path: result}, [n for n in names if n not in {f.name for f in result.families}])
    families = [f if f.name in names else replace(f, variants=[v for v in f.variants
                                                               if v.name in names])
                for f in result.families]
    return replace(result, families=[f for f in families if f.variants])


def check_held(results: dict[Path, RunResult], names: list[str]) -> None:
    """Each of ``names`` a variant of at least one of ``results``; a name none holds is bad
    input (a typo, not a picture or table of the others), answered with the names they do
    hold, by family."""
    held: dict[str, dict[str, None]] = {}     # family -> its variants, in order, once each
    for family in (f for result in results.values() for f in result.families):
        held.setdefault(family.name, {}).update(dict.fromkeys(v.name for v in family.variants))
    unknown = [n for n in names if not any(n in variants for variants in held.values())]
    if unknown:
        listing = "; ".join(f"{family}: {', '.join(variants)}" for family, variants in held.items())
        files, one = ", ".join(map(str, results)), len(results) == 1
        raise RooflintError(f"{files} {'has' if one else 'have'} no variant "
                            f"{', '.join(unknown)}; {'it has' if one else 'they have'} {listing}")


DECISION_STYLE = {Decision.FASTER: "green", Decision.SLOWER: "red", Decision.SAME: "cyan",
                  Decision.INCONCLUSIVE: "yellow"}


def render_comparison_sentence(console: Console, c: Comparison,
                               shown: dict[str, str] | None = None) -> None:
    """A comparison's verdict on speed, in one sentence (`compare --summary` prints these
    alone), coloured by its decision."""
    c = printable_fields(c)
    shown = {c.a: c.a, c.b: c.b, **(shown or {})}
    console.print(f"[bold {DECISION_STYLE[c.speedup.decision]}]"
                  f"{escape(c.sentence_naming(shown[c.a], shown[c.b]))}[/]")


def decisions_line(comparisons: list[Comparison]) -> str:
    """``12 pairs: 3 faster, 1 slower, 8 the same``: a whole-file comparison's count."""
    counts = {d: sum(c.speedup.decision == d for c in comparisons) for d in Decision}
    words = {Decision.SAME: "the same"}
    told = ", ".join(f"{n} {words.get(d, d.value)}" for d, n in counts.items() if n)
    return f"{counted(len(comparisons), 'pair')}: {told}"


def render_comparison(console: Console, c: Comparison, shown: dict[str, str] | None = None
                      ) -> None:
    """One comparison: the verdict on speed, where it came from, the figures side by side;
    each side called as ``shown`` says (a label -> what the screen has room for)."""
    c = printable_fields(c)
    shown = {c.a: c.a, c.b: c.b, **(shown or {})}
    render_comparison_sentence(console, c, shown)
    console.print(labelled([("warning", f"[bold yellow]{escape(w)}[/]") for w in c.warnings]
                            + ([("where it came from", c.attribution.sentence)]
                               if c.attribution else [])
                            + [("movement", describe_movement(c.movement))]))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("", shown[c.a], shown[c.b]):
        table.add_column(escape(column), justify="left" if not column else "right")

    def time_cell(f: Figures) -> str:
        shown = f"{format_time(f.time_s)} ±{100 * f.spread:.0f}% ({f.samples} samples)"
        return f"[bold yellow]{shown} noisy[/]" if f.noisy else shown
    sides = [c.figures[c.a], c.figures[c.b]]
    table.add_row("time (median ± IQR)", *map(time_cell, sides))
    table.add_row("FLOP/s", *[format_rate(f.flop_rate, "FLOP/s") if f.flop_rate else "-"
                              for f in sides])
    table.add_row("DRAM bandwidth", *[format_rate(f.bandwidth, "B/s") for f in sides])
    sources = sorted({k for side in c.bytes.values() for k in side})
    for source in sources:
        table.add_row(f"DRAM bytes ({source})",
                      *[format_bytes(c.bytes[n][source]) if source in c.bytes[n] else "-"
                        for n in (c.a, c.b)])
    for source in sorted({k for side in c.flops.values() for k in side}):
        table.add_row(f"FLOPs ({source})",
                      *[format_rate(c.flops[n][source], "FLOP") if source in c.flops[n] else "-"
                        for n in (c.a, c.b)])
    table.add_row("correctness", c.correctness[c.a], c.correctness[c.b])
    table.add_row("verdict", str(c.movement["verdict_before"]), str(c.movement["verdict_after"]))
    console.print(table)
    held = c.expectation and "missed" not in c.expectation
    console.print(labelled(
        ([("prediction", f"[{'green' if held else 'red'}]{escape(c.expectation)}[/]")]
         if c.expectation else [])
        + [("note", f"[yellow]{escape(note)}[/]") for note in c.notes]))
