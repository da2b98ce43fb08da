"""A fix's saving checked (issue 47, item 8): two profiles of one program, before and after
a change, compared fix by fix and source line by source line against what the before
profile predicted each fix would save.

Both profiles are rolled up into their fixes (judge/program_fixes.py). A fix predicted on
the before side is measured on the after side by:

- the after profile's fix with the same id (the GEMMs are still GEMMs after a fusion): its
  kernels' whole time;
- plus the time of the after kernels no before fix accounts for (a fix the before side did
  not have, or kernels no fix is for that the before side had no such group of), on each of
  the fix's source lines where the fix is gone from the after profile: the fused kernel
  launched from the RMSNorm's line is what that line's normalisation became. A line several
  vanished fixes share gives its new time to the one that had the most time there, so no
  time is counted twice.

A compiled program's Triton kernel is credited first by what it fused: the fix that claims
its line's function (a Llama's RMSNorm), else the catalog's entry for the eager kernels of
the ATen operators its name lists (``triton_per_fused_native_layer_norm_0``): a fused cast
is the casts' fix, though it runs on the line of the GEMM it feeds. After time that falls to
no fix is kept apart as ``new_s`` with the after fixes it came from: a fusion's measured saving is
then read against the new kernels that took its place, never silently credited with them.

Where the after side is compiled and the before side not, the fixes torch.compile makes
(the catalog's ``by_compile``) are also checked together (:class:`ChangeCheck`): the change
the user made is the compile, not four fixes one at a time, predicted as the before
profile's summary predicted it.

Times are over each profile's region, as its shares are; the two regions must hold the
same work (the same steps) for the difference to mean anything. Where both documents count
their steps and the counts differ (a profile ended at its 20th optimizer step by
``--stop-after`` beside one that ran its 300 to the end), the comparison says so
(``unlike_steps``); the steps' own work it cannot check. Where they count the same steps,
a step's time in each (under the profiler) is set beside the GPU time saved a step
(``StepTimes``): a saving the step did not follow (imagenet's DataLoader set its pace) is
GPU time the program does not get back.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from rooflint.analysis import caller_moves as library_moves
from rooflint.analysis.program_fixes import fix_for
from rooflint.formats.results import ProgramFixResult, RunResult, VariantResult
from rooflint.judge.program_fixes import (NO_FIX, compile_estimate, fixes_of, function_claim,
                                          is_compiled, line_shares)

COMPILE = "torch.compile"


@dataclass(frozen=True)
class LineTimes:
    """A source line's GPU time before and after, in seconds."""

    line: str
    before_s: float
    after_s: float


@dataclass(frozen=True)
class FixComparison:
    """One fix predicted on the before side: its kernels' time before and what took their
    place after, the saving measured against the one predicted."""

    id: str
    action: str
    before_kernels: list[str]
    after_kernels: list[str]    # the same-id fix's, then those credited by line
    before_s: float
    after_s: float
    predicted_s: float
    lines: list[LineTimes]      # the fix's own lines, the most before-time first

    @property
    def measured_s(self) -> float:
        return self.before_s - self.after_s

    @property
    def ratio(self) -> float | None:
        """Measured over predicted saving; None where nothing was predicted."""
        return self.measured_s / self.predicted_s if self.predicted_s else None


@dataclass(frozen=True)
class ChangeCheck:
    """One change that makes several fixes at once (torch.compile), checked whole: the
    saving its fixes predicted against the one measured on them."""

    change: str
    fixes: list[str]
    predicted_s: float
    measured_s: float
    ratio: float | None


# A step that shortened by less than this share of the GPU time its region saved a step did
# not follow its GPU time: pytorch/examples' imagenet compiled saved 22.7 ms of GPU time a
# step and its steps went from 79.3 to 84.3 ms under the profiler (65 to 67 ms plain), its
# DataLoader's fake images setting their pace (H200).
STEP_FOLLOWS_GPU = 0.5


@dataclass(frozen=True)
class StepTimes:
    """A step's wall time in each region, under the profiler (the first step apart), the
    share of each region the GPU was busy, and the GPU time saved a step (the region's,
    over its steps): what a fix's saving did to the program's pace, as far as pass 1 saw."""

    before_s: float
    after_s: float
    before_busy: float
    after_busy: float
    gpu_saved_s: float

    @property
    def follows_gpu(self) -> bool:
        """Whether the step shortened by STEP_FOLLOWS_GPU of the GPU time saved a step or
        more (or no GPU time was saved)."""
        return self.gpu_saved_s <= 0 or \
            self.before_s - self.after_s >= STEP_FOLLOWS_GPU * self.gpu_saved_s


@dataclass(frozen=True)
class ProgramComparison:
    """Two profiles of a program compared: the region's GPU time, each predicted fix, the
    after time no fix took (``new_s``, from the after fixes ``new_from``), every source
    line's time, the most moved first, and the change that made several fixes, if any."""

    before_s: float
    after_s: float
    fixes: list[FixComparison]
    new_s: float
    new_from: list[str]
    lines: list[LineTimes]
    change: ChangeCheck | None = None
    unlike_steps: str | None = None     # why the regions are not the same work, where known
    steps: StepTimes | None = None      # a step's wall time in each, where both count steps


@dataclass(frozen=True)
class _Piece:
    """Part of an after kernel's time, launched from one line, not yet given to a fix."""

    kernel: str
    line: str
    time_s: float


def variants_of(result: RunResult) -> dict[str, VariantResult]:
    """A profile's kernels by name (a result's variant names are unique in a profile)."""
    return {v.name: v for f in result.families for v in f.variants if v.share}


def region_s(result: RunResult) -> float:
    """The region's GPU time, as the fixes' shares are of (judge/program_fixes.roll_up)."""
    return result.settings.gpu_time_s or sum(v.share.total_s for v in variants_of(result).values())


def is_profile(result: RunResult) -> bool:
    return bool(variants_of(result))


def fix_key(fix: ProgramFixResult) -> str:
    """A fix told apart as roll_up tells it: kernels no fix is for, by the reason why."""
    return fix.id + (fix.why if fix.id == NO_FIX else "")


def line_times(variants: list[VariantResult]) -> dict[str, float]:
    """The kernels' GPU time in seconds by the line that launched it (a kernel's time split
    over its origins by their launches, as the fixes' line shares are)."""
    return {line.line: line.share for line in line_shares(variants, 1.0)}


def kernels_time(variants: dict[str, VariantResult], names: list[str]) -> float:
    return sum(variants[n].share.total_s for n in names if n in variants)


def unclaimed_pieces(after: dict[str, VariantResult], fixes: list[ProgramFixResult],
                     before_keys: set[str]) -> list[_Piece]:
    """The after kernels of fixes the before side had no like of, split by line."""
    return [_Piece(name, line, time_s)
            for fix in fixes if fix_key(fix) not in before_keys
            for name in fix.kernels if name in after
            for line, time_s in line_times([after[name]]).items()]


def fused_fix(v: VariantResult) -> str | None:
    """The fix a compiled Triton kernel took the place of: the catalog's entry for the eager
    kernels of the operators its name says it fused; None for any other kernel."""
    if v.share is None or v.share.library != library_moves.INDUCTOR:
        return None
    fix = fix_for([v.share.kernel], [v.share.kernel], library_moves.OPERATOR, at_roof=False)
    return fix.id if fix else None


def compiled_credit(v: VariantResult, line: str, predicted: set[str]) -> str | None:
    """The predicted fix a compiled kernel's piece on ``line`` took the place of: the one
    that claims the line's function, else the one of what its name says it fused; None
    for any other kernel, or a fix the before side did not predict."""
    fused = fused_fix(v)
    if fused is None:
        return None
    claim = function_claim(line)
    found = claim.id if claim else fused
    return found if found in predicted else None


def compile_check(before: RunResult, after: RunResult, rows: list[FixComparison]
                  ) -> ChangeCheck | None:
    """The fixes torch.compile makes, checked together, where the after side is compiled
    and the before side is not: predicted as the before profile's summary predicts them
    (judge/program_fixes.compile_estimate), measured on their rows."""
    estimate = compile_estimate(before, fixes_of(before)) if is_compiled(after) else None
    if estimate is None:
        return None
    made = [r for r in rows if r.id in estimate.fixes]
    measured = sum(r.measured_s for r in made)
    return ChangeCheck(COMPILE, estimate.fixes, estimate.saving_s, measured,
                       measured / estimate.saving_s if estimate.saving_s else None)


def credited_lines(vanished: list[ProgramFixResult], before: dict[str, VariantResult]
                   ) -> dict[str, str]:
    """Each line of the fixes gone from the after profile -> the fix id that had the most
    before-time there: the one its new kernels are credited to."""
    best: dict[str, tuple[float, str]] = {}
    for fix in vanished:
        for line, time_s in line_times([before[n] for n in fix.kernels if n in before]).items():
            if time_s > best.get(line, (-1.0, ""))[0]:
                best[line] = (time_s, fix.id)
    return {line: fix_id for line, (_, fix_id) in best.items()}


def fix_row(fix: ProgramFixResult, before: dict[str, VariantResult],
            same: ProgramFixResult | None, credited: list[_Piece],
            after: dict[str, VariantResult]) -> FixComparison:
    """One predicted fix before and after: the same-id fix's kernels and the pieces credited
    to it by line."""
    before_lines = line_times([before[n] for n in fix.kernels if n in before])
    same_kernels = same.kernels if same else []
    after_lines = line_times([after[n] for n in same_kernels if n in after])
    for piece in credited:
        after_lines[piece.line] = after_lines.get(piece.line, 0.0) + piece.time_s
    lines = [LineTimes(line, before_lines.get(line, 0.0), after_lines.get(line, 0.0))
             for line in sorted(before_lines.keys() | after_lines.keys(),
                                key=lambda x: (-before_lines.get(x, 0.0), x))]
    extra = list(dict.fromkeys(p.kernel for p in credited if p.kernel not in same_kernels))
    return FixComparison(
        id=fix.id, action=fix.action or "", before_kernels=list(fix.kernels),
        after_kernels=[*same_kernels, *extra], before_s=kernels_time(before, fix.kernels),
        after_s=kernels_time(after, same_kernels) + sum(p.time_s for p in credited),
        predicted_s=fix.saving_s, lines=lines)


def program_lines(before: dict[str, VariantResult], after: dict[str, VariantResult]
                  ) -> list[LineTimes]:
    """Every source line's GPU time before and after, the most moved first."""
    was, now = line_times(list(before.values())), line_times(list(after.values()))
    rows = [LineTimes(line, was.get(line, 0.0), now.get(line, 0.0))
            for line in was.keys() | now.keys()]
    return sorted(rows, key=lambda r: (-abs(r.before_s - r.after_s), r.line))


def compare_fixes(before: RunResult, after: RunResult) -> ProgramComparison | None:
    """Two profiles compared fix by fix (the module's docstring); None unless both are
    profiles."""
    if not (is_profile(before) and is_profile(after)):
        return None
    was, now = variants_of(before), variants_of(after)
    before_fixes, after_fixes = fixes_of(before), fixes_of(after)
    predicted = [f for f in before_fixes if f.id != NO_FIX and f.kernels]
    after_by_id = {f.id: f for f in after_fixes if f.id != NO_FIX}
    credit = credited_lines([f for f in predicted if f.id not in after_by_id], was)
    predicted_ids = {f.id for f in predicted}
    pieces: dict[str | None, list[_Piece]] = defaultdict(list)
    for piece in unclaimed_pieces(now, after_fixes, {fix_key(f) for f in before_fixes}):
        pieces[compiled_credit(now[piece.kernel], piece.line, predicted_ids)
               or credit.get(piece.line)].append(piece)
    rows = [fix_row(f, was, after_by_id.get(f.id), pieces[f.id], now) for f in predicted]
    new_kernels = {p.kernel for p in pieces[None]}
    return ProgramComparison(
        before_s=region_s(before), after_s=region_s(after), fixes=rows,
        new_s=sum(p.time_s for p in pieces[None]),
        new_from=[f.id for f in after_fixes if new_kernels & set(f.kernels)],
        lines=program_lines(was, now), change=compile_check(before, after, rows),
        unlike_steps=unlike_steps(before, after), steps=step_times(before, after))


def unlike_steps(before: RunResult, after: RunResult) -> str | None:
    """Why the two regions hold different work, where both count their steps and the counts
    differ; None where they agree or either does not say."""
    counts = [r.program.steps.count if r.program and r.program.steps else None
              for r in (before, after)]
    if None in counts or counts[0] == counts[1]:
        return None
    ended = [" (ended there by --stop-after)" if r.program.stopped_at_step else ""
             for r in (before, after)]
    return (f"A's region holds {counts[0]} steps{ended[0]}, B's {counts[1]}{ended[1]}: not "
            f"the same work; profile both with the same --stop-after")


def step_times(before: RunResult, after: RunResult) -> StepTimes | None:
    """The two regions' steps (StepTimes), where both count the same steps, two or more,
    and timed them; None otherwise (unlike_steps says where the counts differ)."""
    programs = [r.program for r in (before, after)]
    if not all(p and p.steps and p.steps.count >= 2 and p.steps.step_s and p.wall_s
               for p in programs):
        return None
    b, a = programs
    if b.steps.count != a.steps.count:
        return None
    return StepTimes(b.steps.step_s, a.steps.step_s, b.busy_s / b.wall_s, a.busy_s / a.wall_s,
                     (region_s(before) - region_s(after)) / b.steps.count)
