"""One family's table, as `run` prints it when the family is done and `show` prints it
again: the device header, a row per variant (wide when the terminal has room, compact
otherwise) and, under the table, the notes it has no room for: counters, levels, causes,
the top move with its source lines, clocks held down. live.py prints it while a run works;
tables.py, for a whole result.
"""

from __future__ import annotations

import statistics

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from rooflint.analysis.diagnose import Move
from rooflint.analysis.evidence import BOUND_THRESHOLD, pct
from rooflint.analysis.moves import rule_for
from rooflint.analysis.roofline import Level
from rooflint.analysis.sourcelines import supporting
from rooflint.common.printable import printable_fields
from rooflint.common.units import counted, format_bytes, format_params, format_rate, format_time
from rooflint.formats.results import FamilyResult, RunResult, VariantResult
from rooflint.formats.status import Status
from rooflint.formats.trace_events import Origin
from rooflint.output.profile_words import imported_words, missing_metrics_words
from rooflint.output.depth import Depth
from rooflint.output.terminal import (
    BOUND_STYLE, HEAD_RULE, STATUS_STYLE, WHOLE_NAME, ai_text, labelled, lead_phrase,
    roofs_line, shortened, shortened_names,
)


def render_run_header(console: Console, result: RunResult) -> None:
    """The device and settings; printed by `run` before its first family is measured, when
    the byte source is the one it will try (a fallback is announced when it happens)."""
    result = printable_fields(result)
    console.print(device_markup(result))
    imported = imported_words(result.settings)
    if imported:
        console.print(Text(imported))
    if result.settings.counters_unavailable:
        console.print(Text(f"counters unavailable: {result.settings.counters_unavailable}",
                           style="yellow"))


def device_markup(result: RunResult) -> str:
    """The device and settings in one line of rich markup (the GPU's name bold); the HTML
    report shows the same line."""
    gpu = result.gpu
    clocks = f", max SM clock {gpu.max_sm_clock_mhz:.0f} MHz" if gpu.max_sm_clock_mhz else ""
    if result.families:
        counted = any(v.counters for f in result.families for v in f.variants)
    else:
        counted = result.settings.counting
    source = ("DRAM bytes from ncu counters" if counted else
              "no counters" if result.settings.mode == "profile" else    # pass 2 stopped
              "DRAM bytes from the manifests' model")
    # a profile whose pass 2 stopped knows its GPU from the profiler's trace, which names no L2
    l2 = format_bytes(gpu.l2_bytes) if gpu.l2_bytes else "size unknown"
    return (f"[bold]{escape(gpu.name)}[/] (spec {escape(result.spec_id)}), {gpu.sms} SMs, "
            f"L2 {l2}, driver {escape(gpu.driver)}{clocks}; "
            f"cache {escape(result.settings.cache)}; {source}")


# The family table's columns. The wide layout is used when it fits the terminal without
# wrapping; otherwise the compact one, which shows a failed variant's status in the verdict
# column and puts the top move among the notes.
WIDE = ("variant", "status", "time", "DRAM", "FLOP/s", "AI obs/alg", "verdict", "top move")
COMPACT = ("variant", "time", "DRAM", "FLOP/s", "AI obs/alg", "verdict")
NUMERIC = {"time", "DRAM", "FLOP/s", "AI obs/alg"}
UNBOUNDED = 10**6  # a width no table reaches: measures its natural (unwrapped) width


def render_family(console: Console, family: FamilyResult, depth: Depth) -> None:
    """The family's title and table; at the default depth its roofs and notes, the traps
    its verdicts ruled out named once (traps_line); at DETAIL each variant's traps too."""
    family = printable_fields(family)
    console.print(Text(family_title(family), "table.title"))
    wide = _family_table(family, WIDE)
    compact = console.measure(wide, options=console.options.update_width(UNBOUNDED)).maximum \
        > console.width
    console.print(_family_table(family, COMPACT) if compact else wide)
    if depth is Depth.SUMMARY:
        return
    for line in family_roofs(family):
        console.print(escape(line))
    console.print(_notes_grid(family, top_move=compact, traps=depth is Depth.DETAIL))
    traps = traps_line(family)
    if depth is Depth.DEFAULT and traps:
        console.print(Text(traps, "dim"))


# Where the traps a verdict rules out come from (analysis/moves.py's TRAPS).
TRAPS_SOURCE = "the kernel book's traps, Part 5 (5.14)"


def traps_line(family: FamilyResult) -> str | None:
    """The moves the family's verdicts ruled out, each named once with how many variants it
    was ruled out for (``not split-K / more SMs: 3 variants``), and where --detail says
    why; None where none was."""
    counts: dict[str, int] = {}
    for v in family.variants:
        for text in (v.verdict.ruled_out if v.verdict else []):
            head = text.split(":", 1)[0]
            counts[head] = counts.get(head, 0) + 1
    if not counts:
        return None
    named = "; ".join(f"{head}: {counted(n, 'variant')}" for head, n in counts.items())
    return f"  ruled out ({TRAPS_SOURCE}; --detail says why for each variant): {named}"


def family_title(family: FamilyResult) -> str:
    """The family's name with the sizes it was measured at: ``gemm_fp32 (N=4096)``."""
    params = f" ({format_params(family.params)})" if family.params else ""
    return f"{family.name}{params}"


def family_roofs(family: FamilyResult) -> list[str]:
    """The roofs the family was judged against, a line per precision, with how the table
    reads against them."""
    precisions = {v.roofs.precision: v.roofs for v in family.variants if v.roofs}
    return [f"{roofs_line(roofs)}; bound = at >= {100 * BOUND_THRESHOLD:.0f}% of a roof; "
            f"DRAM and FLOP/s as % of their roofs" for roofs in precisions.values()]


def _family_table(family: FamilyResult, columns: tuple[str, ...]) -> Table:
    table = Table(box=HEAD_RULE, show_edge=False, pad_edge=False, collapse_padding=True)
    whole = max((len(v.name) for v in family.variants), default=0) <= WHOLE_NAME
    for column in columns:
        table.add_column(column, justify="right" if column in NUMERIC else "left",
                         no_wrap=column == "variant" and whole, overflow="fold")
    names = shortened_names(v.name for v in family.variants)
    for v in family.variants:
        cells = variant_cells(v, names[v.name])
        if "top move" not in columns:
            cells.setdefault("verdict", cells["status"])
        table.add_row(*(cells.get(column, "") for column in columns))
    return table

def variant_cells(v: VariantResult, shown: str | None = None) -> dict[str, Text]:
    """One variant's row, by column, its name ``shown`` as the table tells it from its
    neighbours (shortened_names; else shortened alone); a variant that was not timed has
    only name and status, one timed without a roofline point (a profiled kernel pass 2
    took no counters of, whose notes say why) its time and "no counters". The HTML
    report's family tables show the same cells."""
    name = Text(shown or shortened(v.name))
    if v.baseline:
        name.append(" (baseline)", "dim")
    cells = {"variant": name, "status": Text(v.status.upper(), STATUS_STYLE[v.status])}
    if not v.time:
        return cells
    time = f"{format_time(v.time.median_s)} ±{100 * v.time.spread:.0f}%"
    cells["time"] = Text(f"{time} noisy", "bold yellow") if v.time.noisy else Text(time)
    if not v.point:   # failed (its status says so), or a profiled kernel without counters
        return cells | ({"verdict": Text("no counters", "dim")} if v.status == Status.OK
                        else {})
    p = v.point
    verdict = Text(v.verdict.bound, BOUND_STYLE[v.verdict.bound])
    if v.expect.get("bound") not in (None, v.verdict.bound):
        verdict.append(f" (expected {v.expect['bound']})", "red")
    top = v.verdict.moves[0] if v.verdict.moves else None
    return cells | {
        "DRAM": Text(f"{format_rate(p.achieved_bandwidth, 'B/s')} {pct(p.dram_fraction)}"),
        "FLOP/s": Text(f"{format_rate(p.achieved_flops, '')} {pct(p.compute_fraction)}"
                       if p.flops else "-"),
        "AI obs/alg": Text(f"{ai_text(p.observed_ai)}/"
                           f"{ai_text(p.algorithmic_ai) if p.algorithmic_known else '-'}"
                           if p.flops else "-"),
        "verdict": verdict,
        "top move": Text(f"{top.direction}: {lead_phrase(top.action)}" if top else ""),
    }


def _notes_grid(family: FamilyResult, top_move: bool, traps: bool) -> Padding:
    """Each variant's notes, one per row behind its name (see _labelled); the moves its
    verdict ruled out only with ``traps``."""
    baseline = baseline_variant(family)
    names = shortened_names(v.name for v in family.variants)
    return labelled([(names[v.name], note) for v in family.variants
                      for note in _notes(v, top_move, baseline, traps)])


def baseline_variant(family: FamilyResult) -> VariantResult | None:
    """The variant the family's speeds are measured against, if the result holds it."""
    return next((v for v in family.variants if v.name == family.baseline), None)


def _notes(v: VariantResult, top_move: bool, baseline: VariantResult | None,
           traps: bool) -> list[Text]:
    """What the table has no room for; with ``top_move`` the move leads its reason; the
    moves the verdict ruled out with ``traps``."""
    notes = measurement_notes(v)
    if v.verdict:
        notes += [Text(f"{c.name}: {c.detail}") for c in v.verdict.causes]
        if v.verdict.moves:
            top = v.verdict.moves[0]
            lead = (f"move {top.direction}: {lead_phrase(top.action)}; why" if top_move
                    else f"why {top.direction}")
            notes.append(Text(f"{lead}: {top.reason}; expect {top.expect}"))
            notes += [Text(f"  {line}", "cyan") for line in move_lines(v, top)]
        notes += [Text(text) for text in v.verdict.ruled_out if traps]
    return notes + context_notes(v, baseline)


def move_lines(v: VariantResult, move: Move) -> list[str]:
    """The source lines behind ``move``, led by the measure the move catalog names for it
    (stall samples for a move a newer rooflint wrote); none without a source pass."""
    if not v.source_lines:
        return []
    rule = rule_for(move.id)
    return supporting(v.source_lines, rule.lines if rule else "stall_samples")


ORIGINS_SHOWN = 3     # a kernel's origins its notes name; the result keeps them all


def origins_words(origins: list[Origin]) -> str:
    """Where a kernel's launches came from: its first ORIGINS_SHOWN origins, each with its
    launches and its part of the kernel's time, then how many more and their part
    (the result document keeps every one); launches with none known after known ones are
    the same kernel's, past the launches the bootstrap traced to a line (a Triton
    kernel's first 100)."""
    total = sum(o.time_s for o in origins) if len(origins) > 1 else 0.0   # one: all of it
    shown = [f"{counted(o.launches, 'more launch', 'more launches')} with no line recorded"
             if i and not (o.operator or o.line) else
             f"{o.words} ({counted(o.launches, 'launch', 'launches')}{_part(o.time_s, total)})"
             for i, o in enumerate(origins[:ORIGINS_SHOWN])]
    rest = origins[ORIGINS_SHOWN:]
    if rest:
        shown.append(f"and {counted(len(rest), 'more origin', 'more origins')} "
                     f"({counted(sum(o.launches for o in rest), 'launch', 'launches')}"
                     f"{_part(sum(o.time_s for o in rest), total)})")
    return "; ".join(shown)


def _part(time_s: float, total_s: float) -> str:
    """``, 62 % of its time``, or nothing where the trace timed no launch."""
    return f", {pct(time_s / total_s)} of its time" if total_s else ""


def measurement_notes(v: VariantResult) -> list[Text]:
    """The notes before the verdict's: how the variant ran and what its counters say (a
    failure, who launched it, a noisy time, the counters, the levels, the run's notes).
    Apart from the verdict's notes because the HTML report shows those in their own lists."""
    notes = []
    if v.status != Status.OK:
        notes.append(Text(v.message, STATUS_STYLE[v.status]))
    if v.share and v.share.origins:
        notes.append(Text("launched " + origins_words(v.share.origins)))
    if v.share and v.message:
        notes.append(Text(v.message, "yellow"))
    if v.missing_metrics:
        notes.append(Text(missing_metrics_words(v.missing_metrics), "yellow"))
    if v.time and v.time.noisy:
        notes.append(Text(f"noisy time: {v.time.noise}; its median is uncertain", "yellow"))
    if v.counters:
        notes.append(Text(_counter_summary(v), "dim"))
    if v.levels:
        notes.append(Text(_levels_line(v), "dim"))
    return notes + [Text(note) for note in v.notes]


def context_notes(v: VariantResult, baseline: VariantResult | None = None) -> list[Text]:
    """The notes after the verdict's: the variant against the machine and the others (GPM
    utilizations, speed against the baseline, its prediction, the variant it should beat,
    clocks held down)."""
    notes = []
    if v.gpm:
        shown = ", ".join(f"{k.removesuffix('_util').replace('_', ' ')} {x:.0f}%"
                          for k, x in v.gpm.items())
        notes.append(Text(f"GPM utilization (NVML, back-to-back runs): {shown}", "dim"))
    if v.speed_vs_baseline:
        note = Text(f"{v.speed_vs_baseline:.2f}x the speed of the baseline")
        if baseline and baseline.time and baseline.time.noisy:
            note.append(f" (a noisy baseline: {baseline.name} spreads "
                        f"±{100 * baseline.time.spread:.0f}%)", "yellow")
        notes.append(note)
    if v.expectation_mismatch:
        notes.append(Text.assemble(("prediction missed", "red"), f": {v.expectation_mismatch}"))
    if v.versus:
        notes.append(Text(v.versus))
    limits = v.clocks.held_down_by
    if limits:
        sm = f"SM clock {statistics.median(v.clocks.sm_mhz):.0f} MHz, " if v.clocks.sm_mhz else ""
        notes.append(Text(f"{sm}clocks held down by {', '.join(limits)}", "yellow"))
    return notes


def _counter_summary(v: VariantResult) -> str:
    c = v.counters
    flops = ", ".join(f"{format_rate(x, 'FLOP')} {p}" for p, x in c.flops.items()
                      if x >= 0.01 * c.counted_flops) or "no FLOPs"
    return (f"ncu: DRAM read {format_bytes(c.dram_read)}, write {format_bytes(c.dram_write)}; "
            f"L2 {format_bytes(c.l2_bytes)}; counted {flops}"
            + (f" (model {format_rate(v.flops['model'], 'FLOP')})" if "model" in v.flops else "")
            + f"; occupancy {c.occupancy_pct:.0f}%, "
            f"{c.registers_per_thread} registers, {c.waves:.3g} waves")


def _levels_line(v: VariantResult) -> str:
    """The hierarchical roofline in one line: each level's bandwidth, the intensity it
    gives, and how close it ran to its roof; the binding level marked."""
    binding = v.verdict.level if v.verdict else None

    def one(level: Level) -> str:
        of_roof = (f" ({pct(level.fraction)} of {'its peak' if level.name == 'l1' else 'roof'})"
                   if level.fraction is not None else "")
        mark = " (binds)" if level.name == binding else ""
        return (f"{level.name.upper()} {format_rate(level.bandwidth, 'B/s')}{of_roof}, "
                f"AI {ai_text(level.intensity)}{mark}")
    return "levels: " + "; ".join(one(level) for level in v.levels)
