"""A profile's part of the report's page (html_report.py): the program's summary and its
fixes first, then the kernel table, as `rooflint profile` prints them: what to change in
the program before how each kernel is doing. The words are the terminal's
(program_summary.py, profile_view.py, tables.py); the page adds what the terminal has no
room for: every fix, every source line, each fix's kernels as links to their details, and
whole names.
"""

from __future__ import annotations

from rooflint.analysis.evidence import pct
from rooflint.common.units import counted
from rooflint.formats.results import FamilyResult, ProgramFixResult, RunResult, VariantResult
from rooflint.judge.upside import is_done
from rooflint.output.family_table import UNBOUNDED
from rooflint.output.html_page import Content, Html, Sorted, bulleted, coloured, folded, table, tag
from rooflint.output.profile_view import top_move_cell
from rooflint.output.program_summary import (
    TOP_LINES, change_words, communication_lines, compile_lines, header_lines, kind_lines,
    per_step, program_fix_words, saving_amount, timing_lines,
)
from rooflint.output.tables import (
    application_heading, at_roof_cell, autotuning_line, biggest_upside_line, unprofiled_line,
    unrecorded_line, upside_cell,
)

KERNELS = ("kernel", "what", "launched from", "share", "launches", "verdict", "at roof",
           "upside", "top move")
FIXES = ("#", "saves", "change", "GPU time", "kernels", "estimated as", "source lines")

Anchors = dict[int, str]     # a variant's details anchor, by the variant's id()


def program_summary(result: RunResult, fixes: list[ProgramFixResult], anchors: Anchors) -> Html:
    """The summary `profile` prints first: the program's GPU time, busy and idle time and
    steps, the time by kind, then every fix, the most saving first; nothing for a profile
    no fix is for, as on the terminal."""
    if not fixes:
        return Html("")
    said = [" ".join(lines) for lines in (header_lines(result),
                                         timing_lines(result.program, UNBOUNDED),
                                         kind_lines(result, UNBOUNDED)) if lines]
    return tag("section", [tag("h3", "the program"), *(tag("p", line) for line in said),
                           _fixes(result, fixes, anchors),
                           *(tag("p", line.strip()) for line in
                             compile_lines(result, fixes) + communication_lines(fixes))],
               class_="program")


def _fixes(result: RunResult, fixes: list[ProgramFixResult], anchors: Anchors) -> Html:
    """A fix a row: its saving, the change, its kernels' share, the kernels, how the saving
    was estimated and the source lines, the most GPU time first."""
    named = {v.name: anchors[id(v)] for f in result.families for v in f.variants}
    per = per_step(result)
    rows = [[Sorted(rank, rank), Sorted(saving_amount(fix, per) or "-", fix.saving_s or None),
             _change(fix, result), _gpu_time(fix),
             Sorted(_fix_kernels(fix, named), len(fix.kernels) or None), fix.estimate,
             _fix_lines(fix)]
            for rank, fix in enumerate(fixes, start=1)]
    return table(FIXES, rows, numeric=FIXES[:2] + FIXES[3:4], class_="fixes", explorable=True)


def _change(fix: ProgramFixResult, result: RunResult) -> Content:
    """What to change; for a fix for no kernels (CUDA graphs, a job's communication), which
    no kernel's share measures, what the trace timed of it."""
    if fix.kernels or result.program is None:
        return change_words(fix)
    return [change_words(fix), tag("div", program_fix_words(fix, result.program),
                                   class_="muted")]


def _gpu_time(fix: ProgramFixResult) -> Sorted:
    """The share of the GPU time the fix's kernels take; none for a fix for no kernels (a
    job's communication fix acts on exposed waits, CUDA graphs on the host's launches),
    whose record's share is of something else (judge/program_fixes.communication_fixes)."""
    return Sorted(f"{fix.share:.1%}", fix.share) if fix.kernels else Sorted("-", None)


def _fix_kernels(fix: ProgramFixResult, named: dict[str, str]) -> Content:
    """The fix's kernels, folded under their count, each a link to its details."""
    if not fix.kernels:
        return "-"
    links = [tag("a", name, href=f"#{named[name]}") if name in named else name
             for name in fix.kernels]
    return folded(counted(len(fix.kernels), "kernel"), bulleted(links))


def _fix_lines(fix: ProgramFixResult) -> Content:
    """The fix's source lines with their shares: the top TOP_LINES, the rest folded."""
    said = [f"{line.line} {line.share:.1%}" for line in fix.lines]
    rest = said[TOP_LINES:]
    more = folded(counted(len(rest), "more line"), bulleted(rest)) if rest else None
    return [bulleted(said[:TOP_LINES]), more]


def kernel_table(family: FamilyResult, result: RunResult, anchors: Anchors) -> Html:
    """A profile's application view, as `profile --detail` prints it: each kernel's share
    of the GPU time, who launched it, its verdict, how near its roof, what a fix could save
    and the move that would, with what the profile left out under it."""
    region = result.settings.gpu_time_s or 0.0
    rows = [_kernel_row(v, anchors[id(v)], region) for v in family.variants if v.share]
    lines = [unprofiled_line(result), autotuning_line(result), unrecorded_line(result),
             biggest_upside_line(family, region, name=str)]
    return tag("div", [tag("h3", application_heading(result, family)),
                       table(KERNELS, rows, numeric=KERNELS[3:5] + KERNELS[6:8],
                             class_="kernels", explorable=True),
                       bulleted([line for line in lines if line])], class_="application")


def _kernel_row(v: VariantResult, anchor: str, region: float) -> list[Content | Sorted]:
    """A profiled kernel's row: the terminal's, with the whole name and the whole line it
    was launched from (the page has the room the terminal has not)."""
    s = v.share
    upside = 0.0 if is_done(v) else s.upside_s if region else None
    return [tag("a", v.name, href=f"#{anchor}"), s.library or "",
            s.origins[0].line if s.origins else "", Sorted(pct(s.share), s.share),
            Sorted(s.launches, s.launches),
            coloured(v.verdict.bound, v.verdict.bound) if v.verdict else "-",
            Sorted(at_roof_cell(s), s.best_fraction), Sorted(upside_cell(v, region), upside),
            top_move_cell(v)]
