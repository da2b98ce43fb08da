"""The worker's documents: what the CLI process asks of a measurement worker, and what it
answers.

The parent resolves a manifest into a `FamilyJob` (concrete shapes, grids, argument
lists); the worker answers with a `DeviceInfo` first and then one `Measurement` per
variant, each one JSON object per line (measure/protocol.py sends them), so a worker that
dies mid-family has already delivered every finished variant. The records live here, with
the documents, because the manifest reader builds jobs and the result holds measurements;
only their sending is the measurement layer's.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rooflint.common.vocabularies import CacheMode, CompilerChoice
from rooflint.common.sense import Amount, Count, Error
from rooflint.formats.gpus import DeviceInfo  # noqa: F401 - part of the worker's documents
from rooflint.formats.status import StatusWord


@dataclass
class BufferJob:
    name: str
    dtype: str          # numpy dtype name: float32, float16, int8, ...
    shape: list[int]
    role: str           # in | out | inout
    low: float          # inputs are drawn uniformly from [low, high], never exactly zero
    high: float


@dataclass
class ArgJob:
    """A kernel argument: a buffer (device pointer) or a typed scalar."""

    buffer: str | None = None
    ctype: str | None = None      # i32 | i64 | u32 | u64 | f32 | f64
    value: float | int | None = None


@dataclass
class LaunchJob:
    entry: str                    # extern "C" name or template expression
    grid: list[int]
    block: list[int]
    shared_mem: int
    args: list[ArgJob]


REFERENCE_FILE = "reference.py"   # beside the manifest: references, prepare, python variants


# Libraries a python variant may launch through: they launch on PyTorch's current stream, so
# the worker runs such a variant inside torch.cuda.stream, and the profiler imports them
# while it waits for its first job (PyTorch takes 3 s to import under Nsight Compute).
TORCH_MODULES = ("torch", "triton")


def uses_torch(module: Path) -> bool:
    """Whether a python variant's file imports PyTorch or Triton, anywhere in it."""
    pattern = rf"^\s*(import|from)\s+({'|'.join(TORCH_MODULES)})\b"
    return re.search(pattern, module.read_text(), re.MULTILINE) is not None


@dataclass
class VariantJob:
    name: str
    source: str | None            # path of the .cu file; None for a python variant
    launches: list[LaunchJob]
    python: str | None            # a python variant's function, called as fn(cupy, bufs, params)
    module: str | None            # the .py file it is in (reference.py or one the manifest names)
    baseline: bool                # declared the family's baseline (speeds are against it)
    reference: str                # function in reference.py giving the expected outputs
    tolerance: float              # bound on ||out - ref|| / ||ref|| per output buffer
    options: list[str]            # compiler options, include directories as absolute -I...
    compiler: CompilerChoice = CompilerChoice.AUTO


@dataclass
class TimingJob:
    cache: CacheMode = CacheMode.COLD
    budget_s: float = 1.0         # stop sampling after this much GPU time per variant
    min_samples: int = 10
    max_samples: int = 200
    target_spread: float = 0.02   # stop early once IQR / median is below this
    gpm: bool = False             # NVML GPM utilizations too (supporting evidence, 0.2 s each)


@dataclass
class FamilyJob:
    family: str
    directory: str
    params: dict[str, float | int]
    buffers: list[BufferJob]
    variants: list[VariantJob]
    timing: TimingJob
    seed: int = 0
    mode: str = "measure"         # measure: check and time; profile: one marked run under ncu
    prepare: str | None = None    # function in reference.py deriving inputs (e.g. quantized)
    reference_cache: bool = True  # host references' outputs read from and kept on disk

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FamilyJob":
        variants = []
        for v in data["variants"]:
            launches = [LaunchJob(**{**launch, "args": [ArgJob(**a) for a in launch["args"]]})
                        for launch in v["launches"]]
            variants.append(VariantJob(**{**v, "launches": launches}))
        return cls(**{**data,
                      "buffers": [BufferJob(**b) for b in data["buffers"]],
                      "variants": variants,
                      "timing": TimingJob(**data["timing"])})


# NVML clock-event reasons that mean the clocks were held below what the kernel could have had.
THROTTLING = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown",
              "hw_thermal_slowdown", "hw_power_brake_slowdown"}


@dataclass
class Clocks:
    """SM and memory clocks (MHz) read while the timed launches ran."""

    sm_mhz: list[Amount] = field(default_factory=list)
    mem_mhz: list[Amount] = field(default_factory=list)
    throttle_reasons: list[str] = field(default_factory=list)

    @property
    def held_down_by(self) -> list[str]:
        """The reasons seen that held the clocks down (THROTTLING), in the order recorded;
        the others (idle, a clock setting) cost the kernel nothing."""
        return [r for r in self.throttle_reasons if r in THROTTLING]


@dataclass
class OutputCheck:
    buffer: str
    rel_l2: Error       # ||out - ref|| / ||ref||
    max_abs: Error
    max_rel: Error
    nonfinite: Count    # NaN/inf elements: unwritten (still poisoned) or overflowed


@dataclass
class Measurement:
    variant: str
    status: StatusWord                 # a Status; from_json keeps the word JSON gives
    message: str = ""
    checks: list[OutputCheck] = field(default_factory=list)
    samples_s: list[float] = field(default_factory=list)
    clocks: Clocks = field(default_factory=Clocks)
    gpm: dict[str, float] = field(default_factory=dict)  # NVML GPM utilizations, percent
    graph_samples_s: list[float] = field(default_factory=list)  # CUDA-graph replays (short kernels)
    compiler: str = ""                 # "nvrtc 12.8", "nvcc 13.0.88"; "" for a Python call

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Measurement":
        return cls(**{**data,
                      "checks": [OutputCheck(**c) for c in data["checks"]],
                      "clocks": Clocks(**data["clocks"])})
