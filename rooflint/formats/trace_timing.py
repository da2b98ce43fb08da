"""The program's time from PyTorch's profiler trace (pass 1 of `rooflint profile`): how much
of the profiled region's wall time the GPU computed, what the host was doing while it sat
idle, and the steps the region repeated (issue 47, item 1).

A program can be slow with every kernel at its roof: the GPU waits on the host. The trace
holds both sides on one clock: the kernels on each stream (CUPTI), and the host's CUDA
calls and ranges. The region runs from the first GPU activity to the last (the program's
start-up before them is not the profiled work), and where the region repeats steps, the
time is taken over the steps after the first (the first pays for warm-up, the region
before it for the model's upload); the GPU is busy where a kernel runs on any stream.
Copies and memsets are counted apart: the GPU moves data then, computes nothing, and the
fix is another one (pinned memory, fewer transfers). Each other idle gap
is named by what the host did around it:

- synchronisation: the host waited on the GPU (cudaDeviceSynchronize,
  cudaStreamSynchronize, a blocking cudaMemcpy, ``.item()``) into the gap: as much of the
  gap as the host had waited before it began, which it would otherwise have spent running
  ahead (at most the gap). The rest of such a gap is the host's own work after the wait
  (a host-bound step's: DCGAN's 45 ms a step behind each step's ``.item()``, on fake data),
  named as any other gap's;
- launch-bound: the kernel after the gap was launched after the gap began, by a host that
  had launched another one just before (LAUNCH_PAUSE_S): the GPU waited on the launches
  themselves (CUDA graphs, fewer and larger kernels);
- other: the host did something else (Python, data loading, allocations), or the next
  kernel was queued already and waited on something the trace does not name.

Pure: a parsed document in, numbers out.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, replace
from statistics import fmean
from typing import Any, Iterable

from rooflint.common.sense import Amount, Count, Size
from rooflint.formats.trace_events import (AUTOTUNING_RANGE, CALL_TIME, COLLECTIVE,
                                          OPTIMIZER_STEP, stopped_at_step)

Span = tuple[float, float]             # start and end, in the trace's microseconds

COPIES = ("gpu_memcpy", "gpu_memset")
LAUNCHES = re.compile(r"^(cuda|cu)LaunchKernel|^cudaLaunchCooperativeKernel|^cudaGraphLaunch")
# the host calls that wait on the GPU: every synchronisation, a blocking copy, and the
# operators behind ``.item()`` (a device-to-host copy, then a stream synchronisation)
SYNC_CALL = re.compile(r"Synchronize|^cudaMemcpy(2D|3D)?$|^cuMemcpyDtoH")
SYNC_OPERATORS = ("aten::item", "aten::_local_scalar_dense")
# a launch call within this of the one before is the host launching back to back: a
# PyTorch operator's dispatch between two launches takes about 10-30 us; a host that
# paused longer was doing something else
LAUNCH_PAUSE_S = 100e-6
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")
ROOFLINT_RANGE = "rooflint."         # the bootstrap's own ranges (lines, autotuning, runs)
# PyTorch's ranges around a process group's collectives ("nccl:all_reduce"): a DDP step
# holds one per gradient bucket (62 in a 13-step job on two H200s), so the most repeated
# top-level range, never a step
COLLECTIVE_RANGE = re.compile(r"^(nccl|gloo|mpi|ucc|xccl):")
# The argument PyTorch's profiler gives an operator autograd records, forward or backward:
# a step's first and last such operators bound its forward and backward passes (the
# optimizer, clipping and zeroing run under no_grad, unnumbered)
SEQUENCE_NUMBER = "Sequence number"
# PyTorch's range around each batch a DataLoader yields ("enumerate(DataLoader)#_Single
# ProcessDataLoaderIter.__next__"): a micro-batch's work, not the step's
DATA_LOADER = re.compile(r"^enumerate\(DataLoader\)#")


@dataclass
class IdleTime:
    """The region's time with no kernel running, by what the host was doing then."""

    sync_s: Amount = 0.0        # the host waited on the GPU
    launch_s: Amount = 0.0      # the GPU waited on the host's launches
    copy_s: Amount = 0.0        # only copies and memsets ran
    other_s: Amount = 0.0       # anything else

    @property
    def total_s(self) -> float:
        return self.sync_s + self.launch_s + self.copy_s + self.other_s


@dataclass
class Steps:
    """The steps the region repeated (ProfilerStep#N, else its repeated top-level range):
    the first apart, as it pays for warm-up (allocations, cuDNN's benchmark, compilation)."""

    count: Size                 # every step found, the first one included
    step_s: Amount              # the mean of the steps after the first
    warmup_s: Amount            # the first step, with whatever the region ran before it


@dataclass
class Communication:
    """A rank's collectives (NCCL's kernels) over the profiled region, the mean of its ranks:
    their GPU time, and the part of it no other kernel of the rank ran beside (exposed: the
    rank's GPU did nothing but wait on its peers and the interconnect). A collective that
    compute overlaps costs the step nothing; an exposed one is what overlapping saves (HTA's
    computation-communication overlap, from the other side)."""

    collective_s: Amount
    exposed_s: Amount
    ranks: Size                 # the processes and GPUs whose kernels the trace holds
    # A step's, over the steps after the first (its warm-up: DDP's first all-reduce waits
    # for every rank's start-up, 109 ms of a ten-step job's 193 ms of exposed time on two
    # H200s); the mean of the ranks. Steps are the region's (ProfilerStep#N, a repeated
    # range), or where the trace has no host ranges (CUPTI's records of a launcher's ranks)
    # each rank's own from its kernels (kernel_steps); 0 where none are found.
    steps: Count = 0
    step_collective_s: Amount = 0.0
    step_exposed_s: Amount = 0.0
    # the rank's other kernels over the same steps, a step's (their durations summed, as a
    # profile's GPU time is): what tells a rank slow by its own work from one late by its host
    step_kernels_s: Amount = 0.0
    # The exposed time of the rank that waits least, over the region and a step: the last
    # rank to arrive waits only for the transfer, so its exposed time is the interconnect's
    # on the job's critical path (where the ranks take turns being late, its own waits too),
    # and the others' beyond it is their wait for that rank
    # (what a communication fix can save: judge/program_fixes.py). One rank's trace: its
    # own; a rank's document of a job's profile holds the job's (engine/program.py).
    least_exposed_s: Amount = 0.0
    step_least_exposed_s: Amount = 0.0
    # The collectives' time at their calls' own time (each call the shortest of its ranks'
    # kernels, trace_events.CALL_TIME, where the job's ranks marked it; else as they ran),
    # the mean of the ranks: their part of the GPU time a profile's kernels share.
    calls_s: Amount = 0.0
    # The host's time a step outside its forward and backward passes on the rank that waits
    # least (once_a_step), over its steps after the first: the optimizer's step, clipping,
    # zeroing, the step's synchronisations and logging, done once a step whatever its
    # micro-batches (what accumulating gradients spreads over several; a host-bound FSDP2
    # job on two H200s: 10.8 ms of a 48.6 ms step under the profiler); 0 where the trace has no
    # host operators (CUPTI's records) or no steps.
    step_host_once_s: Amount = 0.0

    @property
    def counted_s(self) -> float:
        """The collectives' part of the GPU time a profile's kernels share, a rank's: at
        their calls' own time; as they ran in a document written before that was kept."""
        return self.calls_s or self.collective_s

    @property
    def overlapped(self) -> float:
        """The share of the collectives' time that other kernels ran beside: in a step
        after the first where steps are known, else over the whole region."""
        collective, exposed = ((self.step_collective_s, self.step_exposed_s) if self.steps
                               else (self.collective_s, self.exposed_s))
        return 1.0 - exposed / collective if collective else 1.0


@dataclass
class ProgramTiming:
    """The wall time of the profiled region (of its steps after the first, where it has
    steps), the GPU's busy time in it, the idle rest by cause."""

    wall_s: Amount
    busy_s: Amount
    idle: IdleTime = field(default_factory=IdleTime)
    steps: Steps | None = None
    # The whole region's (as a profile's GPU time and savings are), where it ran collectives.
    communication: Communication | None = None
    # The optimizer step the program was ended at (profile's --stop-after): the region is its
    # first steps, not the whole program; None where it ran to its end.
    stopped_at_step: Count | None = None


@dataclass
class _Region:
    """A trace's busy spans (merged), the region they make and its steps: those of its
    first process, each process's own apart (a launcher's ranks, each with its ranges)."""

    events: list[dict]
    kernels: list[Span]
    copies: list[Span]
    region: Span
    steps: list[Span]
    process_steps: dict[Any, list[Span]]
    processes: dict[Any, list[dict]]          # each process's events (_by_process)

    @classmethod
    def of(cls, trace: dict[str, Any]) -> _Region | None:
        events = _timed_events(trace)
        kernel_spans, copy_spans = [], []
        for e in events:
            category = e.get("cat")
            if category == "kernel":
                kernel_spans.append(_span(e))
            elif category in COPIES:
                copy_spans.append(_span(e))
        kernels = union(kernel_spans)
        if not kernels:
            return None
        copies = union(copy_spans)
        whole = union([*kernels, *copies])
        region = (whole[0][0], whole[-1][1])
        processes = _by_process(events)
        steps = {process: step_spans(mine, region) for process, mine in processes.items()}
        return cls(events, kernels, copies, region, next(iter(steps.values())), steps,
                   processes)


def _by_process(events: list[dict]) -> dict[Any, list[dict]]:
    """The events of each process a merged trace holds (formats/ranks.merged marks each
    with its process), in the order they first occur; one trace's under None."""
    processes: dict[Any, list[dict]] = {}
    for event in events:
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        processes.setdefault(args.get("process"), []).append(event)
    return processes or {None: []}


def program_timing(trace: dict[str, Any]) -> ProgramTiming | None:
    """The program's time in ``trace``; None where it holds no timed kernel (Nsight
    Compute's launches carry no timestamps, and a trace with no kernel has no region)."""
    return timing_and_second_step(trace)[0]


def timing_and_second_step(trace: dict[str, Any]) -> tuple[ProgramTiming | None, float | None]:
    """program_timing, and when the region's second step began in the trace's microseconds
    (what ran only before it is warm-up: autotuning.benchmark_trials; None with fewer than
    two steps), from one reading of the trace."""
    found = _Region.of(trace)
    if found is None:
        return None, None
    second = found.steps[1][0] if len(found.steps) >= 2 else None
    return replace(_timing(found), stopped_at_step=stopped_at_step(trace)), second


def _timing(found: _Region) -> ProgramTiming:
    """The wall, busy and idle time of a region with kernels, over its steps after the first."""
    events, kernels, copies, region, spans = (found.events, found.kernels, found.copies,
                                              found.region, found.steps)
    measured = _after_warmup(spans) or region
    host = _Host.of(events)
    idle = IdleTime()
    for gap in gaps(_within(kernels, measured), measured):
        _add_gap(idle, gap, copies, host)
    return ProgramTiming(wall_s=(measured[1] - measured[0]) * 1e-6,
                         busy_s=overlap(kernels, measured) * 1e-6, idle=idle,
                         steps=_steps_of([end - start for start, end in spans]) if spans else None,
                         communication=communication(events, found.process_steps,
                                                     found.processes))


def communication(events: list[dict], steps: dict[Any, list[Span]] | None = None,
                  processes: dict[Any, list[dict]] | None = None) -> Communication | None:
    """The collectives' time and its exposed part (Communication), each rank's kernels
    apart: a rank is a process (CUPTI's records and merged traces name it) on a GPU; per
    step over its process's ``steps`` after the first (step_spans), else the rank's
    kernel_steps, and the host's time once a step of the rank that waits least from its
    process's events (``processes``: _by_process's, read again where not given); None where
    no collective ran."""
    ranks: dict[tuple[Any, Any], list[dict]] = {}
    for event in events:
        if event.get("cat") == "kernel":
            args = event.get("args") if isinstance(event.get("args"), dict) else {}
            ranks.setdefault((args.get("process"), args.get("device")), []).append(event)
    steps = steps or {}
    found = [_rank_communication(sorted(kernels, key=lambda e: e["ts"]), steps.get(process, []))
             for (process, _), kernels in ranks.items()]
    if not any(whole[0] for whole, _, _ in found):
        return None
    calls = sum(float((e.get("args") or {}).get(CALL_TIME, e.get("dur", 0.0)))
                for mine in ranks.values() for e in mine if COLLECTIVE.search(e["name"]))
    stepped = [(count, steady) for _, count, steady in found if count >= 2]
    n = len(found)
    every = len(stepped) == n
    least = min(range(n), key=lambda i: found[i][2][1] / (found[i][1] - 1)) if every else None
    if least is not None:
        process = list(ranks)[least][0]
        host_once = once_a_step((processes or _by_process(events)).get(process, []),
                                steps.get(process, []))
    return Communication(
        collective_s=sum(whole[0] for whole, _, _ in found) * 1e-6 / n,
        exposed_s=sum(whole[1] for whole, _, _ in found) * 1e-6 / n, ranks=n,
        steps=round(fmean(count for count, _ in stepped)) if every else 0,
        step_collective_s=_per_step(stepped, 0) if every else 0.0,
        step_exposed_s=_per_step(stepped, 1) if every else 0.0,
        step_kernels_s=_per_step(stepped, 2) if every else 0.0,
        least_exposed_s=min(whole[1] for whole, _, _ in found) * 1e-6,
        calls_s=calls * 1e-6 / n,
        step_least_exposed_s=found[least][2][1] / (found[least][1] - 1) * 1e-6
        if least is not None else 0.0,
        step_host_once_s=host_once * 1e-6 if least is not None else 0.0)


def once_a_step(events: list[dict], steps: list[Span]) -> float:
    """A process's host time a step outside its forward and backward passes, in
    microseconds, the mean of its steps after the first that hold both: the step less the
    span from its first operator autograd numbered (SEQUENCE_NUMBER: the forward's first)
    to the end of its last (the backward's), less its DataLoader's batches outside that
    span; 0 where no step after the first holds a numbered operator."""
    numbered = sorted(_span(e) for e in events if e.get("cat") == "cpu_op"
                      and SEQUENCE_NUMBER in (e.get("args") or {}))
    loading = union(_span(e) for e in events if e.get("cat") == "user_annotation"
                    and DATA_LOADER.match(e["name"]))
    starts = [start for start, _ in numbered]
    once = []
    for step in steps[1:]:
        inside = numbered[bisect_left(starts, step[0]):bisect_left(starts, step[1])]
        if not inside:
            continue
        passes = (inside[0][0], min(max(end for _, end in inside), step[1]))
        outside = (step[1] - step[0]) - (passes[1] - passes[0])
        once.append(max(outside - overlap(loading, step) + overlap(loading, passes), 0.0))
    return fmean(once) if once else 0.0


def _rank_communication(kernels: list[dict], steps: Iterable[Span]
                        ) -> tuple[tuple[float, float], int, tuple[float, float, float]]:
    """One rank's collective and exposed microseconds over the region, its steps' count
    (the region's, else its kernels'), and over its steps after the first the two with its
    other kernels' summed time."""
    named = [(e, bool(COLLECTIVE.search(e["name"]))) for e in kernels]
    collectives = union(_span(e) for e, collective in named if collective)
    others = union(_span(e) for e, collective in named if not collective)
    mine = list(steps) or kernel_steps(kernels)
    steady = _after_warmup(mine)
    if steady is None:
        return _collective_and_exposed(collectives, others, None), len(mine), (0.0, 0.0, 0.0)
    own = sum(float(e.get("dur", 0.0)) for e, collective in named
              if not collective and steady[0] <= e["ts"] < steady[1])
    return (_collective_and_exposed(collectives, others, None), len(mine),
            (*_collective_and_exposed(collectives, others, steady), own))


def _collective_and_exposed(collectives: list[Span], others: list[Span], within: Span | None
                            ) -> tuple[float, float]:
    """The collectives' time (within a span, or all of it) and the part of it no other
    kernel ran beside."""
    spans = _within(collectives, within) if within else collectives
    total = sum(end - start for start, end in spans)
    return total, total - sum(overlap(others, span) for span in spans)


def _per_step(stepped: list[tuple[int, tuple[float, float, float]]], which: int) -> float:
    """The ranks' mean of one of their steady (collective, exposed, other kernels') times,
    a step's share."""
    return fmean(steady[which] / (count - 1) for count, steady in stepped) * 1e-6


def kernel_steps(kernels: list[dict]) -> list[Span]:
    """A rank's steps from its kernels alone (a trace without host ranges): a training step
    launches the same kernels in the same order every time, so a kernel that runs once a
    step recurs every P launches (after the first, which warm-up may lengthen). The steps
    end where the kernel of that kind recurring most often and ending the latest ends (the
    step's last: the optimizer's), the first beginning with the rank's first kernel; none
    where no kernel recurs four times or more at one period (after its first) of two
    launches or more.
    A DDP job's ranks on two H200s: 13 steps of 339 launches (3 warm-up, 10 timed)."""
    where: dict[str, list[int]] = {}
    for i, kernel in enumerate(kernels):
        where.setdefault(kernel["name"], []).append(i)
    regular = [at for at in where.values() if len(at) >= 4
               and len({b - a for a, b in zip(at[1:], at[2:])}) == 1 and at[2] - at[1] >= 2]
    if not regular:
        return []
    marks = max(regular, key=lambda at: (len(at), at[-1]))
    ends = [kernels[0]["ts"], *(_span(kernels[i])[1] for i in marks)]
    return list(zip(ends, ends[1:]))


def _after_warmup(spans: list[Span]) -> Span | None:
    """The steps after the first, whole: where the program's steady work is timed. The
    first step holds the warm-up (cuDNN's benchmark, compilation, autotuning) and the
    region before it the model's upload, which would otherwise swamp the busy share."""
    return (spans[1][0], spans[-1][1]) if len(spans) >= 2 else None


def _within(spans: list[Span], region: Span) -> list[Span]:
    """The merged ``spans`` cut to ``region``."""
    return [(max(start, region[0]), min(end, region[1])) for start, end in spans
            if end > region[0] and start < region[1]]


def union(spans: Iterable[Span]) -> list[Span]:
    """Overlapping or touching spans merged, in order: kernels on several streams at once
    are one busy time."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def gaps(busy: list[Span], region: Span) -> list[Span]:
    """The parts of ``region`` that the merged spans ``busy`` leave uncovered."""
    edges = [region[0], *(t for span in busy for t in span), region[1]]
    return [(a, b) for a, b in zip(edges[::2], edges[1::2]) if b > a]


def overlap(spans: list[Span], within: Span) -> float:
    """How long the merged spans ``spans`` (disjoint, in order: union's) cover of
    ``within``: only those from the last to start before it are read, so the idle gaps of a
    trace (20,000 in a ResNet-50's 13 steps) cost their own spans, not every span each."""
    covered, i = 0.0, max(0, bisect_right(spans, (within[0], within[0])) - 1)
    while i < len(spans) and spans[i][0] < within[1]:
        start, end = spans[i]
        covered += max(0.0, min(end, within[1]) - max(start, within[0]))
        i += 1
    return covered


def _add_gap(idle: IdleTime, gap: Span, copies: list[Span], host: _Host) -> None:
    """Count one idle gap (microseconds) into ``idle``: its copies apart, the rest by cause."""
    copying = overlap(copies, gap)
    rest = (gap[1] - gap[0] - copying) * 1e-6
    idle.copy_s += copying * 1e-6
    waited = min(rest, host.waited_into(gap) * 1e-6)
    idle.sync_s += waited
    if host.launching_into(gap):
        idle.launch_s += rest - waited
    else:
        idle.other_s += rest - waited


@dataclass
class _Host:
    """The host's calls that name an idle gap: its synchronisations, and its launches with
    the start of the kernel each launched, in the order they were called."""

    syncs: list[Span]
    launch_starts: list[float]            # the host's launch calls, in time order
    kernel_launched_at: dict[float, float]  # a kernel's start -> its launch call's

    @classmethod
    def of(cls, events: list[dict]) -> _Host:
        syncs, calls, kernels = [], {}, []
        for e in events:                  # one reading: its calls, syncs and kernels
            if _synchronises(e):
                syncs.append(_span(e))
            category = e.get("cat")
            if category in ("cuda_runtime", "cuda_driver") and LAUNCHES.match(e["name"]) \
                    and isinstance(e.get("args"), dict) and "correlation" in e["args"]:
                calls[e["args"]["correlation"]] = e
            elif category == "kernel":
                kernels.append(e)
        launched = {e["ts"]: calls[c]["ts"] for e in kernels
                    for c in [(e.get("args") or {}).get("correlation")] if c in calls}
        return cls(union(syncs), sorted(e["ts"] for e in calls.values()), launched)

    def waited_into(self, gap: Span) -> float:
        """How long the host had waited on the GPU when ``gap`` began, in a wait that lasted
        into it (microseconds; 0 where it waited in none): the time it would otherwise have
        spent running ahead, queueing what the gap waits for."""
        at = bisect_right(self.syncs, (gap[0], float("inf"))) - 1
        if at < 0 or self.syncs[at][1] <= gap[0]:
            return 0.0
        return gap[0] - self.syncs[at][0]

    def launching_into(self, gap: Span) -> bool:
        """Whether the kernel after ``gap`` was launched during it, by a host that had
        launched another kernel just before: the GPU waited on back-to-back launches."""
        launched = self.kernel_launched_at.get(gap[1])
        if launched is None or launched < gap[0]:
            return False
        before = bisect_left(self.launch_starts, launched)
        return before > 0 and (launched - self.launch_starts[before - 1]) * 1e-6 <= LAUNCH_PAUSE_S


def step_spans(events: list[dict], region: Span) -> list[Span]:
    """The region's steps, in order: PyTorch's ProfilerStep#N ranges (each a whole step),
    else its optimizer's steps (OPTIMIZER_STEP: once a training step, however many micro-steps
    and evaluations' forward passes it holds), else the repeated top-level
    range that launches kernels each time (a range of the program's; not one of
    TorchInductor's compile-time ranges, which repeat through a compiled program's warm-up
    and launch nothing but the autotuner's trials, left out, nor a collective's:
    COLLECTIVE_RANGE), where each step ends as one of its occurrences ends and the first
    begins with the region; none where fewer than two steps are found."""
    ranges = [e for e in events if e.get("cat") in ("user_annotation", "cpu_op")
              and not e["name"].startswith(ROOFLINT_RANGE)
              and not COLLECTIVE_RANGE.match(e["name"])]
    profiler = sorted(_span(e) for e in ranges if PROFILER_STEP.match(e["name"]))
    if len(profiler) >= 2:
        return profiler
    launching = _programs_launches(events)
    candidates = [e for e in ranges if e.get("cat") == "user_annotation"
                  and _holds_any(_span(e), launching)]
    optimizer = [_span(e) for e in candidates if e["name"].startswith(OPTIMIZER_STEP)]
    marks = optimizer if len(optimizer) >= 2 else _repeated_top_level(candidates)
    # an occurrence that ended before the GPU's first work closed no step of the region
    ends = [region[0], *sorted(end for _, end in marks if end > region[0])]
    return list(zip(ends, ends[1:])) if len(ends) >= 3 else []


def _programs_launches(events: list[dict]) -> list[float]:
    """The host's kernel launch calls outside the autotuners' ranges, in time order."""
    trials, launches = [], []
    for e in events:
        category = e.get("cat")
        if category == "user_annotation" and e["name"].startswith(AUTOTUNING_RANGE):
            trials.append(_span(e))
        elif category in ("cuda_runtime", "cuda_driver") and LAUNCHES.match(e["name"]):
            launches.append(e["ts"])
    tuning = union(trials)
    starts = [start for start, _ in tuning]
    return sorted(t for t in launches if not _in_spans(t, starts, tuning))


def _in_spans(moment: float, starts: list[float], spans: list[Span]) -> bool:
    """Whether ``moment`` falls in one of ``spans`` (disjoint, in order; ``starts`` theirs)."""
    i = bisect_right(starts, moment) - 1
    return i >= 0 and moment <= spans[i][1]


def _holds_any(span: Span, moments: list[float]) -> bool:
    """Whether one of ``moments`` (in order) falls within ``span``."""
    i = bisect_left(moments, span[0])
    return i < len(moments) and moments[i] <= span[1]


def _steps_of(durations_us: list[float]) -> Steps:
    return Steps(count=len(durations_us), step_s=fmean(durations_us[1:]) * 1e-6,
                 warmup_s=durations_us[0] * 1e-6)


def _repeated_top_level(ranges: list[dict]) -> list[Span]:
    """The occurrences of the range name that repeats most among those whose first
    occurrence no other repeated range holds (ties: the first to occur); none where no
    name repeats."""
    spans: dict[str, list[Span]] = {}
    for e in sorted(ranges, key=lambda e: e["ts"]):
        spans.setdefault(e["name"], []).append(_span(e))
    repeated = {name: mine for name, mine in spans.items() if len(mine) >= 2}
    top = [mine for name, mine in repeated.items()
           if not any(_holds(o, mine[0]) for other, theirs in repeated.items() if other != name
                      for o in theirs)]
    return max(top, key=len, default=[])


def _holds(outer: Span, inner: Span) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1] and outer != inner


def _synchronises(event: dict) -> bool:
    category, name = event.get("cat"), event["name"]
    return (category in ("cuda_runtime", "cuda_driver") and bool(SYNC_CALL.search(name))
            or category == "cpu_op" and name in SYNC_OPERATORS)


def _timed_events(trace: dict[str, Any]) -> list[dict]:
    """The trace's complete events with a name and a start (a foreign trace's others unread)."""
    return [e for e in trace.get("traceEvents", []) if isinstance(e, dict)
            and e.get("ph", "X") == "X" and isinstance(e.get("name"), str)
            and isinstance(e.get("ts"), (int, float))]


def _span(event: dict) -> Span:
    return (float(event["ts"]), float(event["ts"]) + float(event.get("dur", 0.0)))
