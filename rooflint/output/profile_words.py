"""The words `rooflint profile` says of a program's kernels: what pass 1 found and pass 2
will profile, what was left out as benchmarking or not recorded, a warning on the memory
the program holds, where a stopped pass 2 leaves pass 1's times, and the words its result
keeps (why a kernel has no counters, why its times spread without noise); and those of
`rooflint import`'s result (which files, what they lacked). The decisions
behind them are judge/'s (kernel_choice, autotuning, launch_matching, time_spread) and
engine/program.py's; only the sentences are made here."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rooflint.common.units import counted, format_bytes, format_time
from rooflint.formats.ranks import RankInfo
from rooflint.formats.settings import Settings
from rooflint.formats.trace_events import CPU_ACTIVITY, RECORD_SHAPES, WITH_STACK, Unrecorded
from rooflint.judge.autotuning import XLA_AUTOTUNER, Autotuning
from rooflint.judge.kernel_choice import pass2_estimate_s
from rooflint.judge.kernel_choice import EarlyEnd
from rooflint.judge.kernel_names import short_name
from rooflint.judge.kernel_times import KernelTime
from rooflint.judge.launch_matching import Missed
from rooflint.judge.time_spread import Drift, Shapes


def pass1_words(command: Sequence[str]) -> str:
    """Said as pass 1 starts."""
    return f"pass 1: timing every kernel launch of {' '.join(command)}"


def plan_words(timer: str, wall_s: float, kernels: list[KernelTime], chosen: list[KernelTime],
               precisions: frozenset[str] | None,
               profiled: list[KernelTime] | None = None, skip: int = 0,
               on: Sequence[RankInfo] | None = None, ranks: int = 0, left: int = 0,
               shapes: int | None = None, early: EarlyEnd | None = None,
               stopped_at: int | None = None) -> str:
    """What pass 1 (timed by ``timer``, in ``wall_s``) found and what pass 2 will profile,
    said before pass 2 starts: ``profiled`` of the chosen kernels (all of them by default;
    the rest's counters come from the counter cache) at ``shapes`` launch shapes (one
    each where not given: kernel_choice.profiled_shapes), after the program's first
    ``skip`` launches, on the GPUs of the ranks ``on`` only, of the job's ``ranks``,
    ``left`` of the chosen kernels held by none of those; the program stopped ``early``
    (kernel_choice.early_end) or run to its end (or to the optimizer step pass 1's was
    ended at, ``stopped_at``: profile's --stop-after)."""
    profiled = chosen if profiled is None else profiled
    served = len(chosen) - len(profiled)
    covered = sum(k.total_s for k in chosen) / (sum(k.total_s for k in kernels) or 1.0)
    ended = f", {ended_words(stopped_at)}" if stopped_at else ""
    found = (f"pass 1 ({timer}): {counted(len(kernels), 'kernel')} in {wall_s:.1f} s{ended}; "
             f"pass 2: counters on {len(chosen)} of them ({covered:.0%} of GPU time")
    cached = (f"; {served} from the counter cache: PyTorch's own kernels at the launch shapes "
              f"and inputs an earlier profile measured, --no-counter-cache profiles them "
              f"again" if served else "")
    if served == len(chosen):
        return f"{found}{cached}): pass 2 is not run"
    after = f" after cuDNN's benchmark's trials (the first {skip:,} launches)" if skip else ""
    return (f"{found}{cached}; every launch shape of their functions{after}, as Nsight "
            f"Compute selects by name), the first launch of each"
            f"{profiled_ranks_words(on, ranks, left)}, tensor FLOPs in "
            f"{precisions_words(precisions)}: about "
            f"{pass2_estimate_s(len(early.functions) if early else shapes or len(profiled)):.0f}"
            f" s{_ending_words(early, stopped_at)}")


def ended_words(step: int) -> str:
    """How a program ended by profile's --stop-after is said: ``the program ended after 20
    optimizer steps (--stop-after)``."""
    return f"the program ended after {counted(step, 'optimizer step')} (--stop-after)"


def _ending_words(early: EarlyEnd | None, stopped_at: int | None) -> str:
    if early is None:
        return " and the rest of the program" + (" to that step" if stopped_at else "")
    return (f", then the program is stopped where it launches them as pass 1 saw, about "
            f"{early.under_ncu_s:.0f} s before its end under Nsight Compute ("
            f"{early.after_s:.1f} s in pass 1)")


def profiled_ranks_words(on: Sequence[RankInfo] | None, ranks: int, left: int = 0) -> str:
    """``, on rank 0's GPU only (the other rank runs the same kernels unprofiled)``, with
    the ``left`` chosen kernels only the others ran; nothing where every rank is profiled."""
    if not on:
        return ""
    gpus = (f"{on[0].label}'s GPU" if len(on) == 1
            else f"the GPUs of {', '.join(r.label for r in on[:-1])} and {on[-1].label}")
    one = ranks - len(on) == 1
    others = "the other rank runs" if one else f"the other {ranks - len(on)} ranks run"
    if left:
        go = "goes" if left == 1 else "go"
        return (f", on {gpus} only ({others} unprofiled, and {counted(left, 'chosen kernel')} "
                f"that ran only {'there' if one else 'on them'} {go} without counters)")
    theirs = "the same kernels" if len(on) == 1 else "kernels of theirs"
    return f", on {gpus} only ({others} {theirs} unprofiled)"


def precisions_words(precisions: frozenset[str] | None) -> str:
    """``bf16-tensor and tf32-tensor (what its operators' inputs name)``."""
    if precisions is None:
        return "every precision"
    if not precisions:
        return "no precision (no operator of theirs had a tensor-core dtype)"
    return f"{' and '.join(sorted(precisions))} (what their operators' inputs name)"


def autotuning_words(tuning: Autotuning) -> str:
    """What was left out as benchmarking, said with pass 1's findings."""
    return (f"left out: {counted(tuning.launches, 'launch', 'launches')} "
            f"({format_time(tuning.gpu_s)} of GPU time) of {autotuners_words(tuning.tuners)}"
            f": timing candidate kernels or clearing caches between timed runs, not the "
            f"program's work")


def autotuners_words(tuners: Sequence[str]) -> str:
    """``XLA's autotuner``, ``Triton's autotuner and Triton's do_bench flushing L2``; a
    result written before others were told apart left out XLA's alone."""
    names = list(tuners or (XLA_AUTOTUNER,))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def unrecorded_words(unrecorded: Sequence[Unrecorded]) -> str:
    """What pass 1 left unrecorded of the repeated calls (trace_events.Unrecorded), said as
    pass 1 ends and under the table."""
    parts = [f"{counted(u.calls, 'call')} of {u.by} past the first {u.recorded} of each run"
             for u in unrecorded]
    return (f"not recorded: {' and '.join(parts)}; their launches and GPU time are "
            f"counted from the recorded calls")


def nccl_log_not_read_words(variable: str) -> str:
    """Said once after pass 1 when the program ran NCCL's collectives under the user's own
    NCCL logging (``variable``, left as it is: measure/nccl_logs.py)."""
    return (f"pass 1: {variable} is the program's own, left as it is: NCCL's log of its calls "
            f"is not read, so its collectives' sizes are not known and they are not placed "
            f"on the interconnect's roof")


def held_memory_words(held_bytes: int, total_bytes: int) -> str:
    """The warning, said before pass 2, for a program that held ``held_bytes`` of its
    GPU's ``total_bytes``: too much for Nsight Compute's replay to fit beside it."""
    return (f"the program held {format_bytes(held_bytes)} of its GPU's "
            f"{format_bytes(total_bytes)}: "
            f"Nsight Compute saves and restores a program's device memory around every "
            f"profiled launch, and a copy that does not fit beside it goes through host "
            f"memory, so pass 2 may take many times its estimate (profile a smaller batch or "
            f"model, or fewer kernels with --top N)")


NO_COUNTERS = "no counters: not among pass 2's profiled launches"


def stopped_words(why: str) -> str:
    """A chosen kernel's message when pass 2 stopped (``why``) before its counters."""
    return f"no counters: {why}"


def missed_words(k: KernelTime, missed: Missed, by: str = "pass 2") -> str:
    """A chosen kernel's message when pass 2 (or a report, ``by``) has launches but none of
    it, from what it did see (launch_matching.missed)."""
    if missed.other_shapes:
        shapes = sorted({f"grid {grid}, block {block}" for grid, block in missed.other_shapes})
        return (f"no counters: {by} saw this kernel only at other launch shapes "
                f"({'; '.join(shapes[:3])}), not at grid {k.grid}, block {k.block}")
    if missed.twin:
        return (f"no counters: at grid {k.grid}, block {k.block} {by} profiled only "
                f"{short_name(missed.twin)}, a name rooflint does not read as this kernel's")
    return NO_COUNTERS if by == "pass 2" else f"no counters: not among {by}'s launches"


def imported_missed_words(k: KernelTime, missed: Missed) -> str:
    """`rooflint import`'s message for a kernel of the trace its report has no launch of."""
    return missed_words(k, missed, "the report")


def trace_alone_words() -> str:
    """`rooflint import`'s message for a kernel of a trace imported without a report."""
    return ("no counters: the trace came alone (rooflint import TRACE REPORT adds an Nsight "
            "Compute report's)")


def point_lacks_words(lacks: Sequence[str]) -> str:
    """`rooflint import`'s message for a kernel whose report lacks metrics its roofline
    point stands on (imported_report.point_lacks)."""
    flops = [m for m in lacks if "sass_thread_inst_executed" in m]
    named = [m for m in lacks if m not in flops] + (
        ["the FLOP counters (smsp__sass_thread_inst_executed_op_*_pred_on.sum)"] if flops else [])
    return (f"no counters: the report lacks {' and '.join(named)}, without which there is no "
            f"roofline point (profile it with ncu --set full)")


def imported_words(settings: Settings) -> str | None:
    """`rooflint import`'s line under the device's: the files, whose times, and what the
    trace was recorded without; None for a result not imported."""
    if not settings.imported:
        return None
    times = ("kernel times from the trace" if settings.pass1_timer == "torch" else
             "kernel times as Nsight Compute replayed each profiled launch")
    lacks = [f"{option} ({LACKING[option]})" for option in settings.trace_lacks or []]
    return (f"imported from {' and '.join(settings.imported)}; {times}"
            + (f"; the trace was recorded without {' and '.join(lacks)}" if lacks else ""))


MISSING_NAMED = 6     # metrics an imported report lacked, named in a line; then how many more


def names_words(names: Sequence[str]) -> str:
    """``a, b, c and 4 more``: the first MISSING_NAMED of some metrics' names."""
    more = len(names) - MISSING_NAMED
    return ", ".join(names[:MISSING_NAMED]) + (f" and {more} more" if more > 0 else "")


def missing_metrics_words(names: Sequence[str]) -> str:
    """A kernel's note: the metrics of rooflint's list its imported report lacked."""
    return (f"not in the report, so not judged: {', '.join(names)}")


# What a trace recorded without a torch.profiler option lacks (trace_events.recorded_without).
LACKING = {CPU_ACTIVITY: "no operators or source lines",
           RECORD_SHAPES: "no operator shapes or dtypes: every tensor precision's FLOPs are "
                          "wanted, casts are not told by their dtypes",
           WITH_STACK: "no source lines"}


def pass2_stopped_words(why: str, json_path: Path | None, json_to_stdout: bool,
                        svg: Path | None) -> str:
    """What a profile whose pass 2 stopped (``why``) says as it exits: where pass 1's
    kernel times are kept (the document on standard output, ``json_path``, else the
    table), and that ``svg`` is not drawn."""
    kept = ("the result document keeps" if json_to_stdout else
            f"{json_path} keeps" if json_path else "the table shows")
    return (f"{why}; {kept} pass 1's kernel times, without counters"
            + (f" (no roofline to draw in {svg})" if svg else ""))


def drift_note(drift: Drift) -> str:
    """Why a drifting kernel's times spread (time_spread.drifting): its TimeStats.varies,
    and a note of its result."""
    return (f"its launch times change in runs ({format_time(drift.stats.min_s)} to "
            f"{format_time(drift.slowest_s)}, {100 * drift.step:.1f}% from one launch to the "
            f"next): its work changes from call to call at one launch configuration (tensors "
            f"of several sizes, a sweep of sizes), not noise; its time is the median launch's, "
            f"its counters the profiled launch's own")


def shapes_note(shapes: Shapes) -> str:
    """Why a kernel running several shapes at one launch configuration has the time it
    has (time_spread.mixed_shapes): a note of its result."""
    medians = ", ".join(format_time(s.median_s) for s in shapes.stats)
    launches = sum(s.n for s in shapes.stats)
    return (f"{len(shapes.stats)} shapes at one launch configuration (a persistent kernel; "
            f"medians {medians}): its times spread by shape, not noise; its time is the most "
            f"frequent shape's ({shapes.time.n} of {launches} launches), its share counts "
            f"them all, its counters are the profiled launch's own")
