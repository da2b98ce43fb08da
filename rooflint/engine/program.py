"""`rooflint profile`: a whole program's kernels, ranked by what fixing them could save.

From the two passes' logs (every launch's duration: PyTorch's profiler trace, with the
operator and function behind each launch, or Nsight Compute's; counters on one launch of
each launch shape of the chosen kernels) to a result document in the common schema; only
profile_program runs anything (measure/program.py). The kernels are found, ranked by
total GPU time (judge/kernel_times.py), left out where autotuners made them
(judge/autotuning.py), chosen (those that cover ``coverage`` of it, or the ``top`` N:
judge/kernel_choice.py), asked of Nsight Compute by their mangled names
(judge/pass2_patterns.py) and met by pass 2's launches (judge/launch_matching.py); each is
named (judge/kernel_names.py), its library told (judge/kernel_libraries.py) and its spread
of times explained where it is not noise (judge/time_spread.py). Each chosen one becomes
an Observation judged by the same engine as a manifest variant, with no algorithmic
intensity (nobody counted its compulsory bytes), a library kernel leading with its
caller's moves (caller_moves.py), and gets its share of the program's time and its
upside, the time its best move could save (judge/upside.py, which also says when a kernel
is done). Each process's NCCL kernels are matched to the calls NCCL logged in pass 1, their
sizes (judge/collectives.py). What the profile says as it goes is worded in
output/profile_words.py and heard by ``say``.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections import Counter as Tally
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from rooflint.common.vocabularies import CountersMode, Precision
from rooflint.formats import calibration as calibrations
from rooflint.analysis import caller_moves as library_moves
from rooflint.formats import kernel_models
from rooflint.analysis.counters import Counters
from rooflint.judge.measurement import device_spec
from rooflint.engine.named_gpu import check_gpu_option
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.formats.gpus import DeviceInfo, load_specs
from rooflint.formats.collective_calls import RankCollectives
from rooflint.formats.nccl_log import NcclCall, nccl_calls
from rooflint.formats.ranks import RANK_VARIABLES, RankInfo, ranks_of, trace_of
from rooflint.judge.collectives import (Placement, collective_kernels, placement,
                                        rank_collectives, with_calls_own_time)
from rooflint.measure import nccl_logs
from rooflint.measure.pass_runner import Pass, Stopped, ncu_executable
from rooflint.measure import program as passes
from rooflint.measure.program import Choice, Filters
from rooflint.measure.ncu import listed_metrics, parse_rows, summarize, version as ncu_version
from rooflint.formats.ncu_log import DEVICE_ATTRIBUTE, DEVICE_NAME
from rooflint.formats.jobs import Clocks
from rooflint.common.errors import RooflintError
from rooflint.formats.kernel_models import KernelModel, model_for
from rooflint.analysis.observation import Model, Observation, analyse
from rooflint.analysis.stats import TimeStats
from rooflint.judge.autotuning import (Autotuning, benchmark_trials, launches_to_skip,
                                      rows_without_autotuning, trace_without_autotuning)
from rooflint.judge.kernel_choice import (EarlyEnd, choose, early_end, pass2_estimate_s,
                                         profiled_shapes)
from rooflint.judge.counter_reuse import kernel_key, reuse_context, served
from rooflint.formats.counter_cache import CounterCache
from rooflint.judge.kernel_libraries import caller_flags, library
from rooflint.judge.distinct_names import unique_names
from rooflint.judge.kernel_times import (Identity, KernelTime, kernel_times,
                                         kernel_times_from_trace, selected)
from rooflint.judge.launch_matching import launches_by_identity, missed, per_launch
from rooflint.judge.pass2_patterns import kernel_patterns, profiled_devices, selection_of
from rooflint.judge.time_spread import drifting, mixed_shapes
from rooflint.output.profile_words import (NO_COUNTERS, autotuning_words, drift_note,
                                           held_memory_words, missed_words,
                                           nccl_log_not_read_words, pass1_words, plan_words,
                                           shapes_note, stopped_words, unrecorded_words)
from rooflint.judge.program_fixes import roll_up
from rooflint.judge.upside import best_fraction, by_upside, upside
from rooflint.common.paths import portable_path
from rooflint.formats.results import FamilyResult, KernelShare, RunResult, VariantResult
from rooflint.formats.settings import DEFAULT_COVERAGE, DEFAULT_STOP_AFTER, Settings
from rooflint.formats.status import Status
from rooflint.formats.trace_events import Launch, Unrecorded, unrecorded
from rooflint.formats.trace_events import launch_count, launches as trace_launches
from rooflint.formats.trace_events import peak_reserved_bytes, stopped_at_step
from rooflint.formats.trace_events import libraries, union_unless_any
from rooflint.formats.trace_timing import ProgramTiming, timing_and_second_step


def counters_by_identity(chosen: list[KernelTime], rows: list[dict],
                         timed: list[KernelTime] | None = None,
                         loosely: bool = True) -> dict[Identity, Counters]:
    """Each chosen kernel's counters from its launches among pass 2's rows
    (launches_by_identity: by identity, wherever they sit in pass 2's launch order),
    averaged per launch, so two profiles that caught different numbers of its launches
    still compare (in `compare` and `gate`)."""
    return {key: per_launch(summarize(mine), len(mine))
            for key, mine in launches_by_identity(chosen, rows, timed, loosely).items()}


def device_attribute(row: dict, name: str) -> float:
    """One of the device attributes ncu prints with each launch (0 where it printed none)."""
    value = row.get(DEVICE_ATTRIBUTE + name, 0.0)
    return float(value) if isinstance(value, (int, float)) else 0.0


def device_from(rows: list[dict], driver: str) -> DeviceInfo:
    """The GPU the program ran on, from the device attributes ncu prints with each launch."""
    row = rows[0]
    major, minor = (int(device_attribute(row, f"compute_capability_{part}"))
                    for part in ("major", "minor"))
    return with_cache_and_clocks(DeviceInfo(
        name=str(row.get(DEVICE_NAME, "unknown GPU")),
        index=int(device_attribute(row, "device_index")), compute_capability=f"{major}.{minor}",
        sms=int(device_attribute(row, "multiprocessor_count")), l2_bytes=0,
        memory_bytes=int(device_attribute(row, "total_memory")), max_sm_clock_mhz=None,
        max_mem_clock_mhz=None, driver=driver, cuda_runtime="", cupy=""), row)


def with_cache_and_clocks(device: DeviceInfo, row: dict) -> DeviceInfo:
    """``device`` with the L2 size and the clocks (kHz) ``row`` gives: ncu prints them with
    each launch, the rotation's engine once (measure/rotation.rows_of)."""
    clock, memory = device_attribute(row, "clock_rate"), device_attribute(row, "memory_clock_rate")
    return replace(device, l2_bytes=int(device_attribute(row, "l2_cache_size")),
                   max_sm_clock_mhz=clock / 1e3 if clock else None,
                   max_mem_clock_mhz=memory / 1e3 if memory else None)


def dominant_precision(counters: Counters | None, spec: GpuSpec) -> str:
    """The precision most of the counted FLOPs ran in, if this GPU has a roof for it."""
    if counters and counters.flops:
        main = max(counters.flops, key=counters.flops.get)
        if main in spec.peaks:
            return main
    return Precision.FP32


# The launch durations a kernel's row keeps (samples_s), evenly spaced in launch order: its
# time's statistics are of every launch, and comparing two profiles' samples needs no more.
# The word language model's LSTM kept 60,000 of one kernel's, a 6.7 MB result for 320,093
# launches: a program of a few million launches would have written a result larger than
# rooflint reads (jsonfile.MAX_DOCUMENT_BYTES).
KEPT_SAMPLES = 2000


def kept_samples(durations_s: list[float]) -> list[float]:
    """At most KEPT_SAMPLES of ``durations_s``, evenly spaced, the first and last among them."""
    if len(durations_s) <= KEPT_SAMPLES:
        return list(durations_s)
    step = (len(durations_s) - 1) / (KEPT_SAMPLES - 1)
    return [durations_s[round(i * step)] for i in range(KEPT_SAMPLES)]


def kernel_result(time: KernelTime, name: str, counters: Counters | None, region_s: float,
                  spec: GpuSpec, device: DeviceInfo,
                  calibration: calibrations.Calibration | None,
                  model: Model | None = None, missing: str = "",
                  missing_metrics: list[str] | None = None) -> VariantResult:
    """One kernel judged as any variant is, with its share and upside; with the user's
    ``model`` of it (see kernel_models), its algorithmic intensity too; without counters,
    ``missing`` says why; ``missing_metrics`` are those of rooflint's list its counters
    were taken without (an imported report's). A library kernel's verdict leads with its
    caller's moves (caller_moves.py); its upside stays the kernel-level arithmetic."""
    precision = dominant_precision(counters, spec)
    analysis = analyse(Observation(
        name=name, precision=precision, samples_s=time.durations_s, counters=counters,
        model=model, grid_blocks=counters.grid_size if counters else 0,
        threads_per_block=0, launches=1,
        point_time_s=counters.duration_s if counters else None, cached=True), spec, device.sms,
        calibration)
    best = best_fraction(analysis.point, analysis.counters, calibration, precision, device.sms)
    owner = library(time.kernel, time.origins[0].operator if time.origins else None)
    explained = explained_spread(time)
    stats, notes = ((explained[0], [*analysis.notes, explained[1]]) if explained else
                    (analysis.time, analysis.notes))
    share = KernelShare(
        kernel=time.kernel, library=owner, launches=time.launches,
        total_s=time.total_s, share=time.total_s / region_s if region_s else 0.0,
        best_fraction=best, upside_s=upside(time.total_s, analysis.verdict, best),
        origins=time.origins, grid=time.grid, block=time.block)
    return VariantResult(
        name=name, description=time.kernel, status=Status.OK,
        message=("" if analysis.counters else
                 f"counters refused: {analysis.refused}" if analysis.refused else missing),
        baseline=False, source_sha256=None, precision=precision, tolerance=0.0, checks=[],
        samples_s=kept_samples(time.durations_s), time=stats, clocks=Clocks(), gpm={},
        graph_time=None, flops=analysis.flops, dram_bytes=analysis.dram_bytes,
        counters=analysis.counters, notes=notes, roofs=analysis.roofs, point=analysis.point,
        verdict=analysis.verdict and library_moves.with_caller_moves(
            analysis.verdict, owner, caller_flags(time)),
        expect={}, expectation_mismatch=None, versus=None,
        speed_vs_baseline=None, share=share, levels=analysis.levels,
        missing_metrics=missing_metrics or [])


def explained_spread(time: KernelTime) -> tuple[TimeStats, str] | None:
    """The time of a kernel whose launch times spread without noise (several shapes at one
    launch configuration, or work that changes along the run: judge/time_spread.py), and
    the note saying why; None where its spread, if any, is noise."""
    shapes = mixed_shapes(time)
    if shapes:
        return shapes.time, shapes_note(shapes)
    drift = drifting(time)
    if drift:
        note = drift_note(drift)
        return replace(drift.stats, varies=note), note
    return None


def profile_result(program: str, directory: str, kernels: list[KernelTime],
                   chosen: list[KernelTime], counters: dict[Identity, Counters],
                   spec: GpuSpec,
                   device: DeviceInfo, calibration: calibrations.Calibration | None,
                   settings: Settings, models: list[KernelModel] | None = None,
                   missing: dict[Identity, str] | None = None,
                   missing_metrics: dict[Identity, list[str]] | None = None, *,
                   timing: ProgramTiming | None = None,
                   collectives: Placement | None = None) -> RunResult:
    """The result document of a profile: one family (the program), one variant per chosen
    kernel (those without counters with the reason in ``missing``, those whose counters
    lack metrics with them in ``missing_metrics``); the rest of the GPU time is summarised
    in the settings; the program's fixes from its kernels, its trace's ``timing`` and the
    job's ``collectives``."""
    region = sum(k.total_s for k in kernels)
    names = unique_names(chosen)
    variants = [kernel_result(k, names[k.identity], counters.get(k.identity), region, spec,
                              device, calibration,
                              model_for((k.kernel, names[k.identity]), models or []),
                              (missing or {}).get(k.identity, NO_COUNTERS),
                              (missing_metrics or {}).get(k.identity))
                for k in chosen]
    profiled = {k.identity for k in chosen}
    rest = [k for k in kernels if k.identity not in profiled]
    settings = replace(settings, mode="profile", gpu_time_s=region, kernels=len(kernels),
                       other_kernels=len(rest),
                       other_share=sum(k.total_s for k in rest) / region if region else 0.0,
                       **calibrations.settings(calibration))
    result = RunResult(gpu=device, spec_id=spec.id, settings=settings, program=timing)
    result.families.append(FamilyResult(name=program, directory=directory, params={},
                                        baseline=None, variants=by_upside(variants)))
    result.fixes = roll_up(result, collectives)
    return result


@dataclass
class ProfileOptions:
    command: list[str]
    coverage: float = DEFAULT_COVERAGE
    top: int | None = None
    nvtx: str | None = None
    kernel: str | None = None
    skip: int = 0
    stop_after: int = DEFAULT_STOP_AFTER   # a Python program ended at its Nth optimizer step
    gpu: str | None = None
    logs: str | None = None          # keep Nsight Compute's CSV logs in this directory
    model: str | None = None         # a kernel_models file: kernels' FLOPs and bytes
    counter_cache: bool = True       # PyTorch's own kernels' counters read from and kept on disk


def profile_program(options: ProfileOptions, say: Callable[[str], None]
                    ) -> Profiled:
    """Both passes over the program (the only part that runs anything), then the analysis.
    ``say`` hears what is about to happen, before the longer second pass, and how long a
    long pass has run. A pass 2 that failed or was interrupted leaves a result of pass 1's
    kernel times, each chosen kernel's row saying why it has no counters, and what stopped
    it."""
    models = kernel_models.load(Path(options.model)) if options.model else []  # mistakes first
    check_program(options.command)
    check_gpu_option(options.gpu)
    ncu_executable()                        # no ncu: say so before any program runs
    filters = passes.Filters(nvtx=options.nvtx, kernel=options.kernel, skip=options.skip,
                             stop_after=options.stop_after)
    logs = logs_folder(Path(options.logs)) if options.logs else None
    say(pass1_words(options.command))

    read: dict[int, tuple[PassOne, list[tuple[RankInfo, PassOne]]]] = {}  # once per pass

    def kernels_of(first: Pass) -> PassOne:
        if id(first) not in read:
            read[id(first)] = pass_one(first, filters)
        return read[id(first)][0]

    def ranks_of_pass(first: Pass) -> list[tuple[RankInfo, PassOne]]:
        kernels_of(first)
        return read[id(first)][1]

    planned: list[Choice] = []                                   # the last is pass 2's
    cache = CounterCache.default() if options.counter_cache else None
    reuse = Reuse()

    def plan(first: Pass) -> Choice:
        """The kernels pass 2 profiles (those the counter cache does not serve), said
        before it starts."""
        one = kernels_of(first)
        chosen = choose(one.kernels, options.coverage, options.top)
        listed = listed_for(first)
        reuse.look_up(cache, first, chosen, listed)
        profiled = [k for k in chosen if k.identity not in reuse.served]
        held = [(rank, {k.identity for k in theirs.kernels})
                for rank, theirs in ranks_of_pass(first)]
        on = profiled_devices(held, {k.identity: k.total_s for k in profiled})
        left = 0 if on is None else len(          # chosen kernels only the others ran
            {k.identity for k in profiled} - set().union(*(m for r, m in held if r in on)))
        alone = first.processes == 1
        skip = launches_to_skip(one.launches, {k.identity for k in profiled}) if alone else 0
        choice = pass2_choice(profiled, one.every, skip, listed,
                              tuple(rank.device for rank in on or ()),
                              early_end(profiled, one.launches, skip) if alone else None)
        shapes = profiled_shapes(profiled, one.launches, choice.skip)
        choice = replace(choice, expected_s=pass2_estimate_s(shapes))
        planned.append(choice)
        say(plan_words(first.timer.words, first.wall_s, one.kernels, chosen,
                       choice.tensor_precisions, profiled, choice.skip, on,
                       len(ranks_of_pass(first)), left, shapes, choice.early_end,
                       stopped_at_step(first.trace) if first.trace else None))
        if one.tuning.launches:
            say(autotuning_words(one.tuning))
        if one.unrecorded:
            say(unrecorded_words(one.unrecorded))
        held = memory_held_past_replay_room(first.trace)
        if held:
            say(held_memory_words(*held))
        return choice

    first, second = passes.two_passes(options.command, filters, logs, plan, say)
    one = kernels_of(first)
    kernels, tuning = one.kernels, one.tuning
    chosen = choose(kernels, options.coverage, options.top)
    profiled = parse_rows(second.log)
    measured = counters_by_identity(chosen, profiled, kernels)
    reuse.keep(cache, measured)
    counters = reuse.served | measured
    stopped = second.stopped
    choice = planned[-1]
    missing = {k.identity: stopped_words(stopped.why) if stopped
               else missed_words(k, missed(k, profiled))
               for k in chosen if k.identity not in counters}
    device = device_of(first, profiled, passes.driver_version())
    specs = load_specs()
    spec = device_spec(device, options.gpu, specs)
    calibration = calibrations.find(spec.id, device.driver)
    settings = replace(passes_settings(options, first, second, len(profiled), choice),
                       pass2_cached_kernels=[k.kernel for k in chosen
                                             if k.identity in reuse.served] or None,
                       autotuning_launches=tuning.launches, autotuning_s=tuning.gpu_s,
                       autotuners=list(tuning.tuners) or None,
                       unrecorded=one.unrecorded or None)
    def judged(kernels_of_rank: PassOne, collectives: list[RankCollectives | None]
               ) -> RunResult:
        """The result of one rank's kernels, or the job's, its fixes with its (or its
        ranks') ``collectives``."""
        ids = {k.identity for k in chosen}
        return profile_result(program_name(options.command), portable_path(Path.cwd()),
                              kernels_of_rank.kernels,
                              [k for k in kernels_of_rank.kernels if k.identity in ids],
                              counters, spec, device, calibration, settings, models, missing,
                              timing=kernels_of_rank.timing,
                              collectives=placement([c for c in collectives if c]))

    calls = nccl_calls_of(first, say)
    interconnect = calibration.interconnect if calibration else None
    if first.processes == 1:
        own = rank_collectives(calls_of_one(calls, first.trace or {}),
                               collective_kernels(first.trace or {}), interconnect)
        job = judged(one, [own])
        job.rank, job.collectives = own_rank(first), own
        return Profiled(job, stopped)
    by_rank = ranks_of_pass(first)
    theirs = [rank_collectives(
        None if calls is None else [c for c in calls if c.process == rank.process],
        collective_kernels(trace_of(first.trace or {}, rank)), interconnect)
        for rank, _ in by_rank]
    ranks = []
    for (rank, kernels_of_rank), mine in zip(by_rank, theirs):
        # each rank's fixes are the job's: its collectives placed as the job's (each call its
        # shortest rank's time) and saving the job's least-waiting rank's exposed time (a
        # rank's own kernels hold its wait for the others)
        timing = with_jobs_least_exposed(kernels_of_rank.timing, one.timing)
        ranks.append(judged(replace(kernels_of_rank, timing=timing), theirs))
        ranks[-1].rank, ranks[-1].collectives = rank, mine
    return Profiled(judged(one, theirs), stopped, ranks)


def with_jobs_least_exposed(rank: ProgramTiming | None, job: ProgramTiming | None
                            ) -> ProgramTiming | None:
    """A rank's timing with the least-waiting rank's exposed time and host time once a step
    its job's (the rank's document says the job's communication fixes, not its own wait for
    its peers)."""
    mine = rank.communication if rank else None
    least = job.communication if job else None
    if rank is None or mine is None or least is None:
        return rank
    return replace(rank, communication=replace(
        mine, least_exposed_s=least.least_exposed_s,
        step_least_exposed_s=least.step_least_exposed_s,
        step_host_once_s=least.step_host_once_s))


def nccl_calls_of(first: Pass, say: Callable[[str], None]) -> list[NcclCall] | None:
    """The calls NCCL logged in pass 1 (measure/nccl_logs.py), every process's; None where
    its logs were not read, said once where the program ran NCCL's kernels."""
    if first.nccl_logs is None:
        own = nccl_logs.users_own()
        if own and collective_kernels(first.trace or {}):
            say(nccl_log_not_read_words(own))
        return None
    return [call for text in first.nccl_logs for call in nccl_calls(text)]


def calls_of_one(calls: list[NcclCall] | None, trace: dict) -> list[NcclCall] | None:
    """The calls of the one process whose kernels ``trace`` holds: the process CUPTI's
    records name, else (PyTorch's profiler traces the process it runs in) the one process
    NCCL's logs name; none where they name several."""
    if calls is None:
        return None
    named = ranks_of(trace)
    processes = {named[0].process} if named else {c.process for c in calls}
    return [c for c in calls if c.process in processes] if len(processes) == 1 else []


@dataclass
class Profiled:
    """What a profile leaves: the job's result, what stopped its pass 2 (None: nothing did),
    and, where pass 1 saw kernels of several processes (a launcher's ranks), each rank's
    own document (formats/ranks.py), its kernels judged on the job's counters."""

    result: RunResult
    stopped: Stopped | None
    ranks: list[RunResult] = field(default_factory=list)


def own_rank(first: Pass) -> RankInfo | None:
    """The rank of a program of one process that a launcher started rooflint in (``srun
    rooflint profile -- python train.py``: a rank's profile on each node, merged later),
    as its launcher numbered it; None where no launcher did."""
    number = next((os.environ[v] for v in RANK_VARIABLES if os.environ.get(v)), None)
    if number is None or not number.isdigit():
        return None
    found = ranks_of(first.trace or {})
    return RankInfo(process=found[0].process if found else -1, rank=int(number),
                    host=socket.gethostname(), device=found[0].device if found else None)


@dataclass
class Reuse:
    """The counter cache's part in a profile (judge/counter_reuse.py): each chosen kernel's
    key, and the counters it serves."""

    keys: dict[Identity, str] = field(default_factory=dict)
    served: dict[Identity, Counters] = field(default_factory=dict)

    def look_up(self, cache: CounterCache | None, first: Pass, chosen: list[KernelTime],
                listed: frozenset[str] | None) -> None:
        """Keys for the chosen kernels pass 1's trace lets the cache serve, read by the
        names the GPU's chip lists (``listed``), and what it holds of them (whole functions
        only)."""
        if cache is None or not first.trace:
            return
        device = device_from_trace_or_none(first.trace)
        context = reuse_context(libraries(first.trace), device, ncu_version()) if device else None
        if context is None:
            return
        self.keys = {k.identity: key for k in chosen
                     for key in [kernel_key(k, context, kernel_metrics(k, listed))] if key}
        held = {identity: hit.counters for identity, key in self.keys.items()
                for hit in [cache.read(key)] if hit is not None}
        self.served = served(chosen, held)[0]

    def keep(self, cache: CounterCache | None, measured: dict[Identity, Counters]) -> None:
        """The counters pass 2 just measured, kept under their kernels' keys."""
        if cache is not None:
            for identity, counters in measured.items():
                if identity in self.keys:
                    cache.write(self.keys[identity], counters)


def kernel_metrics(k: KernelTime, listed: frozenset[str] | None) -> list[str]:
    """The counters pass 2 reads of ``k`` whichever kernels it is profiled with: the tensor
    precisions its own operators name (a list read with others' holds these too), by the
    names the GPU's chip lists."""
    return Choice([], k.tensor_precisions, listed=listed).metrics


def listed_for(first: Pass) -> frozenset[str] | None:
    """The metric names Nsight Compute lists for the chip of the GPU pass 1 ran on
    (ncu.listed_metrics); None where pass 1 names no GPU (Hopper's names are read)."""
    try:
        return listed_metrics(device_of(first, [], "").compute_capability)
    except RooflintError:
        return None


def device_from_trace_or_none(trace: dict | None) -> DeviceInfo | None:
    """The GPU pass 1's trace names, with the driver NVML gives; None where it names none."""
    try:
        return device_from_trace(trace or {}, passes.driver_version())
    except RooflintError:
        return None


# Nsight Compute saves the device memory a program holds before a profiled launch's first
# replay pass and restores it before each other; a copy that no longer fits beside the
# program's own goes to host memory. Measured on an H100 (80 GB), 40 launches of a CuPy
# probe under the whole list: 12.5 s holding 0.25 GB, 14.7 s holding 16 GB, not done in
# 400 s holding 48 GB.
REPLAY_ROOM_SHARE = 0.4


def memory_held_past_replay_room(trace: dict | None) -> tuple[int, int] | None:
    """The device memory pass 1's program held and its GPU's, when it held more than
    REPLAY_ROOM_SHARE of it (pass 2 is warned of); None otherwise, or where the trace does
    not say."""
    held = peak_reserved_bytes(trace) if trace else None
    if not held:
        return None
    try:
        total = device_from_trace(trace, "").memory_bytes
    except RooflintError:
        return None
    if not total or held <= REPLAY_ROOM_SHARE * total:
        return None
    return held, total


def passes_settings(options: ProfileOptions, first: Pass, second: Pass, profiled: int,
                    choice: Choice) -> Settings:
    """What a profile records of how it ran the program: its filters and both passes."""
    stopped = second.stopped
    return Settings(
        counters=CountersMode.NCU, command=options.command, nvtx=options.nvtx,
        kernel_filter=options.kernel,
        skip=options.skip, stop_after=options.stop_after, model=options.model,
        coverage=options.coverage, top=options.top,
        pass1_timer=first.timer.value,
        pass1_wall_s=first.wall_s, pass2_wall_s=second.wall_s,
        pass2_profiled_launches=profiled,
        # Nsight Compute's selection, to profile the same launches again: none rotated
        pass2_kernels=None if second.rotated else choice.patterns,
        pass2_selection=None if second.rotated else choice.selection,
        pass2_tensor_precisions=_sorted_or_none(choice.tensor_precisions),
        pass2_started_early=second.attached, pass2_stopped=stopped.why if stopped else None,
        pass2_rotated=second.rotated or None,
        ncu_version=ncu_version())


def pass2_choice(chosen: list[KernelTime], timed: list[KernelTime], skip: int = 0,
                 listed: frozenset[str] | None = None, devices: tuple[int, ...] = (),
                 ending: EarlyEnd | None = None) -> Choice:
    """Pass 2's patterns (on mangled names: the chosen kernels among all of pass 1's,
    ``timed``), the tensor precisions the chosen kernels' operators name (all of them
    when one kernel's operators are unknown), and the program's first ``skip`` launches
    left out (only where one process launched them all: Nsight Compute counts every
    process's launches, in an order between processes no trace fixes), read by the names
    the GPU's chip lists (``listed``), on the GPUs numbered ``devices`` (every GPU where
    none), the program ended where ``ending`` says (likewise one process's only)."""
    patterns = kernel_patterns(chosen, timed)
    return Choice(selection_of(patterns),
                  union_unless_any(k.tensor_precisions for k in chosen), skip, listed,
                  devices, ending, kernels=patterns)


def _sorted_or_none(values: frozenset[str] | None) -> list[str] | None:
    return None if values is None else sorted(values)


def device_of(first: Pass, profiled: list[dict], driver: str) -> DeviceInfo:
    """The GPU the program ran on: from the attributes ncu prints with each launch of
    pass 2, or of pass 1 when pass 2 stopped before any; from the device properties in
    pass 1's trace (PyTorch's profiler's, or CUPTI's records) when ncu printed none (pass 2
    by rotation prints none: measure/rotation.py)."""
    rows = profiled or ([] if first.timer.traced else parse_rows(first.log))
    if rows and DEVICE_NAME in rows[0]:
        return device_from(rows, driver)
    return with_cache_and_clocks(device_from_trace(first.trace or {}, driver),
                                 rows[0] if rows else {})


def device_from_trace(trace: dict, driver: str) -> DeviceInfo:
    """The GPU the trace's kernels ran on, from its ``deviceProperties`` (which name no L2
    size and no clocks: device_of takes them from pass 2's rows where they give them)."""
    devices = {d.get("id"): d for d in trace.get("deviceProperties") or []
               if isinstance(d, dict)}
    used = Tally(e.get("args", {}).get("device") for e in trace.get("traceEvents", [])
                 if isinstance(e, dict) and e.get("cat") == "kernel")
    ran_on = next((devices[i] for i, _ in used.most_common() if i in devices), None)
    if ran_on is None:
        raise RooflintError("the GPU is unknown: pass 2 stopped before Nsight Compute named "
                            "it, and pass 1's trace names none")

    def number(key: str) -> int:
        value = ran_on.get(key)
        return int(value) if isinstance(value, (int, float)) else 0
    return DeviceInfo(
        name=str(ran_on.get("name", "unknown GPU")), index=number("id"),
        compute_capability=f"{number('computeMajor')}.{number('computeMinor')}",
        sms=number("numSms"), l2_bytes=0, memory_bytes=number("totalGlobalMem"),
        max_sm_clock_mhz=None, max_mem_clock_mhz=None, driver=driver, cuda_runtime="",
        cupy="")


def logs_folder(logs: Path) -> Path:
    """--logs' folder, made with its parents where it does not exist yet (as ncu -o
    does), once every check has passed: a refused profile leaves nothing behind."""
    try:
        logs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflintError(f"--logs {logs}: cannot make the directory "
                            f"({exc.strerror or exc})") from None
    return logs


def check_program(command: list[str]) -> None:
    """The program to profile exists and can be run (said before ncu is looked for): a
    path that is an executable file, or a name found on PATH, as ncu will look for it."""
    program = command[0]
    if shutil.which(program):
        return
    if "/" not in program:
        raise RooflintError(f"profile: no program {program!r} on PATH")
    path = Path(program)
    if not path.exists():
        raise RooflintError(f"profile: {program}: no such file")
    if not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise RooflintError(f"profile: {program} is {kind}, not a program")
    raise RooflintError(f"profile: {program} is not executable; chmod +x it, or name its "
                        f"interpreter first (rooflint profile -- python {program})")


@dataclass
class PassOne:
    """What pass 1 found: its kernels (those that pass --nvtx, --kernel and --skip), the
    autotuners' launches left out of them, the repeated calls the trace did not record,
    and every kernel it saw, filters or not: pass 2 runs the whole program, so its patterns
    tell the chosen kernels apart from all of these (with --kernel "Gelu", the chosen GELU
    kernel's pattern had been the bare name of PyTorch's element-wise kernel, which every
    element-wise kernel of the program matches, each then profiled at every shape)."""

    kernels: list[KernelTime]
    tuning: Autotuning
    unrecorded: list[Unrecorded]
    every: list[KernelTime]
    # The program's wall time, GPU busy time, idle gaps and steps from the trace; None
    # where Nsight Compute timed pass 1 (its launches carry no timestamps).
    timing: ProgramTiming | None = None
    # Every launch of the trace in launch order, cuDNN's benchmark's trials marked (pass 2's
    # skip: autotuning.launches_to_skip); none where Nsight Compute timed pass 1.
    launches: list[Launch] = field(default_factory=list)


def pass_one(first: Pass, filters: Filters) -> tuple[PassOne, list[tuple[RankInfo, PassOne]]]:
    """Pass 1's kernels, from whichever timer took them, less autotuners' trials (see
    autotuning.without_autotuning), a job's collectives at their calls' own time (see
    collectives.with_calls_own_time: the job's ranks are needed to tell it); and, where it
    saw kernels of several processes (a launcher's ranks), each process's own, as pass 1 of
    that process alone would have found them. Each rank's launches are read from its own
    events, once, and the job's are theirs together (a launch is placed within its own
    process: trace_events.launches), unless some kernel belongs to no rank."""
    if not first.timer.traced:
        return ncu_timed_kernels(parse_rows(first.log)), []
    trace, words = with_calls_own_time(first.trace or {}), first.timer.words
    ranks = [(rank, trace_of(trace, rank)) for rank in ranks_of(trace)] \
        if first.processes > 1 else []
    found = [(rank, mine, trace_launches(mine)) for rank, mine in ranks]
    every = sorted((x for _, _, theirs in found for x in theirs), key=lambda x: x.start_us)
    job = traced_kernels(trace, filters, words,
                         every if ranks and len(every) == launch_count(trace)
                         else first.launches if trace is first.trace else None)
    return job, [(rank, traced_kernels(mine, filters, words, theirs))
                 for rank, mine, theirs in found]


def traced_kernels(trace: dict, filters: Filters, timer: str,
                   launches: list[Launch] | None = None) -> PassOne:
    """The kernels of a trace (PyTorch's profiler's, CUPTI's records), filtered here as
    ncu filters its own launches (which leaves it no kernel but those); ``timer`` names
    who recorded it, for the refusal of a trace with no launch through the filters;
    ``launches``, where already read, the trace's."""
    launches = trace_launches(trace) if launches is None else launches
    found = selected(launches, filters.nvtx, filters.kernel, filters.skip)
    if not found:
        raise RooflintError(f"no kernel launch that {timer} recorded passed --nvtx, --kernel "
                            f"and --skip")
    timing, steady = timing_and_second_step(trace)
    steps = timing.steps.count if timing and timing.steps else None
    kept, tuning = trace_without_autotuning(found, steps, steady)
    kernels = kernel_times_from_trace(kept)
    every = kernels if len(found) == len(launches) else \
        kernel_times_from_trace(trace_without_autotuning(launches, steps, steady)[0])
    return PassOne(kernels, tuning, unrecorded(trace), every, timing,
                   benchmark_trials(launches, steps, steady))


def ncu_timed_kernels(rows: list[dict]) -> PassOne:
    """The kernels of Nsight Compute's rows, each launch timed by its gpu__time_duration."""
    rows, tuning = rows_without_autotuning(rows)
    kernels = kernel_times(rows)
    return PassOne(kernels, tuning, [], kernels)


def program_name(command: list[str]) -> str:
    """What to call the program: its script (``transformer_block.py``), the module it runs
    (``python -m examples.regression.main``), else its executable."""
    script = next((a for a in command if a.endswith((".py", ".sh"))), None)
    if script is None and Path(command[0]).name.startswith("python") and "-m" in command[1:-1]:
        return command[command.index("-m", 1) + 1]
    return Path(script or command[0]).name
