"""`rooflint profile`: a whole program's kernels, ranked by what fixing them could save.

From the two passes' logs (every launch's duration: PyTorch's profiler trace, with the
operator and function behind each launch, or Nsight Compute's; counters on one launch of
each launch shape of the chosen kernels) to a result document in the common schema; only
profile_program runs anything (measure/program.py). Kernels are ranked by total GPU
time; the chosen ones are those that cover ``coverage`` of it (or the ``top`` N); pass 2's
launches meet them by identity (name_key, grid, block). Each becomes an Observation judged
by the same engine as a manifest variant, with no algorithmic intensity (nobody counted
its compulsory bytes), a library kernel leading with its caller's moves
(caller_moves.py), and gets its share of the program's time and its upside: the time its
best move could save, by the same arithmetic that ranks the moves (moves.gain): total
time x (1 - 1 / the move's estimated speed-up), the nearest roof's distance where the
move has no estimate. A kernel whose best move could save no more than 1 - NEAR_ROOF of
its time, or one at AT_ROOF of its nearest roof with no evidence of waste, is done.
"""

from __future__ import annotations

import math
import re
from collections import Counter as Tally
from dataclasses import dataclass, field, replace
from typing import Callable

from rooflint.analysis import calibration as calibrations
from rooflint.analysis import caller_moves as library_moves
from rooflint.formats import kernel_models
from rooflint.analysis.counters import Counters
from rooflint.analysis.evidence import AT_ROOF, NEAR_ROOF, LaunchFacts, l1_fraction, l2_fraction
from rooflint.formats.gpus import DeviceInfo, GpuSpec
from rooflint.measure.program import Choice, Filters, Pass, Stopped, Timer
from rooflint.measure.ncu import parse_rows, summarize
from rooflint.measure.protocol import Clocks
from rooflint.analysis.diagnose import Move, Verdict
from rooflint.common.errors import RooflintError
from rooflint.formats.kernel_models import KernelModel, model_for
from rooflint.analysis.moves import keeps_precision
from rooflint.analysis.observation import Model, Observation, analyse
from rooflint.common.paths import portable_path
from rooflint.formats.results import FamilyResult, KernelShare, RunResult, TimeStats, VariantResult
from rooflint.formats.trace_events import (Launch, Origin, launches as trace_launches, origins,
                                   tensor_precisions, union_unless_any)
from rooflint.common.units import counted, format_time

DEFAULT_COVERAGE = 0.90
ORIGINS_KEPT = 3                 # a kernel's most frequent origins a result keeps
# What pass 2 costs a profiled launch: rooflint's counter list takes 11 replay passes (H200).
PASS2_S_PER_LAUNCH = 0.5
NAME = "Kernel Name"
GRID = "Grid Size"
BLOCK = "Block Size"
DURATION = "gpu__time_duration.sum"

# Who wrote a kernel, from its name: (pattern, plain words). First match wins, so the
# specific patterns come before PyTorch's generic element-wise kernels that wrap them.
LIBRARIES = (
    (r"^triton_", library_moves.INDUCTOR),
    (r"nccl", library_moves.NCCL),
    (r"^nvjet_|gemm|cutlass|xmma|cublas", library_moves.GEMM),
    (r"fmha|flash|sdpa|attention", library_moves.ATTENTION),
    (r"layer_norm|layernorm|rms_norm|GammaBeta", library_moves.NORM),
    (r"Gelu|gelu", library_moves.GELU),
    (r"SoftMax|softmax_warp|log_softmax|nll_loss|cross_entropy", library_moves.SOFTMAX),
    (r"multi_tensor_apply|lpnorm", library_moves.OPTIMIZER),
    (r"copy_kernel|direct_copy|CatArrayBatchedCopy", library_moves.CAST),
    (r"FillFunctor", library_moves.FILL),
    (r"embedding|indexSelect|index_select", library_moves.EMBEDDING),
    (r"distribution_|normal_kernel|curand", library_moves.RANDOM),
    (r"vectorized_elementwise_kernel|elementwise_kernel|unrolled_elementwise",
     library_moves.ELEMENTWISE),
    (r"reduce_kernel", library_moves.REDUCTION),
    (r"cupy_", library_moves.CUPY),
)


@dataclass
class KernelTime:
    """One kernel at one grid shape in the duration pass: a library kernel launched at two
    sizes (cuBLAS's GEMM for the QKV and the MLP projections) is two of these, each with
    its own time and its own verdict."""

    kernel: str                     # the demangled name
    grid: str                       # "(1056, 1, 1)"
    durations_s: list[float] = field(default_factory=list)
    block: str = ""                 # "(256, 1, 1)"
    origins: list[Origin] = field(default_factory=list)   # from the profiler's trace
    # The tensor-core precisions its launches' operators name (the profiler's trace);
    # None: any (launched outside PyTorch's ATen operators, or timed by ncu).
    tensor_precisions: frozenset[str] | None = None

    @property
    def identity(self) -> Identity:
        return name_key(self.kernel), self.grid, self.block

    @property
    def total_s(self) -> float:
        return sum(self.durations_s)

    @property
    def blocks(self) -> int:
        return math.prod(int(n) for n in re.findall(r"\d+", self.grid)) if self.grid else 0


# What a launch is, whichever run of the program it came from: its name's key (see
# name_key), the grid and the block. Pass 2's launches are matched to pass 1's kernels by
# it, never by position, since two runs of one program need not launch in the same order.
Identity = tuple[str, str, str]

# Words two demanglers place differently or only one writes (ncu: "lambda instance 1",
# "(T1 *, ...)"; the C++ runtime's: "lambda #1", "(float const*, ...)").
_DEMANGLER_WORDS = {"const", "volatile", "void", "unsigned", "signed", "struct", "class",
                    "instance", "anonymous", "namespace", "unnamed"}


def name_key(name: str) -> str:
    """A demangled kernel name reduced to what any demangler writes alike, so that pass 1's
    names (PyTorch's profiler, from the C++ runtime's demangler) and pass 2's (Nsight
    Compute's own) meet: the parameter list, namespaces, integer suffixes (``32u``), casts
    of enum constants (``(NormType)1``) and the words in _DEMANGLER_WORDS are dropped,
    ``false``/``true`` read as 0/1; what is left are the function's and its template
    arguments' own names and numbers, in order."""
    head = _without_parameters(name)
    head = re.sub(r"\((?:[A-Za-z_][\w:]*)\)(?=-?\d)", "", head)         # (NormType)1 -> 1
    words = re.findall(r"[A-Za-z_]\w*(?:::)?|\d+", head)
    kept = [{"false": "0", "true": "1"}.get(w, w) for w in words
            if not w.endswith("::") and w not in _DEMANGLER_WORDS
            and not re.fullmatch(r"u|ul|ull|l|ll", w)]
    return " ".join(kept)


def _without_parameters(name: str) -> str:
    """``void k<T>(float*, int)`` -> ``void k<T>``: the last top-level parenthesis group."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i]
    return name


def identity(row: dict) -> Identity:
    return name_key(str(row[NAME])), str(row.get(GRID, "")), str(row.get(BLOCK, ""))


def kernel_times(rows: list[dict]) -> list[KernelTime]:
    """Every distinct kernel, grid and block with its launch durations, the most GPU time
    first."""
    kernels: dict[Identity, KernelTime] = {}
    for row in rows:
        k = kernels.setdefault(identity(row), KernelTime(str(row[NAME]), str(row.get(GRID, "")),
                                                        block=str(row.get(BLOCK, ""))))
        k.durations_s.append(float(row[DURATION]) * 1e-9)
    return sorted(kernels.values(), key=lambda k: k.total_s, reverse=True)


def kernel_times_from_trace(launches: list[Launch]) -> list[KernelTime]:
    """kernel_times for the launches of PyTorch's profiler trace, each kernel with the
    operators and Python lines its launches came from."""
    groups: dict[Identity, list[Launch]] = {}
    for launch in launches:
        groups.setdefault((name_key(launch.name), launch.grid, launch.block), []).append(launch)
    kernels = [KernelTime(mine[0].name, mine[0].grid, [x.duration_s for x in mine],
                          block=mine[0].block, origins=origins(mine),
                          tensor_precisions=tensor_precisions(mine))
               for mine in groups.values()]
    return sorted(kernels, key=lambda k: k.total_s, reverse=True)


def selected(launches: list[Launch], nvtx: str | None, kernel: str | None,
             skip: int) -> list[Launch]:
    """The trace's launches that pass the same filters Nsight Compute applies to pass 2:
    inside the range ``nvtx``, a name matching ``kernel``, after the first ``skip``."""
    kept = [x for x in launches if (not nvtx or nvtx in x.ranges)
            and (not kernel or re.search(kernel, x.name))]
    return kept[skip:]


def counters_by_identity(chosen: list[KernelTime], rows: list[dict],
                         timed: list[KernelTime] | None = None) -> dict[Identity, Counters]:
    """Each chosen kernel's counters from pass 2's rows, found by identity wherever they
    sit in pass 2's launch order, averaged per launch, so two profiles that caught
    different numbers of its launches still compare (in `compare` and `gate`). A name the
    two demanglers still write apart (a lambda's enclosing template: ``T1`` for
    ``CUDAGeneratorImpl``) is matched on its function's name, grid and block when exactly
    one of pass 2's kernels and none other of pass 1's (``timed``) has those."""
    launches: dict[Identity, list[dict]] = {}
    for row in rows:
        launches.setdefault(identity(row), []).append(row)
    known = {k.identity for k in timed or chosen}
    loose: dict[Identity, list[Identity]] = {}
    for key in launches:
        if key not in known:
            loose.setdefault(_loosely(key), []).append(key)
    taken = {_loosely(k.identity) for k in timed or chosen if k.identity in launches}
    found = {}
    for k in chosen:
        mine = launches.get(k.identity)
        if not mine and _loosely(k.identity) not in taken:
            candidates = loose.get(_loosely(k.identity), [])
            mine = launches[candidates[0]] if len(candidates) == 1 else None
        if mine:
            found[k.identity] = per_launch(summarize(mine), len(mine))
    return found


def function_name(kernel: str) -> str:
    """The kernel's function, without namespaces, template arguments or parameters:
    what pass 2 selects its launches by (ncu's regular expressions on the template
    arguments as well lost cuBLAS's cluster GEMMs on an H100 and an H200: function names
    alone lose none)."""
    return name_key(kernel).split(" ", 1)[0]


def _loosely(key: Identity) -> Identity:
    """An identity with only the function's name of its name key."""
    name, grid, block = key
    return name.split(" ", 1)[0], grid, block


NO_COUNTERS = "no counters: not among pass 2's profiled launches"


def why_no_counters(k: KernelTime, rows: list[dict]) -> str:
    """The reason a chosen kernel's row has no counters, from what pass 2 did see."""
    shapes = sorted({f"grid {grid}, block {block}" for key, grid, block in map(identity, rows)
                     if key == k.identity[0]})
    if shapes:
        return (f"no counters: pass 2 saw this kernel only at other launch shapes "
                f"({'; '.join(shapes[:3])}), not at grid {k.grid}, block {k.block}")
    twins = sorted({str(row[NAME]) for row in rows if identity(row)[1:] == k.identity[1:]})
    if twins:
        return (f"no counters: pass 2 profiles one launch of each launch configuration, and "
                f"{short_name(twins[0])} took this one's (grid {k.grid}, block {k.block})")
    return NO_COUNTERS


def per_launch(c: Counters, launches: int) -> Counters:
    """Counters summed over ``launches`` launches, as the mean of one."""
    return replace(c, duration_s=c.duration_s / launches, dram_read=c.dram_read / launches,
                   dram_write=c.dram_write / launches, l2_bytes=c.l2_bytes / launches,
                   l1_bytes=c.l1_bytes / launches, local_bytes=c.local_bytes / launches,
                   flops={p: x / launches for p, x in c.flops.items()})


def choose(kernels: list[KernelTime], coverage: float = DEFAULT_COVERAGE,
           top: int | None = None) -> list[KernelTime]:
    """The top ``top`` kernels, or the fewest that together take ``coverage`` of the time."""
    if top is not None:
        return kernels[:top]
    total = sum(k.total_s for k in kernels) or 1.0
    chosen, covered = [], 0.0
    for k in kernels:
        if covered >= coverage * total:
            break
        chosen.append(k)
        covered += k.total_s
    return chosen


def library(kernel: str) -> str | None:
    return next((words for pattern, words in LIBRARIES if re.search(pattern, kernel)), None)


def short_name(kernel: str) -> str:
    """A demangled signature, shortened to what tells it apart: the function's name, and
    for a template the first named argument (``vectorized_elementwise_kernel<GeluCUDAKernelImpl>``)."""
    head = re.sub(r"<unnamed>::|\(anonymous namespace\)::", "", kernel)
    head = re.sub(r"^(void|auto)\s+", "", head.split("(")[0]).strip()
    base, _, arguments = head.partition("<")
    function = base.split("::")[-1] or base
    named = [n.split("::")[-1] for n in re.findall(r"[A-Za-z_][\w:]*", arguments)
             if not re.fullmatch(r"(c10::)?(BFloat16|Half|float|double|int|long|char|bool|"
                                 r"unsigned|const|std::array|signed|short)", n)]
    return f"{function}<{named[0]}>" if named else function


def unique_names(kernels: list[KernelTime]) -> dict[Identity, str]:
    """Identity -> a short name no other of the program's kernels shares: the grid's
    block count added where one kernel runs at several grids (``nvjet_..._TNT@1536``), then
    #2, #3 for whatever still collides."""
    grids = Tally(k.kernel for k in kernels)
    names: dict[Identity, str] = {}
    seen: Tally = Tally()
    for k in kernels:
        name = short_name(k.kernel) + (f"@{k.blocks}" if grids[k.kernel] > 1 else "")
        seen[name] += 1
        names[k.identity] = name if seen[name] == 1 else f"{name}#{seen[name]}"
    return names


def device_from(rows: list[dict], driver: str) -> DeviceInfo:
    """The GPU the program ran on, from the device attributes ncu prints with each launch."""
    row = rows[0]

    def attribute(name: str, default: float = 0.0) -> float:
        value = row.get(f"device__attribute_{name}", default)
        return float(value) if isinstance(value, (int, float)) else default
    clock = attribute("clock_rate")
    return DeviceInfo(
        name=str(row.get("device__attribute_display_name", "unknown GPU")),
        index=int(attribute("device_index")),
        compute_capability=f"{int(attribute('compute_capability_major'))}."
                           f"{int(attribute('compute_capability_minor'))}",
        sms=int(attribute("multiprocessor_count")), l2_bytes=int(attribute("l2_cache_size")),
        memory_bytes=int(attribute("total_memory")),
        max_sm_clock_mhz=clock / 1e3 if clock else None,
        max_mem_clock_mhz=attribute("memory_clock_rate") / 1e3 or None,
        driver=driver, cuda_runtime="", cupy="")


def dominant_precision(counters: Counters | None, spec: GpuSpec) -> str:
    """The precision most of the counted FLOPs ran in, if this GPU has a roof for it."""
    if counters and counters.flops:
        main = max(counters.flops, key=counters.flops.get)
        if main in spec.peaks:
            return main
    return "fp32"


# Launch times of one kernel this far apart (the next 15 % longer or more) are different
# shapes of a persistent kernel at one launch configuration, not noise: cuBLAS's GEMM at
# 10 us and 27 us, or 91, 258, 327 and 347 us, on the same grid.
SHAPE_GAP = 1.15


def shape_groups(durations: list[float]) -> list[list[float]]:
    """A kernel's launch durations, sorted, split wherever one is SHAPE_GAP longer than
    the one before."""
    ordered = sorted(durations)
    groups = [ordered[:1]]
    for duration in ordered[1:]:
        if duration >= groups[-1][-1] * SHAPE_GAP:
            groups.append([])
        groups[-1].append(duration)
    return groups


def mixed_shapes(time: KernelTime) -> tuple[TimeStats, str] | None:
    """For a kernel whose launch times spread because it ran several shapes at one launch
    configuration (two or more groups of launches, each of two or more, each tight): the
    time of its most frequent shape, and a note saying so; else None (one shape, or a
    spread no grouping explains, which stays noise)."""
    groups = shape_groups(time.durations_s)
    stats = [TimeStats.of(g) for g in groups]
    if len(groups) < 2 or not TimeStats.of(time.durations_s).noisy or \
            any(len(g) < 2 or s.noisy for g, s in zip(groups, stats)):
        return None
    main = max(range(len(groups)), key=lambda i: len(groups[i]))
    medians = ", ".join(format_time(s.median_s) for s in stats)
    return stats[main], (
        f"{len(groups)} shapes at one launch configuration (a persistent kernel; medians "
        f"{medians}): its times spread by shape, not noise; its time is the most frequent "
        f"shape's ({len(groups[main])} of {len(time.durations_s)} launches), its share "
        f"counts them all, its counters are the profiled launch's own")


def kernel_result(time: KernelTime, name: str, counters: Counters | None, region_s: float,
                  spec: GpuSpec, device: DeviceInfo,
                  calibration: calibrations.Calibration | None,
                  model: Model | None = None, missing: str = "") -> VariantResult:
    """One kernel judged as any variant is, with its share and upside; with the user's
    ``model`` of it (see kernel_models), its algorithmic intensity too; without counters,
    ``missing`` says why. A library kernel's verdict leads with its caller's moves
    (caller_moves.py); its upside stays the kernel-level arithmetic."""
    precision = dominant_precision(counters, spec)
    analysis = analyse(Observation(
        name=name, precision=precision, samples_s=time.durations_s, counters=counters,
        model=model, grid_blocks=counters.grid_size if counters else 0,
        threads_per_block=0, launches=1,
        point_time_s=counters.duration_s if counters else None), spec, device.sms, calibration)
    best = best_fraction(analysis.point, counters, calibration, precision, device.sms)
    owner = library(time.kernel)
    mix = mixed_shapes(time)
    stats, notes = (mix[0], [*analysis.notes, mix[1]]) if mix else (analysis.time,
                                                                   analysis.notes)
    share = KernelShare(
        kernel=time.kernel, library=owner, launches=len(time.durations_s),
        total_s=time.total_s, share=time.total_s / region_s if region_s else 0.0,
        best_fraction=best, upside_s=upside(time.total_s, analysis.verdict, best),
        origins=time.origins[:ORIGINS_KEPT])
    return VariantResult(
        name=name, description=time.kernel, status="ok",
        message="" if counters else missing,
        baseline=False, source_sha256=None, precision=precision, tolerance=0.0, checks=[],
        samples_s=time.durations_s, time=stats, clocks=Clocks(), gpm={},
        graph_time=None, flops=analysis.flops, dram_bytes=analysis.dram_bytes,
        counters=counters, notes=notes, roofs=analysis.roofs, point=analysis.point,
        verdict=analysis.verdict and library_moves.with_caller_moves(analysis.verdict, owner),
        expect={}, expectation_mismatch=None, versus=None,
        speed_vs_baseline=None, share=share, levels=analysis.levels)


def best_fraction(point, counters: Counters | None, calibration, precision: str,
                  sms: int) -> float | None:
    """The fraction of its nearest roof a kernel reaches: DRAM, L2 (when calibrated), L1
    or compute. 1 - this is how much of its time a perfect fix could save."""
    if point is None:
        return None
    facts = LaunchFacts(grid_blocks=0, threads_per_block=0, launches=1, sms=sms,
                        precision=precision,
                        l2_roof=calibrations.bandwidth(calibration, "l2"))
    l2 = l2_fraction(point, facts, counters) or 0.0
    return max(point.dram_fraction, point.compute_fraction, l2, l1_fraction(counters, sms))


def upside(total_s: float, verdict: Verdict | None, best: float | None) -> float | None:
    """The time the kernel's best move at its precision could save: total x (1 - 1/gain),
    with the speed-up the move ranking estimated for it; the nearest roof's distance
    (gain 1/best) where that move has none. A move that trades precision (fp8) is not
    counted: the kernel is judged as written."""
    if verdict is None or best is None:
        return None
    move = best_move(verdict)
    gain = move.gain if move and move.gain else 1 / max(best, 1e-9)
    return total_s * max(0.0, 1 - 1 / gain)


def best_move(verdict: Verdict) -> Move | None:
    """The first kernel-level move that keeps the kernel's precision (the moves are ranked
    by gain; a caller's move has no estimate of its own)."""
    return next((m for m in verdict.moves
                 if keeps_precision(m.id) and m.gain_from != library_moves.CALLER), None)


def is_done(v: VariantResult) -> bool:
    """Nothing worth fixing: its best move could save no more than 1 - NEAR_ROOF of its
    time, or it is at AT_ROOF of its nearest roof (compute, or any memory level) and no
    evidence of its own (wasted bytes, idle SMs...) promises more than that roof's distance."""
    if not (v.share and v.share.upside_s is not None and v.verdict):
        return False
    move = best_move(v.verdict)
    wasteful = move is not None and move.gain_from == "evidence"
    at_roof = (v.share.best_fraction or 0.0) >= AT_ROOF and not wasteful
    return at_roof or v.share.upside_s <= (1 - NEAR_ROOF) * v.share.total_s


def by_upside(variants: list[VariantResult]) -> list[VariantResult]:
    """The application view's order: the most time a fix could save first."""
    return sorted(variants, key=lambda v: -(v.share.upside_s or 0.0) if v.share else 0.0)


def profile_result(program: str, directory: str, kernels: list[KernelTime],
                   chosen: list[KernelTime], counters: dict[Identity, Counters],
                   spec: GpuSpec,
                   device: DeviceInfo, calibration: calibrations.Calibration | None,
                   settings: dict, models: list[KernelModel] | None = None,
                   missing: dict[Identity, str] | None = None) -> RunResult:
    """The result document of a profile: one family (the program), one variant per chosen
    kernel (those without counters with the reason in ``missing``); the rest of the GPU
    time is summarised in the settings."""
    region = sum(k.total_s for k in kernels)
    names = unique_names(chosen)
    variants = [kernel_result(k, names[k.identity], counters.get(k.identity), region, spec,
                              device, calibration,
                              model_for((k.kernel, names[k.identity]), models or []),
                              (missing or {}).get(k.identity, NO_COUNTERS))
                for k in chosen]
    rest = kernels[len(chosen):]
    settings = {**settings, "mode": "profile", "gpu_time_s": region,
                "kernels": len(kernels), "other_kernels": len(rest),
                "other_share": sum(k.total_s for k in rest) / region if region else 0.0,
                **calibrations.settings(calibration)}
    result = RunResult(gpu=device, spec_id=spec.id, settings=settings)
    result.families.append(FamilyResult(name=program, directory=directory, params={},
                                        baseline=None, variants=by_upside(variants)))
    return result


@dataclass
class ProfileOptions:
    command: list[str]
    coverage: float = DEFAULT_COVERAGE
    top: int | None = None
    nvtx: str | None = None
    kernel: str | None = None
    skip: int = 0
    gpu: str | None = None
    logs: str | None = None          # keep Nsight Compute's CSV logs in this directory
    model: str | None = None         # a kernel_models file: kernels' FLOPs and bytes


def profile_program(options: ProfileOptions, say: Callable[[str], None]
                    ) -> tuple[RunResult, Stopped | None]:
    """Both passes over the program (the only part that runs anything), then the analysis.
    ``say`` hears what is about to happen, before the longer second pass, and how long a
    long pass has run. A pass 2 that failed or was interrupted leaves a result of pass 1's
    kernel times, each chosen kernel's row saying why it has no counters, and what stopped
    it (else None)."""
    from pathlib import Path

    from rooflint.formats.gpus import load_specs
    from rooflint.measure import program as passes
    from rooflint.commands.judge import device_spec
    from rooflint.commands.run import check_gpu_option

    models = kernel_models.load(Path(options.model)) if options.model else []  # mistakes first
    check_program(options.command)
    check_gpu_option(options.gpu)
    passes.ncu_executable()                 # no ncu: say so before any program runs
    filters = passes.Filters(nvtx=options.nvtx, kernel=options.kernel, skip=options.skip)
    logs = Path(options.logs) if options.logs else None
    say(f"pass 1: timing every kernel launch of {' '.join(options.command)}")

    timed: dict[int, list[KernelTime]] = {}      # pass 1's kernels, parsed once per pass

    def kernels_of(first: passes.Pass) -> list[KernelTime]:
        if id(first) not in timed:
            timed[id(first)] = timed_kernels(first, filters)
        return timed[id(first)]

    def plan(first: passes.Pass) -> passes.Choice:
        """The kernels pass 2 profiles, said before it starts."""
        kernels = kernels_of(first)
        chosen = choose(kernels, options.coverage, options.top)
        covered = sum(k.total_s for k in chosen) / (sum(k.total_s for k in kernels) or 1.0)
        choice = pass2_choice(chosen)
        say(f"pass 1 ({first.timer.words}): {counted(len(kernels), 'kernel')} in "
            f"{first.wall_s:.1f} s; pass 2: counters on {len(chosen)} of them "
            f"({covered:.0%} of GPU time), the first launch of each kernel shape, tensor "
            f"FLOPs in {precisions_words(choice.tensor_precisions)}: about "
            f"{PASS2_S_PER_LAUNCH * len(chosen):.0f} s and the rest of the program")
        return choice

    first, second = passes.two_passes(options.command, filters, logs, plan, say)
    kernels = kernels_of(first)
    chosen = choose(kernels, options.coverage, options.top)
    profiled = parse_rows(second.log)
    counters = counters_by_identity(chosen, profiled, kernels)
    stopped = second.stopped
    choice = pass2_choice(chosen)
    missing = {k.identity: f"no counters: {stopped.why}" if stopped
               else why_no_counters(k, profiled) for k in chosen if k.identity not in counters}
    device = device_of(first, profiled, passes.driver_version())
    specs = load_specs()
    spec = device_spec(device, options.gpu, specs)
    calibration = calibrations.find(spec.id, device.driver)
    settings = {"cache": "cold", "counters": "ncu", "command": options.command,
                "nvtx": options.nvtx, "kernel_filter": options.kernel, "skip": options.skip,
                "pass1_timer": first.timer.value,
                "pass1_wall_s": first.wall_s, "pass2_wall_s": second.wall_s,
                "pass2_profiled_launches": len(profiled), "model": options.model,
                "pass2_kernels": choice.functions,
                "pass2_tensor_precisions": _sorted_or_none(choice.tensor_precisions),
                "pass2_started_early": second.attached,
                "pass2_stopped": stopped.why if stopped else None}
    return profile_result(program_name(options.command), portable_path(Path.cwd()), kernels,
                          chosen, counters, spec, device, calibration, settings, models,
                          missing), stopped


def pass2_choice(chosen: list[KernelTime]) -> Choice:
    """Pass 2's functions, and the tensor precisions the chosen kernels' operators name
    (all of them when one kernel's operators are unknown)."""
    return Choice(sorted({function_name(k.kernel) for k in chosen}),
                  union_unless_any(k.tensor_precisions for k in chosen))


def precisions_words(precisions: frozenset[str] | None) -> str:
    """``bf16-tensor and tf32-tensor (what its operators' inputs name)``."""
    if precisions is None:
        return "every precision"
    if not precisions:
        return "no precision (no operator of theirs had a tensor-core dtype)"
    return f"{' and '.join(sorted(precisions))} (what their operators' inputs name)"


def _sorted_or_none(values: frozenset[str] | None) -> list[str] | None:
    return None if values is None else sorted(values)


def device_of(first: Pass, profiled: list[dict], driver: str) -> DeviceInfo:
    """The GPU the program ran on: from the attributes ncu prints with each launch of
    pass 2, or of pass 1 when pass 2 stopped before any; from the device properties in
    PyTorch's profiler trace when ncu printed none."""
    rows = profiled or (parse_rows(first.log) if first.timer == Timer.ncu else [])
    return device_from(rows, driver) if rows else device_from_trace(first.trace or {}, driver)


def device_from_trace(trace: dict, driver: str) -> DeviceInfo:
    """The GPU the trace's kernels ran on, from its ``deviceProperties`` (which name no L2
    size and no clocks)."""
    devices = {d.get("id"): d for d in trace.get("deviceProperties") or []
               if isinstance(d, dict)}
    used = Tally(e.get("args", {}).get("device") for e in trace.get("traceEvents", [])
                 if isinstance(e, dict) and e.get("cat") == "kernel")
    ran_on = next((devices[i] for i, _ in used.most_common() if i in devices), None)
    if ran_on is None:
        raise RooflintError("the GPU is unknown: pass 2 stopped before Nsight Compute named "
                            "it, and PyTorch's profiler trace names none")

    def number(key: str) -> int:
        value = ran_on.get(key)
        return int(value) if isinstance(value, (int, float)) else 0
    return DeviceInfo(
        name=str(ran_on.get("name", "unknown GPU")), index=number("id"),
        compute_capability=f"{number('computeMajor')}.{number('computeMinor')}",
        sms=number("numSms"), l2_bytes=0, memory_bytes=number("totalGlobalMem"),
        max_sm_clock_mhz=None, max_mem_clock_mhz=None, driver=driver, cuda_runtime="",
        cupy="")


def check_program(command: list[str]) -> None:
    """The program to profile exists and can be run (said before ncu is looked for): a
    path that is an executable file, or a name found on PATH, as ncu will look for it."""
    import shutil
    from pathlib import Path

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


def timed_kernels(first: Pass, filters: Filters) -> list[KernelTime]:
    """Pass 1's kernels, from whichever timer took them; the profiler's trace is filtered
    here as ncu filtered its own launches."""
    if first.timer == Timer.torch:
        found = selected(trace_launches(first.trace or {}), filters.nvtx, filters.kernel,
                         filters.skip)
        if not found:
            raise RooflintError("no kernel launch in PyTorch's profiler trace passed --nvtx, "
                                "--kernel and --skip")
        return kernel_times_from_trace(found)
    return kernel_times(parse_rows(first.log))


def program_name(command: list[str]) -> str:
    """What to call the program: its script (``transformer_block.py``), else its executable."""
    from pathlib import Path
    script = next((a for a in command if a.endswith((".py", ".sh"))), None)
    return Path(script or command[0]).name
