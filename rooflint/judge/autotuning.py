"""The launches autotuners and benchmarks made, told from a program's own: XLA's by its
kernels and the redzone checks that follow its trials, Triton's and TorchInductor's by
the trace's ranges (formats/trace_events.py names them), cuDNN's benchmark by its
convolutions' kernels launched fewer times than the program ran steps. They are left out
of a program's kernels: benchmarking, not the program's work."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, TypeVar

from rooflint.formats.ncu_log import DURATION, KERNEL_NAME as NAME, STREAM
from rooflint.formats.trace_events import Launch
from rooflint.judge.kernel_names import name_key
from rooflint.judge.kernel_times import Identity

# XLA's autotuner (JAX's and TensorFlow's compiler) times candidate kernels while the program
# compiles: stream_executor checks each trial's buffers for overruns with its redzone kernel
# right after it on the same stream, compares the trials' outputs and holds the stream with
# a delay kernel while it times them. Those launches are compile-time work, not the
# program's: in a short program they took more GPU time than its steps (a JAX MLP, 2,986
# launches, 871 of them after the autotuner's last).
# Its kernels by name, with the namespace (PyTorch's profiler) or without (ncu's CSV).
AUTOTUNER_KERNEL = re.compile(r"stream_executor::gpu::|RedzoneAllocatorKernel|xla_fp_comparison"
                              r"|DelayKernel\(.*GpuSemaphoreState|RepeatBufferKernel")
REDZONE_CHECK = "RedzoneAllocatorKernel"
# The name a result records for the launches XLA's autotuner made (Settings.autotuners).
XLA_AUTOTUNER = "XLA's autotuner"


def autotuning(names_and_streams: list[tuple[str, str]]) -> list[bool]:
    """For each launch, in launch order, whether XLA's autotuner made it: one of its own
    kernels, or a trial, the launch its redzone check follows on the same stream."""
    made = [bool(AUTOTUNER_KERNEL.search(name)) for name, _ in names_and_streams]
    following: dict[str, int] = {}            # stream -> the launch before, on it
    for i, (name, stream) in enumerate(names_and_streams):
        if REDZONE_CHECK in name and stream in following:
            made[following[stream]] = True
        following[stream] = i
    return made


@dataclass(frozen=True)
class Autotuning:
    """The launches autotuners made (XLA's, Triton's, TorchInductor's) and a benchmark's
    cache flushes (Triton's do_bench), left out of a program's kernels: benchmarking, not
    the program's work."""

    launches: int = 0
    gpu_s: float = 0.0
    tuners: tuple[str, ...] = ()               # whose, first seen first: "XLA's autotuner"


L = TypeVar("L")


def without_autotuning(launches: list[L], name_and_stream: Callable[[L], tuple[str, str]],
                       seconds: Callable[[L], float],
                       tuner: Callable[[L], str | None] = lambda x: None
                       ) -> tuple[list[L], Autotuning]:
    """``launches`` (a trace's Launches or ncu's rows, in launch order) less those an
    autotuner made (XLA's by its kernels; another by ``tuner``: the trace's ranges say
    which launches its benchmarking made), and what those were."""
    xla = autotuning([name_and_stream(x) for x in launches])
    made = [XLA_AUTOTUNER if m else tuner(x) for x, m in zip(launches, xla)]
    tuned = [x for x, m in zip(launches, made) if m]
    return ([x for x, m in zip(launches, made) if not m],
            Autotuning(len(tuned), sum(seconds(x) for x in tuned),
                       tuple(dict.fromkeys(m for m in made if m))))


# cuDNN's benchmark (``torch.backends.cudnn.benchmark``) times every algorithm for a new
# convolution shape at its first call, inside the convolution's own operator, with no range
# of the program's around it: each trial kernel runs once or a few times in the warm-up,
# where each kernel the program keeps runs at least once a step (a ResNet-50's training
# step, H200: 73 of 196 profiled kernels, 13 % of the GPU time, were such trials). Told by
# its operators, in a trace of enough steps to tell once from every step. A candidate it
# times more often than the region has steps is told by when it ran: only before the
# second step began (the same ResNet-50 in 13 steps: six candidates launched 14 to 44
# times, all in the first step, had been chosen as the program's kernels).
CONVOLUTION_OPERATOR = re.compile(r"convolution|cudnn_conv")
CUDNN_BENCHMARK = "cuDNN's benchmark (cudnn.benchmark)"
FEWEST_STEPS = 3


def benchmark_trials(launches: list[Launch], steps: int | None,
                     steady_from_us: float | None = None) -> list[Launch]:
    """``launches`` with the trials of cuDNN's benchmark marked as its (``autotuner``): a
    convolution operator's kernel, by name and grid, launched fewer times than the region
    ran ``steps``, or only before ``steady_from_us`` (when the second step began); none
    marked in a region of fewer than FEWEST_STEPS steps."""
    if not steps or steps < FEWEST_STEPS:
        return launches
    convolving = [x for x in launches if x.operator and CONVOLUTION_OPERATOR.search(x.operator)]
    counts = Counter((x.name, x.grid) for x in convolving)
    last = {}
    for x in convolving:
        last[x.name, x.grid] = max(last.get((x.name, x.grid), x.start_us), x.start_us)
    trials = {key for key, n in counts.items() if n < steps
              or steady_from_us is not None and last[key] < steady_from_us}
    return [replace(x, autotuner=CUDNN_BENCHMARK) if x.autotuner is None and x.operator
            and CONVOLUTION_OPERATOR.search(x.operator) and (x.name, x.grid) in trials else x
            for x in launches]


def trace_without_autotuning(launches: list[Launch], steps: int | None = None,
                             steady_from_us: float | None = None
                             ) -> tuple[list[Launch], Autotuning]:
    """A trace's launches less the autotuners' (and cuDNN's benchmark's, given the number
    of steps the region ran and when its second began)."""
    return without_autotuning(benchmark_trials(launches, steps, steady_from_us),
                              lambda x: (x.name, x.stream),
                              lambda x: x.duration_s, lambda x: x.autotuner)


def rows_without_autotuning(rows: list[dict]) -> tuple[list[dict], Autotuning]:
    return without_autotuning(rows, lambda r: (str(r[NAME]), str(r.get(STREAM, ""))),
                              lambda r: float(r[DURATION]) * 1e-9)


# Launches each chosen kernel must still make after the launches pass 2 skips: two runs of
# one program need not launch in one order.
LAUNCHES_AFTER_SKIP = 2


def launches_to_skip(launches: list[Launch], chosen: set[Identity]) -> int:
    """How many of the program's first launches pass 2 can leave out (Nsight Compute's
    ``--launch-skip-before-match`` counts every launch, whatever its name): those up to
    the latest trial of cuDNN's benchmark after which every ``chosen`` kernel still
    launches (_still_launches); else none. Pass 2 selects kernels by name, so the trials
    of a chosen kernel's function are otherwise profiled too, one launch each (a
    ResNet-50's training step, H200: 62 of pass 2's launch shapes, about 18 s). A last,
    smaller batch brings the benchmark back at the program's end, for shapes of its own
    (DCGAN's): the skip then ends at the first step's trials, not at those.

    ``launches`` are pass 1's, in launch order, trials marked (benchmark_trials). The
    other autotuners' trials before the skip's end are not counted: pass 2 may not run them
    again (Triton's autotuner reads what it chose from its cache), and to skip fewer
    launches is only to profile more. A launch pass 1 did not record (a paused region)
    makes the count smaller, as safely. None under a CUDA graph, whose launches Nsight
    Compute may count otherwise."""
    trials = [i for i, x in enumerate(launches) if x.autotuner == CUDNN_BENCHMARK]
    if not trials or any(x.graph for x in launches):
        return 0
    at: dict[Identity, list[int]] = {}
    for i, x in enumerate(launches):
        at.setdefault((name_key(x.name), x.grid, x.block), []).append(i)
    # Whether every chosen kernel still launches after a trial holds for every earlier one
    # too: the latest such trial is found by bisection over them.
    kept = bisect_left(trials, True, key=lambda last: not all(
        _still_launches(at.get(identity, []), last) for identity in chosen))
    if kept == 0:
        return 0
    last = trials[kept - 1]
    others = sum(x.autotuner is not None and x.autotuner != CUDNN_BENCHMARK
                 for x in launches[:last + 1])
    return last + 1 - others


def _still_launches(indices: list[int], last: int) -> bool:
    """Whether a kernel launched at ``indices`` is still profiled by a pass 2 that skips
    the launches up to ``last``, however the two runs' launches shift: it launches
    LAUNCHES_AFTER_SKIP times after them, or once further after them than the skip is
    long (a last batch's kernels, launched once at the program's end: a shift between two
    runs is a part of the warm-up they share)."""
    after = len(indices) - bisect_right(indices, last)
    return after >= LAUNCHES_AFTER_SKIP or (after > 0 and indices[-1] - last > last + 1)
