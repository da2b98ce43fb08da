"""What `rooflint profile` and `show` print for a program profile (issue 47, item 7): the
program's summary and fixes, then its top kernels by share, one line each with its best
move and what that move could save, in at most LINE_BUDGET lines at any width. Every
kernel's row and notes (tables.render_run) are one flag away: ``--detail``, and the HTML
report. A manifest family's result (`rooflint run`) is short, and printed whole.
"""

from __future__ import annotations

import io
from typing import Callable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rooflint.analysis.evidence import pct
from rooflint.common.printable import printable_fields
from rooflint.common.units import counted, format_time
from rooflint.formats.results import ProgramFixResult, RunResult, VariantResult
from rooflint.judge.upside import best_move, is_done
from rooflint.output.family_table import render_run_header
from rooflint.output.depth import Depth
from rooflint.output.program_summary import render_program_summary
from rooflint.output.tables import (
    COLUMN_GAP, at_roof_cell, autotuning_line, missing_metrics_line, render_run,
    unprofiled_line, unrecorded_line,
)
from rooflint.output.terminal import BOUND_STYLE, HEAD_RULE, lead_phrase, shortened_names

LINE_BUDGET = 40     # the limit on the default output, at 100 columns and more
TOP_KERNELS = 10     # kernel rows at most; fewer where the summary's fixes take the room
MIN_KERNELS = 3      # kernel rows at least, whatever the summary takes
TOP_COLUMNS = ("kernel", "share", "verdict", "at roof", "saves", "top move")
DETAIL_LINE = "every kernel's row and notes: add --detail (the HTML report holds them too)"
SUMMARY_LINE = "the top kernels: leave out --summary; every kernel's row and notes: --detail"


def is_profile(result: RunResult) -> bool:
    """A program profile (`rooflint profile`), not a manifest family's run."""
    return result.settings.mode == "profile"


def render_result(console: Console, result: RunResult, fixes: list[ProgramFixResult],
                  depth: Depth) -> None:
    """A result as `profile` and `show` print it. A profile: its summary (the fixes), then
    at the default depth its top kernels, at DETAIL every table and note; a manifest run:
    its families at ``depth``."""
    if not is_profile(result):
        render_run(console, result, depth)
        return
    render_program_summary(console, result, fixes)
    if depth is Depth.SUMMARY:
        console.print(Text(SUMMARY_LINE))
        return
    if depth is Depth.DETAIL:
        render_run(console, result, depth)
        return
    fixed = (printed_lines(console.width, lambda p: render_program_summary(p, result, fixes))
             + printed_lines(console.width, lambda p: render_brief(p, result, fixes, 0)))
    render_brief(console, result, fixes, kernel_rows(fixed))


def kernel_rows(fixed_lines: int) -> int:
    """How many kernel rows fit the budget beside the lines printed whatever the rows."""
    return max(MIN_KERNELS, min(TOP_KERNELS, LINE_BUDGET - fixed_lines))


def printed_lines(width: int, render: Callable[[Console], None]) -> int:
    """The lines ``render`` prints at ``width``: the budget is counted as printed, wraps
    and all."""
    probe = Console(file=io.StringIO(), width=width, color_system=None)
    render(probe)
    return probe.file.getvalue().count("\n")


def render_brief(console: Console, result: RunResult, fixes: list[ProgramFixResult],
                 rows: int) -> None:
    """Under the summary: the device, the top ``rows`` kernels, what the profile left
    out (the kernels unprofiled only where no summary said so), and where the rest is."""
    result = printable_fields(result)
    render_run_header(console, result)
    variants = top_by_share(result, rows)
    console.print(Text(top_heading(result, len(variants))))
    console.print(top_table(result, variants, console.width))
    notes = (autotuning_line(result), unrecorded_line(result),
             None if fixes else unprofiled_line(result), missing_metrics_line(result))
    for line in filter(None, notes):
        console.print(Text(f"  {line}"))
    console.print(Text(DETAIL_LINE))


def top_by_share(result: RunResult, rows: int) -> list[VariantResult]:
    """The profiled kernels with the most GPU time, most first."""
    shared = [v for f in result.families for v in f.variants if v.share]
    return sorted(shared, key=lambda v: -v.share.share)[:rows]


def top_heading(result: RunResult, shown: int) -> str:
    """What the kernel rows cover: how many of the profiled kernels, and of the region's."""
    profiled = sum(1 for f in result.families for v in f.variants if v.share)
    region = result.settings.gpu_time_s or 0.0
    return (f"top {shown} of {counted(profiled, 'profiled kernel')} by share of "
            f"{format_time(region)} of GPU time; each one's best move and what it could save")


def top_table(result: RunResult, variants: list[VariantResult], width: int) -> Table:
    """A row per kernel: share, verdict, nearness to its roof, saving and top move; the
    move alone gives way (an ellipsis) to fit ``width``."""
    region = result.settings.gpu_time_s or 0.0
    names = shortened_names(v.name for v in variants)
    rows = [[Text(names[v.name]), Text(pct(v.share.share)), verdict_cell(v),
             Text(at_roof_cell(v.share)), Text(saving_cell(v, region)), Text(top_move_cell(v))]
            for v in variants]
    widths = [max([len(column), *(row[i].cell_len for row in rows)])
              for i, column in enumerate(TOP_COLUMNS)]
    room = width - sum(widths[:-1]) - COLUMN_GAP * (len(TOP_COLUMNS) - 1)
    table = Table(box=HEAD_RULE, show_edge=False, pad_edge=False, collapse_padding=True)
    for column, natural in zip(TOP_COLUMNS, widths):
        moves = column == "top move"
        table.add_column(column, justify="left" if column in ("kernel", "verdict") or moves
                         else "right", no_wrap=True, overflow="ellipsis",
                         min_width=None if moves else natural,
                         max_width=max(room, len(column)) if moves else None)
    for row in rows:
        table.add_row(*row)
    return table


def verdict_cell(v: VariantResult) -> Text:
    """The kernel's bound in its colour; - without a verdict."""
    return Text(v.verdict.bound, BOUND_STYLE[v.verdict.bound]) if v.verdict else Text("-")


def saving_cell(v: VariantResult, region: float) -> str:
    """What the kernel's best move could save, with its part of the region's GPU time."""
    if is_done(v):
        return "done"
    if v.share.upside_s is None or not region:
        return "-"
    return f"{format_time(v.share.upside_s)} ({pct(v.share.upside_s / region)})"


def top_move_cell(v: VariantResult) -> str:
    """The best move's direction and lead phrase. A done kernel is at its roof: only a move
    that raises the roof is named beside it."""
    move = best_move(v.verdict) if v.verdict else None
    if is_done(v):
        raises = move is not None and move.direction == "raise-the-roof"
        return "at its roof" + (f"; raise it: {lead_phrase(move.action)}" if raises else "")
    if move is None:
        return "no move (no counters)" if v.verdict is None else "no kernel move"
    return f"{move.direction}: {lead_phrase(move.action)}"
