"""The result document: one JSON file per run, versioned, self-describing.

``compare``, ``plot`` and ``gate`` read only this format, so they work on a laptop with
results made on a GPU box. Every number says where it came from (``model`` for the
manifest's algorithmic counts, ``ncu`` for counters), and the raw timing samples are
kept so that later statistics need no re-run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from rooflint import __version__
from rooflint.diagnose import Verdict
from rooflint.jsonfile import read_document, write_atomic
from rooflint.counters import Counters
from rooflint.gpus import DeviceInfo
from rooflint.measure.protocol import Clocks, OutputCheck
from rooflint.roofline import Level, Point, Roofs
from rooflint.sourcelines import SourceProfile

SCHEMA = "rooflint.result/1"
# IQR / median above this and the median itself is in doubt (the w4a16 cuBLAS baseline on
# the H200 read 17.5 us with an IQR of 88 %): flagged wherever such a time is shown.
NOISY_SPREAD = 0.10


@dataclass
class KernelShare:
    """A profiled program's kernel: what it costs the program and what fixing it could save."""

    kernel: str                 # the demangled name, as Nsight Compute reports it
    library: str | None         # who wrote it, in plain words (cuBLAS GEMM), when known
    launches: int               # in the profiled region
    total_s: float              # GPU time of all those launches
    share: float                # of the region's GPU time
    best_fraction: float | None  # of its nearest roof (DRAM, L2, L1 or compute); None: no counters
    upside_s: float | None      # what its best move could save (application.upside)


@dataclass
class TimeStats:
    median_s: float
    q1_s: float
    q3_s: float
    min_s: float
    n: int                              # how many samples were taken

    @property
    def iqr_s(self) -> float:
        return self.q3_s - self.q1_s

    @property
    def spread(self) -> float:
        """IQR / median: the relative spread that decides whether the median is trusted."""
        return self.iqr_s / self.median_s if self.median_s else 0.0

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    @property
    def noise(self) -> str:
        """What makes it noisy, in words: the spread against the limit, and the sample count."""
        return (f"IQR ±{100 * self.spread:.0f}% of the median over {self.n} samples "
                f"(limit ±{100 * NOISY_SPREAD:.0f}%)")

    @classmethod
    def of(cls, samples: list[float]) -> "TimeStats":
        q1, median, q3 = np.percentile(samples, [25, 50, 75])
        return cls(float(median), float(q1), float(q3), float(min(samples)), len(samples))


@dataclass
class VariantResult:
    name: str
    description: str
    status: str                         # ok | fail | error
    message: str
    baseline: bool
    source_sha256: str | None
    precision: str
    tolerance: float
    checks: list[OutputCheck]
    samples_s: list[float]
    time: TimeStats | None
    clocks: Clocks
    gpm: dict[str, float]               # NVML GPM utilizations (%), supporting evidence only
    graph_time: TimeStats | None        # CUDA-graph replay of the same launches (short kernels)
    flops: dict[str, float]             # by source: {"model": ..., "ncu": counted}
    dram_bytes: dict[str, float]        # by source: {"model": ..., "ncu": measured}
    counters: Counters | None           # the raw ncu summary, when counters ran
    notes: list[str]                    # how the counters differ from the model, and why
    roofs: Roofs | None
    point: Point | None
    verdict: Verdict | None
    expect: dict[str, str | None]
    expectation_mismatch: str | None    # what the measurement contradicts, if anything
    versus: str | None                  # bytes, AI and time against the variant it should beat
    speed_vs_baseline: float | None     # baseline time / this time (1.0 = as fast)
    gate: dict[str, float] = field(default_factory=dict)  # the manifest's `rooflint gate` thresholds
    share: KernelShare | None = None    # a kernel of a profiled program: its part of the GPU time
    compiler: str = ""                  # what built it ("nvcc 13.0.88"); "" for a Python call
    levels: list[Level] = field(default_factory=list)  # DRAM, L2, L1 (hierarchical roofline)
    source_lines: SourceProfile | None = None   # the lines behind its moves (run --source)


@dataclass
class FamilyResult:
    name: str
    directory: str
    params: dict[str, float]
    baseline: str | None
    variants: list[VariantResult]
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase (rooflint.phases)
    device: str | None = None           # the CUDA_VISIBLE_DEVICES entry it ran on (--devices)


@dataclass
class RunResult:
    gpu: DeviceInfo
    spec_id: str
    settings: dict[str, Any]
    families: list[FamilyResult] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # the families' phases + start-up
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    tool_version: str = __version__
    schema: str = SCHEMA

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def write_result(result: RunResult, path: Path) -> None:
    write_atomic(result.to_json(), path)


def read_result(path: Path) -> RunResult:
    """A result file, every field checked against the dataclasses above (fields a newer
    rooflint added are ignored; see jsonfile.read_document)."""
    return read_document(path, RunResult, SCHEMA, "result")
