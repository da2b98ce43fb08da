"""The per-fix part of `rooflint compare` on two profiles of a program (issue 47, item 8):
the region's GPU time before and after, each fix the before profile predicted with its
time before and after, the saving measured against the one predicted, its source lines,
then the source lines that moved most. Decisions are judge/fix_comparison.py's; this only
lays them out, each line cut to the console's width.
"""

from __future__ import annotations

from rich.console import Console

from rooflint.common.units import format_time
from rooflint.judge.fix_comparison import (FixComparison, LineTimes, ProgramComparison,
                                          StepTimes)
from rooflint.output.program_summary import fit

FIX_LINES = 3           # source lines shown under each fix
PROGRAM_LINES = 10      # source lines shown in the whole program's part
FIX_WIDTH = 28
LINE_WIDTH = 44


def shown_time(seconds: float) -> str:
    """A time, ``0`` where there is none (kernels gone read as gone, not as 0 ns)."""
    return format_time(seconds) if seconds else "0"


def signed_time(seconds: float) -> str:
    """A time with its sign: a saving that went the wrong way reads negative."""
    return ("-" if seconds < 0 else "") + shown_time(abs(seconds))


def moved(before_s: float, after_s: float) -> str:
    return f"{shown_time(before_s):>9} → {shown_time(after_s):>9}"


def header_lines(comparison: ProgramComparison) -> list[str]:
    c = comparison
    return [f"GPU time of the profiled region: {moved(c.before_s, c.after_s)} "
            f"({signed_time(c.before_s - c.after_s)} saved)",
            "each fix A predicted: its kernels' time A → B, measured against predicted saving",
            f"{'fix':<{FIX_WIDTH}} {'A → B':^21}  {'measured':>9}  {'predicted':>9}  ratio"]


def ratio_text(fix: FixComparison) -> str:
    return f"{fix.ratio:.2f}x" if fix.ratio is not None else "-"


def line_row(row: LineTimes, indent: str) -> str:
    return f"{indent}{fit(row.line, LINE_WIDTH - len(indent)):<{LINE_WIDTH - len(indent)}} " \
           f"{moved(row.before_s, row.after_s)}"


def fix_lines(fix: FixComparison) -> list[str]:
    """A fix's row and its top source lines, how many more said."""
    lines = [f"{fit(fix.id, FIX_WIDTH):<{FIX_WIDTH}} {moved(fix.before_s, fix.after_s)}  "
             f"{signed_time(fix.measured_s):>9}  {shown_time(fix.predicted_s):>9}  "
             f"{ratio_text(fix)}"]
    lines += [line_row(row, "    ") for row in fix.lines[:FIX_LINES]]
    if len(fix.lines) > FIX_LINES:
        lines.append(f"    and {len(fix.lines) - FIX_LINES} more lines")
    return lines


def new_lines(comparison: ProgramComparison) -> list[str]:
    """The after time no predicted fix's lines launched, said where it is, so a fusion's
    saving is read against the kernels that replaced it."""
    if not comparison.new_s:
        return []
    return [f"{'new in B, from other lines':<{FIX_WIDTH}} {moved(0.0, comparison.new_s)}  "
            f"(fixes in B: {', '.join(comparison.new_from)})"]


def program_lines(comparison: ProgramComparison) -> list[str]:
    rows = comparison.lines[:PROGRAM_LINES]
    return ["GPU time by source line, the most moved first:",
            *(line_row(row, "  ") for row in rows)]


def change_lines(comparison: ProgramComparison) -> list[str]:
    """The change that made several fixes at once, checked whole, first."""
    c = comparison.change
    if c is None:
        return []
    ratio = f" ({c.ratio:.2f}x)" if c.ratio is not None else ""
    return [f"{c.change} in B, {len(c.fixes)} of A's fixes: measured "
            f"{signed_time(c.measured_s)} of {shown_time(c.predicted_s)} predicted{ratio}"]


def step_lines(steps: StepTimes | None) -> list[str]:
    """A step's time A → B under the profiler and the GPU's busy share; where the step did
    not follow the GPU time saved, that it did not, and what sets its pace."""
    if steps is None:
        return []
    lines = [f"  a step under the profiler: {moved(steps.before_s, steps.after_s)}, the GPU "
             f"busy {steps.before_busy:.0%} → {steps.after_busy:.0%} of the region"]
    if not steps.follows_gpu:
        lines += [f"    {shown_time(steps.gpu_saved_s)} of GPU time saved a step did not shorten "
                  f"it: the host or the input sets its pace", "    (the profiler slows the "
                  "host: time the program's steps without rooflint to see)"]
    return lines


def comparison_lines(comparison: ProgramComparison, width: int) -> list[str]:
    """The whole per-fix part as printed, each line cut to the width."""
    lines = [header_lines(comparison)[0],
             *([f"  {comparison.unlike_steps}"] if comparison.unlike_steps else []),
             *step_lines(comparison.steps),
             *change_lines(comparison), *header_lines(comparison)[1:]]
    for fix in comparison.fixes:
        lines += fix_lines(fix)
    lines += [*new_lines(comparison), *program_lines(comparison)]
    return [fit(line, width) for line in lines]


def render_fix_comparison(console: Console, comparison: ProgramComparison | None) -> None:
    """Print the per-fix part; nothing unless both sides were profiles."""
    if comparison is None:
        return
    for line in comparison_lines(comparison, console.width):
        console.print(line, markup=False, highlight=False, overflow="ignore", crop=False)
    console.print()
