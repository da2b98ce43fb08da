"""The program's summary, printed first by `rooflint profile` and `show` on a profile
(issue 47): GPU busy against wall time with the idle gaps named, and the steps, where the
result holds them (``program``, from pass 1's trace); the GPU time by kind, then the
program's fixes ranked by what each could save, with their shares and source lines. It
answers what to change in the program before the per-kernel tables say how each kernel
is doing, in at most MAX_LINES lines at any width. A figure the document does not hold (a
manifest's run, a profile Nsight Compute timed, an older document) is never made up here.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from dataclasses import dataclass

from rich.console import Console

from rooflint.analysis.program_fixes import COMMUNICATION, FIXES_BY_ID, Kind, Saving, kind_of
from rooflint.common.printable import printable
from rooflint.common.units import format_time
from rooflint.formats.results import ProgramFixResult, RunResult
from rooflint.formats.trace_timing import Communication, IdleTime, ProgramTiming, Steps
from rooflint.judge.program_fixes import compile_estimate, spent_s
from rooflint.output.profile_words import ended_words

# With the shortest top-kernel table `show` puts under it (its 11 lines at 100 columns: the
# GPU, the heading and the table's header wrapped, three rows, the pointer to --detail),
# profile_view.LINE_BUDGET: an FSDP2 job's ten fixes under a timing line of four made 41
MAX_LINES = 29
MAX_FIXES = 10          # two lines each, under the header and the kinds; fewer where the
#                         header, timing and kinds take more room (summary_lines)
TOP_LINES = 3           # source lines named per fix
ELLIPSIS = "…"


def fit(text: str, width: int) -> str:
    """One printable line, cut to the width with an ellipsis."""
    text = printable(text)
    return text if len(text) <= width else text[:max(0, width - 1)] + ELLIPSIS


def kind_shares(result: RunResult) -> dict[Kind, float]:
    """The region's GPU time by kind, the profiled kernels' own and the collectives' (timed
    from the trace, never profiled); the rest is not profiled."""
    shares: dict[Kind, float] = defaultdict(float)
    for v in (v for f in result.families for v in f.variants if v.share):
        shares[kind_of(v.share.kernel, v.share.library)] += v.share.share
    communication = unprofiled_communication(result)
    if communication:
        shares[Kind.COMMUNICATION] += communication
    return dict(sorted(shares.items(), key=lambda kv: -kv[1]))


def unprofiled_communication(result: RunResult) -> float:
    """The share of the region's GPU time (every rank's) in collectives the trace timed and
    no profiled kernel holds (pass 2 never profiles one; an imported report may have)."""
    found = result.program.communication if result.program else None
    region = result.settings.gpu_time_s
    if not (found and region):
        return 0.0
    profiled = sum(v.share.share for f in result.families for v in f.variants if v.share
                   and kind_of(v.share.kernel, v.share.library) is Kind.COMMUNICATION)
    return max(0.0, found.counted_s * found.ranks / region - profiled)


def header_lines(result: RunResult) -> list[str]:
    settings = result.settings
    program = result.families[0].name if result.families else "the program"
    profiled = sum(len(f.variants) for f in result.families)
    region = f"{format_time(settings.gpu_time_s)} of GPU time" if settings.gpu_time_s else \
        "GPU time"
    return [f"{program}: {region} in {settings.kernels or profiled} kernels; "
            f"what to change in the program, the most saving first"]


def timing_lines(program: ProgramTiming | None, width: int) -> list[str]:
    """GPU busy of the wall time, the idle time by cause, and the steps, wrapped at the
    width; none where the result holds no program timing. Said to be timed under the
    profiler: pass 1's trace slows the host (a training step on an H200 took 27.5 ms there,
    7.4 ms alone), so its idle time is the most that the program's own could be."""
    if program is None or not program.wall_s:
        return []
    parts = [f"under the profiler, GPU busy {format_time(program.busy_s)} of "
             f"{format_time(program.wall_s)} ({program.busy_s / program.wall_s:.0%})",
             idle_words(program.idle)]
    if program.steps:
        parts.append(steps_words(program.steps))
    if program.stopped_at_step:
        parts.append(f"{ended_words(program.stopped_at_step)}; 0 runs it to its end")
    if program.communication:
        parts.append(communication_words(program.communication))
    return textwrap.wrap("; ".join(filter(None, parts)), width, subsequent_indent="    ")


def communication_words(found: Communication) -> str:
    """``collectives 4 ms a step on each of 2 ranks over 9 steps after the first, 60% beside
    compute, 1.6 ms exposed``: a step's where the steps are known (the first, warm-up, left
    out), else the whole region's."""
    ranks = f" on each of {found.ranks} ranks" if found.ranks > 1 else ""
    if found.steps >= 2:
        after = found.steps - 1
        return (f"collectives {format_time(found.step_collective_s)} a step{ranks} over "
                f"{after} step{'s' if after > 1 else ''} after the first, "
                f"{found.overlapped:.0%} beside compute, "
                f"{format_time(found.step_exposed_s)} exposed")
    return (f"collectives {format_time(found.collective_s)}{ranks}, "
            f"{found.overlapped:.0%} beside compute, {format_time(found.exposed_s)} exposed")


def idle_words(idle: IdleTime) -> str:
    """``idle 7.1 ms: 4.0 ms synchronisation, 2.5 ms launch-bound``: the causes that took
    any time, the most first."""
    causes = sorted([(idle.sync_s, "synchronisation"), (idle.launch_s, "launch-bound"),
                     (idle.copy_s, "copies"), (idle.other_s, "other")], key=lambda c: -c[0])
    named = ", ".join(f"{format_time(s)} {cause}" for s, cause in causes if s > 0)
    return f"idle {format_time(idle.total_s)}: {named}" if named else ""


def steps_words(steps: Steps) -> str:
    """``10 steps of 2.9 ms after a 5.1 ms warm-up``: the first step apart."""
    after = steps.count - 1
    return (f"{after} step{'s' if after > 1 else ''} of {format_time(steps.step_s)} "
            f"after a {format_time(steps.warmup_s)} warm-up")


def kind_lines(result: RunResult, width: int) -> list[str]:
    """By kind, wrapped at the width; the kernels left unprofiled said as such."""
    parts = [f"{kind.value} {share:.0%}" for kind, share in kind_shares(result).items()]
    communication = unprofiled_communication(result)
    rest = max(0.0, (result.settings.other_share or 0.0) - communication)
    if rest:
        among = ", the collectives among them" if communication else ""
        parts.append(f"not profiled {rest:.0%} ({result.settings.other_kernels} "
                     f"kernels{among})")
    return textwrap.wrap("GPU time by kind: " + ", ".join(parts), width, subsequent_indent="    ")


@dataclass(frozen=True)
class PerStep:
    """What a saving over the profiled region is said over: a step's share where the region
    found its steps (its GPU time is theirs, the first one's with them), and in a job each
    rank's share of that (every rank runs every step, and a job's saving is every rank's:
    a step's wall time is one rank's)."""

    steps: int | None
    ranks: int = 1

    def saved(self, seconds: float) -> str:
        """``~2.34 ms``, ``~234 us a step`` or ``~117 us a step on each rank``."""
        if not self.steps:
            return f"~{format_time(seconds)}"
        each = " on each rank" if self.ranks > 1 else ""
        return f"~{format_time(seconds / self.steps / self.ranks)} a step{each}"


def per_step(result: RunResult) -> PerStep:
    """The steps the profiled region ran, the first included, where it found some, and the
    job's ranks."""
    program = result.program
    steps = program.steps.count if program and program.steps and program.steps.count else None
    found = program.communication if program else None
    return PerStep(steps, found.ranks if found and found.ranks > 1 else 1)


def fix_lines(rank: int, fix: ProgramFixResult, per: PerStep = PerStep(None),
              program: ProgramTiming | None = None) -> list[str]:
    """A fix in two lines: what to change and its saving; its share and top source lines
    (for the program's time, what the trace timed of it)."""
    first = f"{rank:>2}. {saving_words(fix, per)}: {change_words(fix)}"
    if not fix.kernels and program is not None:      # for the program's time or its job's
        return [first, f"    {program_fix_words(fix, program)}"]
    lines = ", ".join(f"{line.line.split(' in ')[0]} {line.share:.1%}"
                      for line in fix.lines[:TOP_LINES])
    made = f"; made already in {fix.made} of them, not counted" if fix.made else ""
    return [first, f"    {fix.share:.1%} of GPU time in {len(fix.kernels)} kernels "
                   f"({fix.estimate}{made}); {lines}"]


def saving_words(fix: ProgramFixResult, per: PerStep) -> str:
    """``saves ~2.34 ms (11.6%)``: over the region, or a step's share of it."""
    amount = saving_amount(fix, per)
    return f"saves {amount}" if amount else "no saving estimated"


def saving_amount(fix: ProgramFixResult, per: PerStep) -> str | None:
    """``~2.34 ms (11.6%)``, or ``~234 us a step (11.6%)``; None where none was estimated."""
    return f"{per.saved(fix.saving_s)} ({fix.saving_share:.1%})" if fix.saving_s else None


def change_words(fix: ProgramFixResult) -> str:
    """What to change in the program, or why no fix is for these kernels; a fix that
    changes the precision says it trades accuracy."""
    action = fix.action or f"no fix: {fix.why}"
    return action + (" (trades accuracy)" if fix.changes_precision else "")


def program_fix_words(fix: ProgramFixResult, program: ProgramTiming) -> str:
    """What the trace timed of a fix for no kernels: the collectives' exposed time for a
    communication fix (and the host's once-a-step time for accumulation), the host's
    launches for CUDA graphs."""
    found = program.communication
    if is_communication(fix) and found:
        host = (f"; its host {format_time(found.step_host_once_s)} a step outside forward "
                f"and backward" if fix.estimate == Saving.EXPOSED_ONCE.value
                and found.steps >= 2 and found.step_host_once_s else "")
        return exposed_words(found) + f" ({fix.estimate})" + host
    return host_wait_words(program)


def exposed_words(found: Communication) -> str:
    """``exposed 538 us a step on the rank that waits least, of 4.41 ms of collectives a
    step, their calls 1.2 ms``: the time a communication fix acts on (at most its calls'
    own time)."""
    if found.steps >= 2:
        return (f"exposed {format_time(found.step_least_exposed_s)} a step on the rank that "
                f"waits least, of {format_time(found.step_collective_s)} of collectives a "
                f"step, their calls {format_time(found.counted_s / found.steps)}")
    return (f"exposed {format_time(found.least_exposed_s)} on the rank that waits least, of "
            f"{format_time(found.collective_s)} of collectives, their calls "
            f"{format_time(found.counted_s)}")


def host_wait_words(program: ProgramTiming) -> str:
    """What the trace timed of a fix for the program's time (CUDA graphs), which no kernel's
    share measures."""
    return (f"under the profiler the GPU waited {format_time(program.idle.launch_s)} of "
            f"{format_time(program.wall_s)} on the host's launches; time the step without "
            f"it to see what a graph saves")


def compile_lines(result: RunResult, fixes: list[ProgramFixResult]) -> list[str]:
    """The fixes torch.compile makes at once, by their ranks, and what it saves of them."""
    estimate = compile_estimate(result, fixes)
    if estimate is None:
        return []
    ranks = [str(rank) for rank, f in enumerate(fixes, 1) if f.id in estimate.fixes]
    region = result.settings.gpu_time_s
    found = result.program.communication if result.program else None
    share = f" ({estimate.saving_s / spent_s(found, region):.1%})" if region else ""
    return [f"    torch.compile makes fixes {', '.join(ranks)} at once: saves "
            f"{per_step(result).saved(estimate.saving_s)}{share} of them together"]


def is_communication(fix: ProgramFixResult) -> bool:
    """Whether ``fix`` saves the job's exposed communication (a catalog entry's saving)."""
    return fix.id in FIXES_BY_ID and FIXES_BY_ID[fix.id].saving in COMMUNICATION


def communication_lines(fixes: list[ProgramFixResult]) -> list[str]:
    """Where two or more of the fixes shown (``fixes``, by their ranks) save from the same
    exposed communication, that their savings are not to be added."""
    ranks = [str(rank) for rank, f in enumerate(fixes, 1) if is_communication(f)]
    if len(ranks) < 2:
        return []
    return [f"    fixes {', '.join(ranks[:-1])} and {ranks[-1]} each save from the same exposed "
            f"communication: their savings do not add up"]


def summary_lines(result: RunResult, fixes: list[ProgramFixResult], width: int) -> list[str]:
    """The summary as printed, each line cut to the width, in at most MAX_LINES lines: as
    many fixes as fit (MAX_FIXES at most) above the lines that count the rest and say which
    of them torch.compile makes at once and which save from one exposed time."""
    head = [*header_lines(result), *timing_lines(result.program, width),
            *kind_lines(result, width)]
    for shown in range(min(MAX_FIXES, len(fixes)), -1, -1):
        lines = head + [line for rank, fix in enumerate(fixes[:shown], 1)
                        for line in fix_lines(rank, fix, per_step(result), result.program)]
        if len(fixes) > shown:
            rest = sum(f.share for f in fixes[shown:])
            lines.append(f"    and {len(fixes) - shown} more fixes over {rest:.1%} of GPU time")
        lines += compile_lines(result, fixes[:shown]) + communication_lines(fixes[:shown])
        if len(lines) <= MAX_LINES:
            break
    return [fit(line, width) for line in lines][:MAX_LINES]


def render_program_summary(console: Console, result: RunResult,
                           fixes: list[ProgramFixResult]) -> None:
    """Print the summary above the per-kernel tables; nothing for a result with no fixes."""
    if not fixes:
        return
    for line in summary_lines(result, fixes, console.width):
        console.print(line, markup=False, highlight=False, overflow="ignore", crop=False)
    console.print()
