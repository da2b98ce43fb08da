"""What each command was asked, parsed once from its options: one frozen dataclass per
command, whose defaults are written here and nowhere else (or in formats/settings.py where
the engine shares them; the command line shows them as its options' defaults). A command's
module takes its request whole, so an option added is one field, not one more parameter
handed down by position.

Values stay as typed where the command's own check says what is wrong with them (a
threshold ``5%``, a time ``40us``, a precision): the command, not the parser, words the
refusal. `specs` takes too little to need one. ``force``, in each request that writes a
file: replace one that exists and is not of the kind written (output/outputs.py).

Light on purpose: the command line imports it before any command runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooflint.common.vocabularies import CacheMode, CountersMode, GpuMismatch, Precision
from rooflint.formats.settings import (DEFAULT_CACHE, DEFAULT_COUNTERS, DEFAULT_COVERAGE,
                                       DEFAULT_STOP_AFTER,
                                       DEFAULT_TIMEOUT_S)
from rooflint.output.depth import Depth


@dataclass(frozen=True)
class Exports:
    """The tables a command also writes (- for standard output)."""

    csv: Path | None = None
    markdown: Path | None = None
    html: Path | None = None


@dataclass(frozen=True)
class RunRequest:
    target: str | None = None             # a family directory, its kernel.yaml or a bundled name
    variants: tuple[str, ...] = ()        # none: every variant
    sizes: tuple[str, ...] = ()           # NAME=VALUE overrides, as typed
    gpu: str | None = None                # the spec judged against; None: the device's
    cache: CacheMode = DEFAULT_CACHE
    json_path: Path | None = None
    svg: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    counters: CountersMode = DEFAULT_COUNTERS
    timings: bool = False
    devices: str | None = None            # as typed: all, or indices such as 0,2
    gpm: bool = False
    source: bool = False
    exports: Exports = Exports()
    reference_cache: bool = True
    counter_cache: bool = True
    depth: Depth = Depth.DEFAULT          # how much of each family is printed
    force: bool = False


@dataclass(frozen=True)
class GateRequest:
    baseline_path: Path
    targets: tuple[str, ...] = ()         # none: the bundled families
    current: Path | None = None           # a result judged instead of measuring
    update: bool = False
    max_slowdown: str | None = None       # thresholds as typed (5%): read by formats.thresholds
    max_bytes_growth: str | None = None
    max_flops_growth: str | None = None
    gpu_mismatch: GpuMismatch = GpuMismatch.ERROR   # a baseline from another GPU
    markdown: Path | None = None
    junit: Path | None = None
    counters: CountersMode = DEFAULT_COUNTERS
    recheck: bool = False
    depth: Depth = Depth.DEFAULT          # what did not pass; each variant; and its limits
    force: bool = False


@dataclass(frozen=True)
class ProfileRequest:
    command: tuple[str, ...]              # the program and its arguments
    top: int | None = None
    coverage: float = DEFAULT_COVERAGE
    nvtx: str | None = None
    kernel: str | None = None
    skip: int = 0
    stop_after: int = DEFAULT_STOP_AFTER
    gpu: str | None = None
    json_path: Path | None = None
    svg: Path | None = None
    logs: Path | None = None
    model: Path | None = None
    exports: Exports = Exports()
    depth: Depth = Depth.DEFAULT          # the fixes; and the top kernels; and every kernel
    counter_cache: bool = True            # PyTorch's own kernels' counters kept between profiles
    force: bool = False


@dataclass(frozen=True)
class ImportRequest:
    files: tuple[Path, ...]               # a trace, a report, or one of each
    gpu: str | None = None                # the spec judged against; None: the files' GPU's
    json_path: Path | None = None
    depth: Depth = Depth.DEFAULT          # the fixes; and the top kernels; and every kernel
    force: bool = False                   # --json may replace a file rooflint did not write


@dataclass(frozen=True)
class ShowRequest:
    result_path: Path
    variants: tuple[str, ...] = ()        # none: every variant
    exports: Exports = Exports()
    depth: Depth = Depth.DEFAULT          # how much of the result is printed
    force: bool = False


@dataclass(frozen=True)
class ExplainRequest:
    time: str                             # as typed: 0.713ms, 40us
    flops: str                            # as typed: 537e6, 137.4G
    dram_bytes: str                       # as typed: 128MiB
    gpu: str
    algorithmic_bytes: str | None = None  # None: the DRAM bytes
    precision: str = Precision.FP32.value  # as typed: explain names the precisions it knows
    json_path: Path | None = None
    datasheet: bool = False               # the datasheet's roofs even where calibrated
    force: bool = False


@dataclass(frozen=True)
class CalibrateRequest:
    gpu: str | None = None
    json_path: Path | None = None
    force: bool = False


@dataclass(frozen=True)
class PlotRequest:
    results: tuple[Path, ...]
    output: Path = Path("roofline.svg")
    variants: tuple[str, ...] = ()        # none: every variant, in the results' order
    trajectory: bool = False
    force: bool = False


@dataclass(frozen=True)
class ReportRequest:
    results: tuple[Path, ...]
    output: Path = Path("report.html")
    force: bool = False


@dataclass(frozen=True)
class CompareRequest:
    a: str                                # result.json, result.json:VARIANT or TARGET:VARIANT
    b: str | None = None                  # as A; None with rev
    rev: str | None = None                # A as it was at this git revision, against A now
    json_path: Path | None = None
    allow_different_gpu: bool = False
    gpu: str | None = None                # the spec measured sides are judged against
    counters: CountersMode = DEFAULT_COUNTERS
    max_slowdown: str | None = None       # as typed (5%): read by formats.thresholds
    depth: Depth = Depth.DEFAULT          # the sentences alone, or with figures and notes
    force: bool = False
