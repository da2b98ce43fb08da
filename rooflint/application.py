"""`rooflint profile`: a whole program's kernels, ranked by what fixing them could save.

Pure: from the two Nsight Compute logs (every launch's duration; counters on one launch of
each chosen kernel) to a result document in the common schema. Kernels are ranked by
total GPU time; the chosen ones are those that cover ``coverage`` of it (or the ``top`` N);
each becomes an Observation judged by the same engine as a manifest variant, with no
algorithmic intensity (nobody counted its compulsory bytes), and gets its share of the
program's time and its upside: the time its best move could save, by the same arithmetic
that ranks the moves (moves.gain): total time x (1 - 1 / the move's estimated speed-up),
the nearest roof's distance where the move has no estimate. A kernel whose best move
could save no more than 1 - NEAR_ROOF of its time is done.
"""

from __future__ import annotations

import math
import re
from collections import Counter as Tally
from dataclasses import dataclass, field, replace
from typing import Callable

from rooflint import calibration as calibrations
from rooflint import kernel_models
from rooflint.counters import Counters
from rooflint.evidence import NEAR_ROOF, LaunchFacts, l1_fraction, l2_fraction
from rooflint.gpus import DeviceInfo, GpuSpec
from rooflint.measure.protocol import Clocks
from rooflint.diagnose import Verdict
from rooflint.kernel_models import KernelModel, model_for
from rooflint.moves import keeps_precision
from rooflint.observation import Model, Observation, analyse
from rooflint.paths import portable_path
from rooflint.results import FamilyResult, KernelShare, RunResult, VariantResult
from rooflint.units import counted

DEFAULT_COVERAGE = 0.90
# What pass 2 costs a profiled launch: rooflint's counter list takes 11 replay passes (H200).
PASS2_S_PER_LAUNCH = 0.5
NAME = "Kernel Name"
DURATION = "gpu__time_duration.sum"

# Who wrote a kernel, from its name: (pattern, plain words). First match wins.
LIBRARIES = (
    (r"^triton_", "Triton (torch.compile)"),
    (r"^nvjet_|gemm|cutlass|xmma|cublas", "cuBLAS GEMM"),
    (r"fmha|flash|sdpa|attention", "attention (cuDNN / flash)"),
    (r"layer_norm|layernorm|rms_norm", "normalisation (PyTorch)"),
    (r"Gelu|gelu", "GELU (PyTorch element-wise)"),
    (r"softmax", "softmax"),
    (r"vectorized_elementwise_kernel|elementwise_kernel|unrolled_elementwise", "PyTorch element-wise"),
    (r"reduce_kernel", "PyTorch reduction"),
    (r"distribution_|normal_kernel|curand", "random numbers (PyTorch)"),
    (r"cupy_", "CuPy kernel"),
)


@dataclass
class KernelTime:
    """One kernel at one grid shape in the duration pass: a library kernel launched at two
    sizes (cuBLAS's GEMM for the QKV and the MLP projections) is two of these, each with
    its own time and its own verdict."""

    kernel: str                     # the demangled name
    grid: str                       # "(1056, 1, 1)"
    durations_s: list[float] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)   # in pass 1's launch order

    @property
    def total_s(self) -> float:
        return sum(self.durations_s)

    @property
    def blocks(self) -> int:
        return math.prod(int(n) for n in re.findall(r"\d+", self.grid)) if self.grid else 0


def kernel_times(rows: list[dict]) -> list[KernelTime]:
    """Every distinct kernel and grid with its launch durations, the most GPU time first."""
    kernels: dict[tuple[str, str], KernelTime] = {}
    for position, row in enumerate(rows):
        key = (str(row[NAME]), str(row.get("Grid Size", "")))
        k = kernels.setdefault(key, KernelTime(*key))
        k.durations_s.append(float(row[DURATION]) * 1e-9)
        k.positions.append(position)
    return sorted(kernels.values(), key=lambda k: k.total_s, reverse=True)


def window(chosen: list[KernelTime]) -> tuple[int, int]:
    """The shortest run of consecutive launches (first, last position) that holds at least
    one launch of every chosen kernel: what pass 2 profiles."""
    launches = sorted((p, i) for i, k in enumerate(chosen) for p in k.positions)
    need, held, best = len(chosen), Tally(), (launches[0][0], launches[-1][0])
    start = 0
    for end, (position, kernel) in enumerate(launches):
        held[kernel] += 1
        while len(held) == need:
            first = launches[start][0]
            if position - first < best[1] - best[0]:
                best = (first, position)
            held[launches[start][1]] -= 1
            if not held[launches[start][1]]:
                del held[launches[start][1]]
            start += 1
    return best


def counters_in_window(chosen: list[KernelTime], rows: list[dict], first: int
                       ) -> dict[tuple[str, str], Counters]:
    """Each chosen kernel's counters from pass 2, whose rows are launches first, first+1, ...
    of pass 1's order: its launches inside the window (names checked), averaged per launch,
    so a kernel run at two sizes in one step counts both, and two profiles whose windows
    hold different numbers of its launches still compare (in `compare` and `gate`)."""
    from rooflint.measure.ncu import summarize
    found = {}
    for k in chosen:
        mine = [rows[p - first] for p in k.positions
                if 0 <= p - first < len(rows) and str(rows[p - first][NAME]) == k.kernel]
        if mine:
            found[(k.kernel, k.grid)] = per_launch(summarize(mine), len(mine))
    return found


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


def unique_names(kernels: list[KernelTime]) -> dict[tuple[str, str], str]:
    """(kernel, grid) -> a short name no other of the program's kernels shares: the grid's
    block count added where one kernel runs at several grids (``nvjet_..._TNT@1536``), then
    #2, #3 for whatever still collides."""
    grids = Tally(k.kernel for k in kernels)
    names: dict[tuple[str, str], str] = {}
    seen: Tally = Tally()
    for k in kernels:
        name = short_name(k.kernel) + (f"@{k.blocks}" if grids[k.kernel] > 1 else "")
        seen[name] += 1
        names[(k.kernel, k.grid)] = name if seen[name] == 1 else f"{name}#{seen[name]}"
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


def kernel_result(time: KernelTime, name: str, counters: Counters | None, region_s: float,
                  spec: GpuSpec, device: DeviceInfo,
                  calibration: calibrations.Calibration | None,
                  model: Model | None = None) -> VariantResult:
    """One kernel judged as any variant is, with its share and upside; with the user's
    ``model`` of it (see kernel_models), its algorithmic intensity too."""
    precision = dominant_precision(counters, spec)
    analysis = analyse(Observation(
        name=name, precision=precision, samples_s=time.durations_s, counters=counters,
        model=model, grid_blocks=counters.grid_size if counters else 0,
        threads_per_block=0, launches=1,
        point_time_s=counters.duration_s if counters else None), spec, device.sms, calibration)
    best = best_fraction(analysis.point, counters, calibration, precision, device.sms)
    share = KernelShare(
        kernel=time.kernel, library=library(time.kernel), launches=len(time.durations_s),
        total_s=time.total_s, share=time.total_s / region_s if region_s else 0.0,
        best_fraction=best, upside_s=upside(time.total_s, analysis.verdict, best))
    return VariantResult(
        name=name, description=time.kernel, status="ok",
        message="" if counters else "not profiled in pass 2 (no counters)",
        baseline=False, source_sha256=None, precision=precision, tolerance=0.0, checks=[],
        samples_s=time.durations_s, time=analysis.time, clocks=Clocks(), gpm={},
        graph_time=None, flops=analysis.flops, dram_bytes=analysis.dram_bytes,
        counters=counters, notes=analysis.notes, roofs=analysis.roofs, point=analysis.point,
        verdict=analysis.verdict, expect={}, expectation_mismatch=None, versus=None,
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
    return max(point.dram_fraction, point.compute_fraction, l2, l1_fraction(counters))


def upside(total_s: float, verdict: Verdict | None, best: float | None) -> float | None:
    """The time the kernel's best move at its precision could save: total x (1 - 1/gain),
    with the speed-up the move ranking estimated for it; the nearest roof's distance
    (gain 1/best) where that move has none. A move that trades precision (fp8) is not
    counted: the kernel is judged as written."""
    if verdict is None or best is None:
        return None
    move = next((m for m in verdict.moves if keeps_precision(m.id)), None)
    gain = move.gain if move and move.gain else 1 / max(best, 1e-9)
    return total_s * max(0.0, 1 - 1 / gain)


def is_done(v: VariantResult) -> bool:
    """Its best move could save no more than 1 - NEAR_ROOF of its time (a kernel at
    NEAR_ROOF of its nearest roof with no move promising more): nothing worth fixing."""
    return bool(v.share and v.share.upside_s is not None
                and v.share.upside_s <= (1 - NEAR_ROOF) * v.share.total_s)


def by_upside(variants: list[VariantResult]) -> list[VariantResult]:
    """The application view's order: the most time a fix could save first."""
    return sorted(variants, key=lambda v: -(v.share.upside_s or 0.0) if v.share else 0.0)


def profile_result(program: str, directory: str, kernels: list[KernelTime],
                   chosen: list[KernelTime], counters: dict[tuple[str, str], Counters],
                   spec: GpuSpec,
                   device: DeviceInfo, calibration: calibrations.Calibration | None,
                   settings: dict, models: list[KernelModel] | None = None) -> RunResult:
    """The result document of a profile: one family (the program), one variant per chosen
    kernel; the rest of the GPU time is summarised in the settings."""
    region = sum(k.total_s for k in kernels)
    names = unique_names(chosen)
    variants = [kernel_result(k, names[key], counters.get(key), region, spec, device,
                              calibration, model_for((k.kernel, names[key]), models or []))
                for k in chosen for key in [(k.kernel, k.grid)]]
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


def profile_program(options: ProfileOptions, say: Callable[[str], None]) -> RunResult:
    """Both passes over the program (the only part that runs anything), then the analysis.
    ``say`` hears what is about to happen, before the longer second pass."""
    from pathlib import Path

    from rooflint.gpus import load_specs
    from rooflint.measure import application as passes
    from rooflint.measure.ncu import parse_rows
    from rooflint.run import device_spec

    models = kernel_models.load(Path(options.model)) if options.model else []  # mistakes first
    passes.ncu_executable()                 # no ncu: say so before any program runs
    filters = passes.Filters(nvtx=options.nvtx, kernel=options.kernel, skip=options.skip)
    logs = Path(options.logs) if options.logs else None
    say(f"pass 1: timing every kernel launch of {' '.join(options.command)}")

    def plan(first: passes.Pass) -> tuple[int, int]:
        """Pass 2's window from pass 1's log, said before pass 2 starts."""
        kernels = kernel_times(parse_rows(first.log))
        chosen = choose(kernels, options.coverage, options.top)
        begin, end = window(chosen)
        covered = sum(k.total_s for k in chosen) / (sum(k.total_s for k in kernels) or 1.0)
        say(f"pass 2: counters on {len(chosen)} of {counted(len(kernels), 'kernel')} "
            f"({covered:.0%} of GPU time), {counted(end - begin + 1, 'launch', 'launches')}: "
            f"about {PASS2_S_PER_LAUNCH * (end - begin + 1):.0f} s and the rest of the program")
        return begin, end - begin + 1

    first, second = passes.two_passes(options.command, filters, logs, plan, say)
    rows = parse_rows(first.log)
    kernels = kernel_times(rows)
    chosen = choose(kernels, options.coverage, options.top)
    first_launch, last_launch = window(chosen)
    counters = counters_in_window(chosen, parse_rows(second.log), first_launch)
    device = device_from(rows, passes.driver_version())
    specs = load_specs()
    spec = device_spec(device, options.gpu, specs)
    calibration = calibrations.find(spec.id, device.driver)
    settings = {"cache": "cold", "counters": "ncu", "command": options.command,
                "nvtx": options.nvtx, "kernel_filter": options.kernel, "skip": options.skip,
                "pass1_wall_s": first.wall_s, "pass2_wall_s": second.wall_s,
                "pass2_launches": [first_launch, last_launch], "model": options.model,
                "pass2_started_early": second.attached}
    return profile_result(program_name(options.command), portable_path(Path.cwd()), kernels,
                          chosen, counters, spec, device, calibration, settings, models)


def program_name(command: list[str]) -> str:
    """What to call the program: its script (``transformer_block.py``), else its executable."""
    from pathlib import Path
    script = next((a for a in command if a.endswith((".py", ".sh"))), None)
    return Path(script or command[0]).name
