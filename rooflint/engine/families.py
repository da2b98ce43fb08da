"""`rooflint run`: manifests -> worker measurements -> points, verdicts, result document
(each family judged by judge/measurement.py, which `compare` and `profile` share).

The order is chosen so that mistakes surface before the GPU is touched: every manifest
is loaded and every ``--size`` checked first, then the workers start, the device is
matched to a spec, and families are timed one after another; with counters, all of them
are then profiled in one Nsight Compute session (per GPU), which gives its counters only
when it ends. The result file is rewritten after each family is timed and again once it
is complete, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable


from rooflint.common.vocabularies import CacheMode, CountersMode
from rooflint.formats import calibration as calibrations


from rooflint.common import phases
from rooflint.formats.baseline import git_revision
from rooflint.common.errors import RooflintError
from rooflint.formats.expressions import Number, evaluate
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.formats.gpus import load_specs
from rooflint.formats.families import bundled_manifests, shadowed_family
from rooflint.formats.family_code import check_code
from rooflint.formats.family_job import ResolvedFamily, check_sizes, resolve
from rooflint.formats.manifest import Manifest, load_manifest, select_variants
from rooflint.formats.reference_cache import size_limit
from rooflint.formats.counter_cache import CounterCache
from rooflint.formats.counter_key import variant_key
from rooflint.formats.gpus import DeviceInfo
from rooflint.formats.jobs import TORCH_MODULES, Measurement, TimingJob, VariantJob, uses_torch
from rooflint.analysis.counters import Counters
from rooflint.measure import build, ncu, nvml, source_report
from rooflint.measure.ncu import CountersUnavailable
from rooflint.measure.runner import Profiler, Progress, WorkerPool, profile, timing_pools
from rooflint.judge.measurement import check_precisions, device_spec, family_result
from rooflint.measure.protocol import check_fits
from rooflint.engine.named_gpu import check_gpu_option
from rooflint.common.phases import Stopwatch
from rooflint.formats.results import RunResult, write_result
from rooflint.formats.settings import DEFAULT_CACHE, DEFAULT_COUNTERS, DEFAULT_TIMEOUT_S, Settings
from rooflint.engine.counters_switch import CountersSwitch, counters_unavailable, without_counters
from rooflint.formats.status import Status
from rooflint.output.live import Listener
from rooflint.analysis.sourcelines import SourceProfile


@dataclass
class RunOptions:
    targets: list[str]
    variants: list[str]
    sizes: dict[str, Number]
    gpu: str | None = None
    cache: CacheMode = DEFAULT_CACHE
    timeout_s: float = DEFAULT_TIMEOUT_S
    json_path: Path | None = None
    counters: CountersMode = DEFAULT_COUNTERS
    devices: list[str] | None = None   # CUDA_VISIBLE_DEVICES entries to spread families over
    gpm: bool = False            # sample NVML GPM utilizations (0.2 s a variant) as evidence
    source: bool = False         # a source pass: the source lines behind each move
    reference_cache: bool = True  # host references' outputs read from and kept on disk
    counter_cache: bool = True    # variants' counters read from and kept on disk


def parse_sizes(items: list[str]) -> dict[str, Number]:
    """``--size N=4096 --size K=2**12`` -> {"N": 4096, "K": 4096}."""
    sizes = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise RooflintError(f"--size expects NAME=VALUE, got {item!r}")
        try:
            sizes[name.strip()] = evaluate(value, {})
        except RooflintError as exc:
            raise RooflintError(f"--size {item}: {exc}") from None
    return sizes


def check_inputs(options: RunOptions, note: Callable[[str], None]) -> list[Manifest]:
    """Every mistake in what `run` was given that needs no GPU to see, said before any
    worker starts: --timeout, --gpu, the reference cache's bound, the manifests, their sizes
    and their Python code; ``note`` hears a line worth saying as they load. Only what
    depends on the device (``num_sms``, its memory) waits for it."""
    check_timeout(options.timeout_s)
    check_gpu_option(options.gpu)
    if options.reference_cache:
        size_limit()        # the worker reads it too, where an error would cost a family
    return load_targets(options, note)


def check_timeout(seconds: float) -> None:
    if not (math.isfinite(seconds) and seconds > 0):
        raise RooflintError(f"--timeout {seconds:g}: expected the seconds a variant may take, "
                            f"a number above zero such as 120")


def load_targets(options: RunOptions, note: Callable[[str], None]) -> list[Manifest]:
    if len(options.targets) > 1 and options.variants:
        raise RooflintError("variant names apply to a single target")
    paths = options.targets or [str(p) for p in bundled_manifests()]
    manifests = [load_family(p, note) for p in paths]
    select_variants(manifests[0], options.variants)  # unknown names fail before the GPU starts
    unused = set(options.sizes) - {k for m in manifests for k in m.params}
    if unused:
        raise RooflintError(f"--size {', '.join(sorted(unused))}: no such parameter in "
                            f"{', '.join(m.name for m in manifests)}")
    for manifest in manifests:
        check_sizes(manifest, family_sizes(manifest, options.sizes), options.variants or None)
        check_code(manifest, options.variants or None)
    return manifests


def load_family(target: str, note: Callable[[str], None]) -> Manifest:
    """The manifest ``target`` names; where that is a path here sharing a bundled family's
    name (a ./stream beside the bundled stream), ``note`` hears which one is measured."""
    manifest = load_manifest(target)
    bundled = shadowed_family(target)
    if bundled:
        note(f"{target}: measuring ./{target}, not the bundled family of that name ({bundled})")
    return manifest


def family_sizes(manifest: Manifest, sizes: dict[str, Number]) -> dict[str, Number]:
    """The ``--size`` values that are this family's parameters (a run may name several)."""
    return {k: v for k, v in sizes.items() if k in manifest.params}


@dataclass
class Lane:
    """One GPU: its timing worker, and its profiler (a worker under ncu) for the families
    that lane times; counters are taken once the lane has no family left to time."""

    pool: WorkerPool
    visible: str | None = None        # its CUDA_VISIBLE_DEVICES entry; None: the default GPU
    profiler: Profiler | None = None  # None with counters off (start_profilers)
    sources: Profiler | None = None   # the source pass's (run --source)
    device: DeviceInfo | None = None
    failure: str = ""                 # why its worker did not start
    metrics: tuple[str, ...] = ()     # the counters its profiler reads, as its GPU names them


@dataclass
class _Shared:
    """What the lanes share while they work: the run's result, its order, its listener."""

    options: RunOptions
    spec: GpuSpec
    calibration: calibrations.Calibration | None
    result: RunResult
    listener: Listener
    watch: Stopwatch
    order: list[str]
    counters: CountersSwitch
    counter_cache: CounterCache | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class _Timed:
    """A family whose timing is done, waiting for its counters."""

    family: ResolvedFamily
    measurements: list[Measurement]
    watch: Stopwatch
    ticket: int | None = None         # the profiler's, once it is profiled
    source_ticket: int | None = None  # the source pass's
    keys: dict[str, str] = field(default_factory=dict)        # the counter cache's, by variant
    cached: dict[str, Counters] = field(default_factory=dict)  # read from it, by variant


def run(options: RunOptions, listener: Listener | None = None,
        pools: list[WorkerPool] | None = None,
        manifests: list[Manifest] | None = None) -> RunResult:
    """Measure every family, telling ``listener`` as each step is done. With several
    devices, each GPU's worker takes the next family as it finishes one. ``pools`` are
    the timing workers of ``timing_pools(options.devices)`` if the caller started them
    early (after `check_inputs`, whose ``manifests`` it passes); the run closes them."""
    listener = listener or Listener()
    manifests = manifests or check_inputs(options, listener.warn)
    specs = load_specs()
    unavailable = counters_unavailable(options.counters)
    counting = options.counters != CountersMode.OFF and not unavailable
    every_lane = [Lane(pool, visible) for visible, pool in
                  zip(options.devices or [None], pools or timing_pools(options.devices))]
    watch = Stopwatch()
    try:
        with watch.phase("startup"):
            known = nvml.shared_compute_capability() if counting else None
            if known:     # the profilers start first, their start-up beside the workers'
                start_profilers(every_lane, options, manifests, known)
            lanes = start_lanes(every_lane, listener.warn)
            if counting and not known:
                start_profilers(lanes, options, manifests)
        device = lanes[0].device
        spec = device_spec(device, options.gpu, specs)
        calibration = calibrations.find(spec.id, device.driver)
        result = RunResult(gpu=device, spec_id=spec.id, settings=Settings(
            cache=options.cache, counters=options.counters, **calibrations.settings(calibration),
            git_revision=git_revision(str(manifests[0].directory)),
            devices=[lane.visible for lane in lanes] if options.devices else None,
            ncu_version=ncu.version() if counting else None,
            nvcc_version=build.toolkit_version(),
            source_reader=source_report.reader().value if counting and options.source else None))
        check_precisions(manifests, spec)
        listener.started(result)
        switch = CountersSwitch(counting, result.settings, listener.warn)
        if unavailable:
            switch.off(unavailable)
            if options.source:
                listener.warn(NO_SOURCE_LINES)
        shared = _Shared(options, spec, calibration, result, listener, watch,
                         [m.name for m in manifests], switch,
                         CounterCache.default() if options.counter_cache else None)
        pending = deque(manifests)
        if len(lanes) == 1:
            _work(lanes[0], pending, shared)
        else:
            _work_in_parallel(lanes, pending, shared)
        return result
    except KeyboardInterrupt:
        for lane in every_lane:  # a busy worker reads the end of its input only after its family
            lane.pool.kill()
        raise
    finally:
        for lane in every_lane:   # those left out too: a GPU of another model has a worker
            lane.pool.close()
            for profiler in (lane.profiler, lane.sources):
                if profiler:
                    profiler.kill()


def start_profilers(lanes: list[Lane], options: RunOptions, manifests: list[Manifest],
                    capability: str | None = None) -> None:
    """Each lane's profilers (the counter pass, the source pass with --source), which
    import PyTorch ahead when a python variant uses it. The counters are asked by the names
    its GPU's chip lists (ncu.listed_metrics): of ``capability``, the compute capability
    NVML says every GPU shares, before the workers start, else the lane's worker's, once it
    has said hello. The counter pass's profiler is started and not waited for: ncu's
    start-up (about 2 s on an H100) runs beside the worker's and while the lane's kernels
    are timed, its worker opening the GPU only when the timing is done."""
    precisions = {v.precision for m in manifests for v in m.variants}
    preload = TORCH_MODULES if any(v.python and uses_torch(v.python.module)
                                   for m in manifests for v in m.variants) else ()
    for lane in lanes:
        listed = ncu.listed_metrics(capability or lane.device.compute_capability)
        lane.metrics = tuple(ncu.metrics_for(precisions, listed))
        lane.profiler = Profiler(options.cache, ncu.Counting(lane.metrics), lane.pool.env,
                                 preload)
        if options.source:
            lane.sources = Profiler(options.cache, source_report.SourceCounting(),
                                    lane.pool.env, preload)
        lane.profiler.start()


def start_lanes(lanes: list[Lane], warn: Callable[[str], None]) -> list[Lane]:
    """Start every lane's timing worker (together: each pays CuPy's start-up); a GPU that
    does not start is left out with a warning, and so is one of another model than the
    first (a result judges every family against one GPU's roofline)."""
    if len(lanes) == 1:
        lanes[0].device = lanes[0].pool.start()   # its error is the run's
        return lanes

    def start(lane: Lane) -> None:
        try:
            lane.device = lane.pool.start()
        except RooflintError as exc:
            lane.failure = str(exc)

    threads = [threading.Thread(target=start, args=(lane,)) for lane in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    working = [lane for lane in lanes if lane.device is not None]
    if not working:
        raise RooflintError(f"no GPU of --devices started: {lanes[0].failure}")
    for lane in lanes:
        if lane.device is None:
            warn(f"GPU {lane.visible} left out: {lane.failure}")
        elif lane.device.name != working[0].device.name:
            warn(f"GPU {lane.visible} left out: it is a {lane.device.name}, GPU "
                 f"{working[0].visible} a {working[0].device.name} (run each model separately)")
    return [lane for lane in working if lane.device.name == working[0].device.name]


def _work_in_parallel(lanes: list[Lane], pending: deque, shared: _Shared) -> None:
    """A thread per lane; the first error (or interrupt) stops the others' next families
    and is raised here, in the caller's thread."""
    errors: list[BaseException] = []

    def work(lane: Lane) -> None:
        try:
            _work(lane, pending, shared)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            errors.append(exc)
            pending.clear()

    threads = [threading.Thread(target=work, args=(lane,), daemon=True) for lane in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(timeout=0.5)   # wakes for Ctrl-C
    if errors:
        raise errors[0]


def _work(lane: Lane, pending: deque, shared: _Shared) -> None:
    """Time families until none is left, each added to the result as it is timed; then
    take the counters of all of them in one profiler session and complete each."""
    timed: list[_Timed] = []
    while True:
        try:
            manifest = pending.popleft()
        except IndexError:
            break
        done = time_family(lane, manifest, shared)
        final = lane.profiler is None or not shared.counters.on
        _publish(shared, done, {}, lane, final)
        if not final:
            timed.append(done)
    if timed:
        if lane.pool.worker:   # it has freed its families' memory; its exit is not waited for
            lane.pool.worker.end_input()
        for done in timed:
            profile_family(lane, done, shared)
        counters = close_profiler(lane, shared)
        sources = take_source_lines(lane, timed, shared) if lane.sources else {}
        for done in timed:
            measured = counters.get(done.ticket, {})
            keep_counters(shared.counter_cache, done, measured)
            _publish(shared, done, done.cached | measured, lane, final=True,
                     sources=sources.get(done.source_ticket, {}))


def time_family(lane: Lane, manifest: Manifest, shared: _Shared) -> _Timed:
    """One family's variants checked and timed on this lane's GPU."""
    options, device = shared.options, lane.device
    family = resolve(manifest, family_sizes(manifest, options.sizes), {"num_sms": device.sms},
                     TimingJob(cache=options.cache, gpm=options.gpm), options.variants or None)
    family = replace(family, job=replace(family.job, reference_cache=options.reference_cache))
    check_fits(family, device)
    lane.pool.phases = watch = Stopwatch()
    measurements = list(lane.pool.measure(
        family.job, options.timeout_s,
        shared.listener.progress(manifest.name, "timing", len(family.job.variants))))
    return _Timed(family, measurements, watch)


def profile_family(lane: Lane, done: _Timed, shared: _Shared) -> None:
    """The variants that passed, each run once under the lane's profiler, but for those
    whose counters the counter cache holds (said in one line)."""
    variants = cached_counters(lane, done, shared)
    if not variants:
        return
    progress = shared.listener.progress(done.family.manifest.name, "counters", len(variants))
    with done.watch.phase("counters"):
        done.ticket = lane.profiler.profile(replace(done.family.job, variants=variants),
                                            5 * shared.options.timeout_s, progress, done.watch)


def cached_counters(lane: Lane, done: _Timed, shared: _Shared) -> list[VariantJob]:
    """The variants that passed and still need counters: with a counter cache, each one's
    key (counter_key) is set in ``done`` and the counters it holds are taken from it."""
    variants = profiled_variants(done.family, done.measurements)
    cache = shared.counter_cache
    if cache is None or lane.profiler is None or not variants:
        return variants
    compilers = {m.variant: m.compiler for m in done.measurements}
    done.keys = {v.name: variant_key(done.family.job, v, compilers.get(v.name, ""), lane.device,
                                     ncu.version(), lane.metrics) for v in variants}
    taken = {}
    for v in variants:
        hit = cache.read(done.keys[v.name])
        if hit is not None:
            done.cached[v.name], taken[v.name] = hit.counters, hit.taken
    if taken:
        shared.listener.warn(cached_words(done.family.manifest.name, taken, len(variants)))
    return [v for v in variants if v.name not in done.cached]


def cached_words(family: str, taken: dict[str, str], variants: int) -> str:
    """The line saying which counters came from the cache, and since when."""
    days = sorted(set(taken.values()))
    since = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    return (f"{family}: counters of {len(taken)} of {variants} variants from the counter cache "
            f"(taken {since}; their code, launches, inputs, GPU and tools unchanged); "
            f"--no-counter-cache profiles them again")


def keep_counters(cache: CounterCache | None, done: _Timed, measured: dict[str, Counters]
                  ) -> None:
    """The counters just measured, kept under their variants' keys."""
    if cache is not None:
        for name, counters in measured.items():
            if name in done.keys:
                cache.write(done.keys[name], counters)


NO_SOURCE_LINES = "no source lines: the source pass (--source) needs the counters that are off"


def take_source_lines(lane: Lane, timed: list[_Timed], shared: _Shared
                      ) -> dict[int, dict[str, SourceProfile]]:
    """The source pass: every CUDA variant that passed, run once more under ncu's source
    counters, after the counter pass (its session must end first: one profiler a GPU)."""
    if not shared.counters.on:
        shared.listener.warn(NO_SOURCE_LINES)
        return {}
    for done in timed:
        variants = [v for v in profiled_variants(done.family, done.measurements) if v.source]
        if variants:
            progress = shared.listener.progress(done.family.manifest.name, "source lines",
                                                len(variants))
            with done.watch.phase("source lines"):
                done.source_ticket = lane.sources.profile(
                    replace(done.family.job, variants=variants), 5 * shared.options.timeout_s,
                    progress)
    try:
        with shared.watch.phase("source lines"):
            return lane.sources.close()
    except CountersUnavailable as exc:
        shared.listener.warn(f"source lines unavailable: {exc}")
        return {}


def close_profiler(lane: Lane, shared: _Shared) -> dict[int, dict[str, Counters]]:
    """End the lane's ncu session and read its counters (ncu prints them only then)."""
    try:
        with shared.watch.phase("counters"):
            return lane.profiler.close()
    except CountersUnavailable as exc:
        reason = without_counters(exc, shared.options.counters)
        with shared.lock:
            shared.counters.off(reason)
        return {}


def _publish(shared: _Shared, done: _Timed, counters: dict[str, Counters], lane: Lane,
             final: bool, sources: dict[str, SourceProfile] | None = None) -> None:
    """Analyse the family and put it in the result, in the order asked for (a timed
    family is replaced by its complete self); write the file; tell the listener."""
    with done.watch.phase("analysis"):
        measured = family_result(done.family, done.measurements, counters, shared.spec,
                                 lane.device, shared.calibration, sources or {})
    measured.timings = dict(done.watch.seconds)
    measured.device = lane.visible
    measured.cached_counters = sorted(set(done.cached) & set(counters))
    with shared.lock:
        families = [f for f in shared.result.families if f.name != measured.name] + [measured]
        shared.result.families = sorted(families, key=lambda f: shared.order.index(f.name))
        shared.result.timings = phases.totals([f.timings for f in families],
                                              shared.watch.seconds)
        if shared.options.json_path:
            write_result(shared.result, shared.options.json_path)
        shared.listener.timed(shared.result, measured)
        if final:
            shared.listener.finished(shared.result, measured)


def family_counters(family: ResolvedFamily, measurements: list[Measurement],
                    options: RunOptions, counters: CountersSwitch, progress: Progress,
                    device: DeviceInfo) -> dict[str, Counters]:
    """One family's counters in a profiler session of its own (`compare`'s sides), by the
    names the chip of ``device`` lists; falls back to model bytes if it can't (the switch
    goes off), or stops with ``--counters ncu``."""
    variants = profiled_variants(family, measurements)
    if not counters.on or not variants:
        return {}
    try:
        return profile(replace(family.job, variants=variants), 5 * options.timeout_s, progress,
                       ncu.metrics_for((v.precision for v in family.manifest.variants),
                                       ncu.listed_metrics(device.compute_capability)))
    except CountersUnavailable as exc:
        counters.off(without_counters(exc, options.counters))
        return {}


def profiled_variants(family: ResolvedFamily, measurements: list[Measurement]) -> list[VariantJob]:
    """The variants the counters pass profiles: those that ran and passed their check."""
    passed = {m.variant for m in measurements if m.status == Status.OK}
    return [v for v in family.job.variants if v.name in passed]
