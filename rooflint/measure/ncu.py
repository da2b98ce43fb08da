"""Nsight Compute: the command that profiles a worker, and the parser of its CSV.

The profile pass runs the measurement worker under ``ncu`` with profiling off at start;
the worker turns it on around exactly one run of each variant, inside an NVTX range named
after the variant's position in the session. Everything else (input set-up, the warm-up
run, L2 flushes) is never profiled, so a variant costs only its own kernels' replay
passes, and every launch inside its range is that variant's, however many a library call
makes. (A marker kernel did this job before: replayed like any kernel, it cost 0.16 s
per variant on an H100; ``--nvtx`` writes each launch's range stack in a column instead.)

The source pass (``run --source``) profiles each variant once more with the SourceCounters
section into a report, then reads it back (measure/source_report.py: through NVIDIA's
ncu_report module where it imports, else as here): the raw page says which launches ran in
which variant's range, and the source page of each launch (``--print-source cuda,sass``)
gives its counters summed per line of the CUDA source, which NVRTC and nvcc builds carry.

The counters are named as on Hopper, where they were measured; a GPU of another chip is
asked for them by the names its Nsight Compute lists for that chip (on_chip), since ncu
answers a name the chip lacks with "n/a", not an error.

This module imports no CuPy: the parsers are tested on CSVs recorded on our H100 and H200,
the names on the metric lists of the chips rooflint has specs for (but the V100's).
"""

from __future__ import annotations

import functools
import math
import re
import shutil
import subprocess
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rooflint.common.vocabularies import CacheMode, Precision
from rooflint.analysis.causes import STALL_REASONS
from rooflint.analysis import occupancy
from rooflint.analysis.counters import Counters
from rooflint.analysis.sourcelines import (Instruction, Place, SourceLine, SourceProfile,
                                           profile_of, with_inlined_code)
from rooflint.common.errors import RooflintError
from rooflint.common.paths import cache_dir
from rooflint.formats.jsonfile import replacing
from rooflint.formats.ncu_log import DURATION, ID, KERNEL_NAME, number, parse_rows

VARIANT_RANGE = "rooflint-variant"    # the NVTX range around a variant's profiled run
_RANGE_INDEX = re.compile(rf"{VARIANT_RANGE}/(\d+)")
NVTX_STACK = "Push/Pop_Range"   # in the name of the column holding each launch's ranges

# FLOPs per precision: add + mul + 2 x fma, from SASS thread-instruction counters.
SASS_FLOPS = {
    Precision.FP32: ("fadd", "fmul", "ffma"),
    Precision.FP16: ("hadd", "hmul", "hfma"),
    Precision.FP64: ("dadd", "dmul", "dfma"),
}
# Tensor-pipe operations (already FLOPs: an MMA's multiply and add are two ops).
TENSOR_FLOPS = {
    Precision.FP16_TENSOR: "sm__ops_path_tensor_src_fp16.sum",
    Precision.BF16_TENSOR: "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    Precision.TF32_TENSOR: "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    Precision.FP8_TENSOR: "sm__ops_path_tensor_src_fp8.sum",
    Precision.INT8_TENSOR: "sm__ops_path_tensor_src_int8.sum",
    Precision.FP64_TENSOR: "sm__ops_path_tensor_src_fp64.sum",
}
DRAM_READ, DRAM_WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
L2_BYTES, L1_BYTES = "lts__t_bytes.sum", "l1tex__t_bytes.sum"
LOCAL_BYTES = ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
               "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
# The special-function unit (exp2, sin, rsqrt...): its instructions queue in MIO, so a busy
# XU shows as mio_throttle stalls, the same reason shared memory gives.
XU_PIPE = "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"
# Whether (and how hard) the tensor cores worked, at no extra replay pass: the FLOPs of a
# tensor precision cost 1 to 3 passes each, so a run reads only those it declares.
TENSOR_PIPE = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
# L1 and shared memory: how busy against their peak, and whether a kernel's operands come
# from registers (FMAs per shared load) and its shared accesses collide in banks. How busy
# is the busier of the two L1 stages every load or store passes: the tag stage's sectors
# (where uncoalesced or spilled accesses queue) and the data pipe's wavefronts. The other
# three stages ncu counts follow the data pipe: each LSU request into L1 becomes one
# wavefront or more, and the data banks are read and written by wavefronts. On the training
# step's 46 kernels and the recorded probes (H100, H200) the two read within 3 % of the
# busiest of all five (tests/measure/test_ncu.py), and reading the other three took a ninth replay
# pass of every launch. (ncu's own l1tex__throughput, the maximum over these and the
# texture path's, takes six passes by itself.)
L1_STAGES = tuple(f"l1tex__{stage}.avg.pct_of_peak_sustained_active" for stage in (
    "t_sectors", "data_pipe_lsu_wavefronts"))
L1_THROUGHPUT = "l1tex__throughput.avg.pct_of_peak_sustained_active"   # in older recordings
SHARED_LOADS = "smsp__inst_executed_op_shared_ld.sum"
SHARED_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
BANK_CONFLICTS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
# Which tensor instructions ran: mma.sync (HMMA) or Hopper's warpgroup MMA (HGMMA and kin).
HMMA = "sm__inst_executed_pipe_tensor_op_hmma.sum"
GMMA = "sm__inst_executed_pipe_tensor_op_gmma.sum"
WAVES, REGISTERS = "launch__waves_per_multiprocessor", "launch__registers_per_thread"
GRID_SIZE, BLOCK_SIZE = "launch__grid_size", "launch__block_size"
# Per direction, what Nsight Compute's access-pattern and bank-conflict rules read: shared
# stores and their wavefronts (the loads' are the totals less these), and the 32-byte
# sectors and the requests of global accesses through L1 (a warp's coalesced request moves
# 4 to 16 sectors; its 4-byte stores 32 bytes apart, 32). ncu's own rule reads the bytes a
# thread asked for per sector, smsp__sass_average_data_bytes_per_sector_mem_global_op_*,
# which instruments the kernel: it doubled gemm_fp32's counter pass on an H100 (13.8 s
# against 6.8 s), where these hardware counts cost nothing.
SHARED_STORES = "smsp__inst_executed_op_shared_st.sum"
SHARED_STORE_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
GLOBAL_SECTORS = {direction: f"l1tex__t_sectors_pipe_lsu_mem_global_op_{direction}.sum"
                  for direction in ("ld", "st")}
GLOBAL_REQUESTS = {direction: f"l1tex__t_requests_pipe_lsu_mem_global_op_{direction}.sum"
                   for direction in ("ld", "st")}
# What bounds the resident warps (launch attributes: no replay pass) and how busy issue is.
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
OCCUPANCY_LIMITS = {limiter: f"launch__occupancy_limit_{key}" for limiter, key in zip(
    occupancy.LIMITERS, ("registers", "shared_mem", "warps", "blocks"))}
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
INSTRUCTIONS = "smsp__inst_executed.sum"


def _sass(op: str) -> str:
    return f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"


def _stall(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


# Bytes at each level, CUDA-core FLOPs, the tensor pipe's activity, occupancy, launch shape,
# L1 stages and stalls; with the access patterns below and bf16's tensor-path FLOPs, 8
# replay passes of each launch (benchmarks/replay_passes.py, H100; with five L1 stages, 9
# on an H100 and an H200 alike). Every other tensor precision read costs more (all six:
# METRICS).
SASS_FLOP_COUNTERS = tuple(_sass(op) for ops in SASS_FLOPS.values() for op in ops)
BASE_METRICS = [DURATION, DRAM_READ, DRAM_WRITE, L2_BYTES, L1_BYTES, *LOCAL_BYTES,
                *SASS_FLOP_COUNTERS,
                OCCUPANCY, XU_PIPE, TENSOR_PIPE, WAVES, REGISTERS, GRID_SIZE, BLOCK_SIZE,
                *[_stall(r) for r in STALL_REASONS],
                *L1_STAGES, SHARED_LOADS, SHARED_WAVEFRONTS, *BANK_CONFLICTS]
# Read since issue 24 (hardware counters and launch attributes: no instrumented pass).
ACCESS_PATTERN_METRICS = [SHARED_STORES, SHARED_STORE_WAVEFRONTS, *GLOBAL_SECTORS.values(),
                          *GLOBAL_REQUESTS.values(), THEORETICAL_OCCUPANCY,
                          *OCCUPANCY_LIMITS.values(), ISSUE_ACTIVE, INSTRUCTIONS]
BASE_METRICS += ACCESS_PATTERN_METRICS
TENSOR_INSTRUCTIONS = [HMMA, GMMA]   # read with any tensor precision
METRICS = [*BASE_METRICS, *TENSOR_FLOPS.values(), *TENSOR_INSTRUCTIONS]   # precisions unknown

# The names above are Hopper's (gh100), where every one was measured. Nsight Compute writes
# "n/a" for a metric the GPU's chip lacks, so each run asks for the names its chip lists
# (on_chip): a quantity another chip names otherwise, or counts in two metrics whose sum it
# is, has its names here in the order they are tried. Read off the metric lists and their
# descriptions of Nsight Compute 2025.3.1 (``ncu --query-metrics --chip``, kept in
# tests/fixtures/ncu/metrics) for tu104, ga100, ga102, ad102, gh100, gb100 and gb202.
_ALTERNATIVES: dict[str, tuple[tuple[str, ...], ...]] = {
    # gb202's "# of bytes read from DRAM" (and written), as gh100 describes its own.
    DRAM_READ: ((DRAM_READ,), ("dram__bytes_op_read.sum",)),
    DRAM_WRITE: ((DRAM_WRITE,), ("dram__bytes_op_write.sum",)),
    # ad102's lists deprecate the tensor pipe's metrics for their _v2 ("use ... instead").
    TENSOR_PIPE: (("sm__pipe_tensor_cycles_active_v2.avg.pct_of_peak_sustained_active",),
                  (TENSOR_PIPE,)),
    # Every floating-point MMA instruction: gh100's op_hmma counts HMMA, HFMA2.MMA, HGMMA and
    # QGMMA; ad102's HMMA and QMMA; gb100's tensor subpipe HMMA, UTCHMMA, UTCQMMA and
    # UTCOMMA, gb202's HMMA, QMMA and OMMA. (GMMA, wgmma, is Hopper's alone; gb100's
    # tcgen05 instructions, sm__inst_executed_pipe_tc, count barriers and copies with the
    # MMAs, so they are not read in its place.)
    HMMA: (("sm__inst_executed_pipe_tensor_op_hmma_v2.sum",), (HMMA,),
           ("sm__inst_executed_pipe_tensor_subpipe_hmma.sum",)),
    # Source FP16 into either destination: one metric on gh100, one per destination on the
    # others; tu104 counts its FP32 destination as "source FP16/BF16/TF32", of which Turing
    # has only FP16.
    TENSOR_FLOPS[Precision.FP16_TENSOR]: (
        (TENSOR_FLOPS[Precision.FP16_TENSOR],),
        ("sm__ops_path_tensor_src_fp16_dst_fp16.sum", "sm__ops_path_tensor_src_fp16_dst_fp32.sum"),
        ("sm__ops_path_tensor_src_fp16_dst_fp16.sum",
         "sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum")),
    # Source FP8: gb202 counts it per destination ("one source FP8, the other FP4/FP6/FP8");
    # gb100 only within its f8f6f4 MMAs (UTCQMMA: "source FP4/FP6/FP8"), which run FP4 and
    # FP6 operands at FP8's rate, so on its FP8 roof. (Its double-rate FP4, UTCOMMA, is apart.)
    TENSOR_FLOPS[Precision.FP8_TENSOR]: (
        (TENSOR_FLOPS[Precision.FP8_TENSOR],),
        ("sm__ops_path_tensor_src_fp8_dst_fp16.sum", "sm__ops_path_tensor_src_fp8_dst_fp32.sum"),
        ("sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp16.sum",
         "sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp32.sum")),
}
# What ncu computes from a launch itself: no chip's metric list names these.
LAUNCH_ATTRIBUTES = frozenset({WAVES, REGISTERS, GRID_SIZE, BLOCK_SIZE, THEORETICAL_OCCUPANCY,
                               *OCCUPANCY_LIMITS.values()})


def _names_of(metric: str) -> tuple[tuple[str, ...], ...]:
    """A quantity's names, in the order they are tried, each the metrics whose sum it is."""
    return _ALTERNATIVES.get(metric, ((metric,),))


def on_chip(metrics: Iterable[str], listed: frozenset[str] | None) -> list[str]:
    """``metrics`` as the chip whose metric list is ``listed`` (listed_names) names them:
    each quantity by the first of its names whose metrics are all listed; none where the
    chip lists none of them (wgmma before Hopper), so it is not asked and reads as not read.
    As they are where the chip is not known (None): Hopper's names."""
    if listed is None:
        return list(metrics)
    return list(dict.fromkeys(name for metric in metrics for name in _chosen(metric, listed)))


def _chosen(metric: str, listed: frozenset[str]) -> tuple[str, ...]:
    if metric in LAUNCH_ATTRIBUTES:
        return (metric,)
    return next((names for names in _names_of(metric)
                 if all(name.partition(".")[0] in listed for name in names)), ())


# A metric's line in ``ncu --query-metrics``: its name (no submetric suffix), then its type.
_LISTED = re.compile(r"^(\w+)\s+(?:Counter|Ratio|Throughput)\b", re.MULTILINE)


def listed_names(text: str) -> frozenset[str]:
    """The metric names an ``ncu --query-metrics --chip CHIP`` listing holds (the triage
    groups' ``UNIT.TriageCompute.name`` lines left out)."""
    return frozenset(_LISTED.findall(text))


class CountersUnavailable(RooflintError):
    """ncu is missing, not permitted, or failed; the run continues on model bytes."""


@functools.cache
def version() -> str | None:
    """Nsight Compute's version (``2025.3.1.0``), recorded with every result it took
    counters for (one release returned NaN counters on B200s); None if it will not say."""
    try:
        said = subprocess.run([ncu_path(), "--version"], capture_output=True, text=True,
                              timeout=60).stdout
    except (CountersUnavailable, OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"Version (\S+)", said)
    return found.group(1) if found else None


def ncu_path() -> str:
    path = shutil.which("ncu")
    if path is None:
        raise CountersUnavailable("ncu (Nsight Compute) is not on PATH; install Nsight Compute "
                                  "or run with --counters off")
    return path


# The chip Nsight Compute's --chip names, by compute capability: those of the GPUs rooflint
# has specs for (T4; A100; A10, RTX 3090; L4, L40S, RTX 4090; H100, H200, H20; B200, GB200;
# RTX 5090). A capability's chips list the same metrics (ga102's and ga104's lists are one,
# and so are ad102's and ad104's). gv100 (V100) is not in 2025.3.1's chips.
CHIPS = {"7.5": "tu104", "8.0": "ga100", "8.6": "ga102", "8.9": "ad102", "9.0": "gh100",
         "10.0": "gb100", "12.0": "gb202"}
QUERY_TIMEOUT_S = 120


def listed_metrics(compute_capability: str) -> frozenset[str] | None:
    """The metric names this Nsight Compute lists for the chip of a GPU of this compute
    capability: asked once (``ncu --query-metrics --chip``, no GPU needed) and kept in
    rooflint's cache by ncu version and chip. None where the chip is not one of CHIPS or ncu
    lists nothing for it: the names are then Hopper's."""
    chip = CHIPS.get(compute_capability)
    if chip is None:
        return None
    release = version()
    kept = cache_dir() / "ncu-metrics" / f"{release}-{chip}.txt"
    if release and kept.is_file():
        return frozenset(kept.read_text().split())
    try:
        said = subprocess.run([ncu_path(), "--query-metrics", "--chip", chip],
                              capture_output=True, text=True, timeout=QUERY_TIMEOUT_S).stdout
    except (CountersUnavailable, OSError, subprocess.TimeoutExpired):
        return None
    listed = listed_names(said)
    if not listed:
        return None
    if release:
        kept.parent.mkdir(parents=True, exist_ok=True)
        with replacing(kept) as temporary:
            temporary.write_text("\n".join(sorted(listed)) + "\n")
    return listed


# Every ncu run of rooflint's: clocks as the GPU sets them (never locked on a shared
# machine), one CSV row per launch with every metric, in base units.
CLOCKS_UNTOUCHED = ("--clock-control", "none")
CSV_OUTPUT = ("--csv", "--page", "raw", "--print-units", "base")
BASE_OPTIONS = (*CLOCKS_UNTOUCHED, *CSV_OUTPUT)
# Printed names: ncu's demangler's, in a CSV and in a report's lines alike.
DEMANGLED_NAMES = ("--print-kernel-base", "demangled")


def metrics_for(precisions: Iterable[str] | None, listed: frozenset[str] | None) -> list[str]:
    """What a run reads, as its GPU's chip names it (``listed``: listed_metrics): the base
    set, and the tensor-path FLOPs of the tensor precisions its variants declare (a tensor
    pipe busy under another precision shows in TENSOR_PIPE); all of them where the
    precisions are not known (None)."""
    if precisions is None:
        return on_chip(METRICS, listed)
    declared = set(precisions)
    tensor = [m for p, m in TENSOR_FLOPS.items() if p in declared]
    return on_chip([*BASE_METRICS, *tensor, *(TENSOR_INSTRUCTIONS if tensor else [])], listed)


def command(log_path: str, cache: str, metrics: list[str]) -> list[str]:
    """The ncu prefix for a worker: our launches only, each with its NVTX ranges, clocks
    untouched, CSV to a file."""
    return [ncu_path(), *BASE_OPTIONS, *_variant_ranges(cache),
            "--metrics", ",".join(metrics), "--log-file", log_path]


def _variant_ranges(cache: str) -> list[str]:
    """A worker's profiling session: off except around each variant's run, which the
    worker wraps in its NVTX range; caches flushed before each launch for a cold run."""
    return ["--profile-from-start", "off", "--nvtx",
            "--cache-control", "all" if cache == CacheMode.COLD else "none"]


# The source pass: one section (per-instruction stall samples and memory counters), the
# CUDA sources copied into the report as it is written.
SOURCE_SECTION = "SourceCounters"


@dataclass(frozen=True)
class SourceMeasure:
    """A SourceLine measure as Nsight Compute names it: the source page's column (a line's
    sum) and the instanced metric behind it (a value per instruction, which ncu_report
    gives with the instruction's address), as Nsight Compute's Profiling Guide pairs them."""

    name: str       # the SourceLine field
    column: str
    metric: str


SOURCE_MEASURES = (
    SourceMeasure("stall_samples", "Warp Stall Sampling (All Samples)",
                  "smsp__pcsamp_sample_count"),
    SourceMeasure("excessive_sectors", "L2 Theoretical Sectors Global Excessive",
                  "derived__memory_l2_theoretical_sectors_global_excessive"),
    SourceMeasure("bank_conflicts", "L1 Conflicts Shared N-Way",
                  "derived__memory_l1_conflicts_shared_nway"),
    SourceMeasure("barrier_samples", "stall_barrier",
                  "smsp__pcsamp_warps_issue_stalled_barrier"),
)
IMPORT_TIMEOUT_S = 300
IMPORTS_AT_ONCE = 8      # ncu -i reads one launch's page in about a second, on one core


def source_command(report: Path, cache: str) -> list[str]:
    """The ncu prefix for a worker in the source pass: as ``command``, but the
    SourceCounters section into a report (``report`` + .ncu-rep) with the sources in it."""
    return [ncu_path(), *CLOCKS_UNTOUCHED, *_variant_ranges(cache),
            "--section", SOURCE_SECTION, "--import-source", "yes", "-f", "-o", str(report)]


def _imported(report: Path, *page: str) -> str:
    """A page of a report, as CSV."""
    try:
        done = subprocess.run([ncu_path(), "-i", str(report), "--csv", *page],
                              capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CountersUnavailable(f"ncu took over {IMPORT_TIMEOUT_S} s to read its report "
                                  f"{report.name}") from None
    if done.returncode != 0:
        said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        raise CountersUnavailable(f"ncu could not read its report {report.name}: "
                                  f"{said[-1] if said else f'exit code {done.returncode}'}")
    return done.stdout


def read_source_csv(report: Path) -> dict[int, SourceProfile]:
    """Each profiled variant's source lines, by its NVTX range index, read with ``ncu -i``
    (a process for each launch: about a second each, eight at once): the raw page says
    which launches (by ID) ran in which range, each launch's source page gives its lines."""
    rows = parse_rows(raw_page(report))
    launches = {index: [int(row[ID]) for row in group]
                for index, group in split_by_variant(rows).items()}
    ids = [launch for group in launches.values() for launch in group]
    with ThreadPoolExecutor(IMPORTS_AT_ONCE) as pool:
        pages = dict(zip(ids, pool.map(lambda launch: launch_source_page(report, launch), ids)))
    return {index: profile_of(line for launch in group for line in source_page_lines(pages[launch]))
            for index, group in launches.items()}


def raw_page(report: Path) -> str:
    """A report's raw page as CSV (``ncu -i REPORT --csv --page raw``), in base units."""
    return _imported(report, "--page", "raw", "--print-units", "base")


def launch_source_page(report: Path, launch: int) -> str:
    """The CSV source page of the report's ``launch``-th launch (by ID), its CUDA lines with
    their instructions."""
    return _imported(report, "--page", "source", "--print-source", "cuda,sass",
                     "--launch-skip", str(launch), "--launch-count", "1")


def source_page_lines(text: str) -> list[SourceLine]:
    """The kernel's own lines of a launch's source page, inlined code at its callers'
    lines (sourcelines.with_inlined_code)."""
    rows, instructions = parse_source_page(text)
    return with_inlined_code(rows, instructions, {(r.file, r.line): r.text for r in rows})


def parse_source_page(text: str) -> tuple[list[SourceLine], list[Instruction]]:
    """The line rows and the instructions of a ``--page source --print-source cuda,sass
    --csv`` page. The page has a block per source file (``"File Path"``, ``"Function
    Name"``, the column names), in which a row with a line number sums that line's
    instructions and the rows after it, with none, are the instructions (an address, the
    SASS, the measures). An instruction inlined from another file is listed in each file's
    block its inline chain reaches. ncu does not escape quotes inside a field
    (``extern "C"``), so rows are split on the ``","`` between fields and any surplus is
    the line's text."""
    rows: list[SourceLine] = []
    places: dict[int, list[Place]] = {}
    measures: dict[int, dict[str, float]] = {}
    path, line, columns, width = "", 0, {}, 0
    for raw in text.splitlines():
        fields = raw.strip().rstrip(",").removeprefix('"').removesuffix('"').split('","')
        if fields[0] == "File Path" and len(fields) > 1:
            path = fields[1]
        elif fields[0] == "Line No":
            width = len(fields)
            columns = {measure.name: fields.index(measure.column) - width
                       for measure in SOURCE_MEASURES if measure.column in fields}
        elif fields[0].isdigit() and width and len(fields) >= width:
            line = int(fields[0])
            rows.append(SourceLine(path, line, '","'.join(fields[1:len(fields) - width + 2]),
                                   **{measure: _count(fields[at])
                                      for measure, at in columns.items()}))
        elif (not fields[0] and line and len(fields) >= width > 2
              and fields[2].startswith("0x")):
            address = int(fields[2], 16)
            places.setdefault(address, []).append((path, line))
            measures[address] = {measure: _count(fields[at]) for measure, at in columns.items()}
    return rows, [Instruction(address, tuple(dict.fromkeys(where)), measures[address])
                  for address, where in places.items()]


def _count(text: str) -> float:
    """A line's measure; 0 where the page has no number (``-``)."""
    value = number(text)
    return value if isinstance(value, float) else 0.0


@dataclass(frozen=True)
class Counting:
    """A profiler session's collection for the counter pass: the metrics, as CSV."""

    metrics: tuple[str, ...]
    suffix: str = ".csv"

    def command(self, output: Path, cache: str) -> list[str]:
        return command(str(output), cache, list(self.metrics))

    def read(self, output: Path) -> tuple[dict[int, Counters], str]:
        text = output.read_text() if output.exists() else ""
        return counters_by_index(text), text


def failure_reason(text: str, failures: Iterable[str] = ()) -> str:
    """One line saying why ncu produced nothing, with what to do for the known causes;
    ``failures`` are the worker's own reasons for the runs it could not make."""
    errors = [line.removeprefix("==ERROR==").strip() for line in text.splitlines()
              if line.startswith("==ERROR==")]
    joined = " ".join(errors)
    if "ERR_NVGPUCTRPERM" in joined:
        return ("ERR_NVGPUCTRPERM: this user may not read GPU performance counters (run as "
                "root, or set NVreg_RestrictProfilingToAdminUsers=0; see "
                "https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
    if "LibraryNotLoaded" in joined:
        return ("ncu could not load its profiling library (LibraryNotLoaded; seen in "
                "sandboxed containers such as gVisor)")
    if errors:
        return errors[0]
    return next(iter(failures), "ncu recorded no kernels")


def variant_range(index: int) -> str:
    """The NVTX range name of the session's ``index``-th profiled variant."""
    return f"{VARIANT_RANGE}/{index}"


def split_by_variant(rows: list[dict[str, float | str]]) -> dict[int, list[dict]]:
    """Launches grouped by the variant range they ran in; the key is the variant's index
    in the session. Launches outside every variant range (none are profiled) are left out."""
    groups: dict[int, list[dict]] = {}
    for row in rows:
        index = _variant_index(row)
        if index is not None:
            groups.setdefault(index, []).append(row)
    return groups


def _variant_index(row: dict[str, float | str]) -> int | None:
    return range_index(next((str(value) for key, value in row.items() if NVTX_STACK in key), ""))


def range_index(stack: str) -> int | None:
    """The index of the variant whose range a launch's NVTX ranges (as text) name, if any."""
    found = _RANGE_INDEX.search(stack)
    return int(found.group(1)) if found else None


def _columns(row: dict[str, float | str], metric: str) -> tuple[str, ...] | None:
    """The columns holding a quantity in a launch's row: the first of its names (_names_of)
    whose metrics the row all has (a log holds those its chip was asked for); None where
    it has none (not asked for)."""
    return next((names for names in _names_of(metric) if all(name in row for name in names)),
                None)


def _cell(row: dict[str, float | str], metric: str) -> float:
    """A quantity's number, the sum of its columns; NaN where the row has none or ncu wrote
    no number in one ("n/a"): a kernel whose counters hold one is refused by the analysis
    (counters.implausible), never averaged in."""
    values = [row[name] for name in _columns(row, metric) or ()]
    if not values or not all(isinstance(value, (int, float)) for value in values):
        return math.nan
    return float(sum(values))


def _read(rows: list[dict[str, float | str]], metric: str) -> bool:
    """Whether every launch has a number for the quantity: not where the log has no column
    for it or ncu wrote "n/a" there (a chip without the metric, asked for by Hopper's name)."""
    return all(not math.isnan(_cell(r, metric)) for r in rows)


def _whole(value: float) -> int:
    """A count (registers, blocks); 0 where ncu gave none."""
    return int(value) if math.isfinite(value) else 0


def summarize(rows: list[dict[str, float | str]]) -> Counters:
    """Sum a variant's launches; ratios are weighted by each launch's duration."""
    total_time = sum(_cell(r, DURATION) for r in rows) or 1.0

    def total(metric: str) -> float:
        return float(sum(_cell(r, metric) for r in rows))

    def optional(metric: str) -> float:
        """A sum that is 0 where it was not read (_read)."""
        return total(metric) if _read(rows, metric) else 0.0

    def weighted(metric: str) -> float:
        """0 where the log has no such column (not asked for, or recorded before it was)."""
        if not all(_columns(r, metric) for r in rows):
            return 0.0
        return float(sum(_cell(r, metric) * _cell(r, DURATION) for r in rows) / total_time)

    flops = {precision: total(_sass(add)) + total(_sass(mul)) + 2 * total(_sass(fma))
             for precision, (add, mul, fma) in SASS_FLOPS.items()}
    flops |= {precision: total(metric) for precision, metric in TENSOR_FLOPS.items()
              if _read(rows, metric)}
    largest = max(rows, key=lambda r: _whole(_cell(r, GRID_SIZE)))
    return Counters(
        kernels=[str(r[KERNEL_NAME]) for r in rows],
        duration_s=total(DURATION) * 1e-9,
        dram_read=total(DRAM_READ),
        dram_write=total(DRAM_WRITE),
        l2_bytes=total(L2_BYTES),
        l1_bytes=total(L1_BYTES),
        local_bytes=sum(total(m) for m in LOCAL_BYTES),
        flops={k: v for k, v in flops.items() if v},
        occupancy_pct=weighted(OCCUPANCY),
        waves=_cell(largest, WAVES),
        registers_per_thread=max(_whole(_cell(r, REGISTERS)) for r in rows),
        grid_size=_whole(_cell(largest, GRID_SIZE)),
        stalls={reason: weighted(_stall(reason)) for reason in STALL_REASONS},
        xu_pipe_pct=weighted(XU_PIPE),
        tensor_pipe_pct=weighted(TENSOR_PIPE),
        l1_pct=weighted(L1_THROUGHPUT) or max(weighted(m) for m in L1_STAGES),
        shared_loads=optional(SHARED_LOADS),
        shared_wavefronts=optional(SHARED_WAVEFRONTS),
        bank_conflicts=sum(optional(m) for m in BANK_CONFLICTS),
        hmma_instructions=optional(HMMA),
        gmma_instructions=optional(GMMA),
        shared_stores=optional(SHARED_STORES),
        shared_store_wavefronts=optional(SHARED_STORE_WAVEFRONTS),
        store_bank_conflicts=optional(BANK_CONFLICTS[1]),
        global_load_sectors=optional(GLOBAL_SECTORS["ld"]),
        global_store_sectors=optional(GLOBAL_SECTORS["st"]),
        global_load_requests=optional(GLOBAL_REQUESTS["ld"]),
        global_store_requests=optional(GLOBAL_REQUESTS["st"]),
        theoretical_occupancy_pct=weighted(THEORETICAL_OCCUPANCY),
        **_occupancy_limit(largest),
        issue_active_pct=weighted(ISSUE_ACTIVE),
        instructions=optional(INSTRUCTIONS),
    )


def _occupancy_limit(launch: dict[str, float | str]) -> dict:
    """The resident blocks per SM the largest launch's tightest limit allows, and which
    limit that is (registers first on a tie: the one a kernel author sets); none where
    the log has no limits."""
    limits = {limiter: _whole(_cell(launch, metric)) for limiter, metric in
              OCCUPANCY_LIMITS.items() if metric in launch and _whole(_cell(launch, metric))}
    if not limits:
        return {}
    limiter = min(limits, key=limits.get)
    return {"blocks_per_sm": limits[limiter], "occupancy_limiter": limiter}


def counters_by_index(text: str) -> dict[int, Counters]:
    """Counters for each profiled variant of a session's log, by its NVTX range index (a
    variant whose run launched nothing has none)."""
    return {index: summarize(rows)
            for index, rows in split_by_variant(parse_rows(text)).items() if rows}

