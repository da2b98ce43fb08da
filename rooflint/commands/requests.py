"""What `run`, `profile` and `gate` were asked, parsed once from their options: one frozen
dataclass per command, whose defaults are written here and nowhere else (or in
formats/settings.py where the engine shares them; the command line shows them as its
options' defaults).

Light on purpose: the command line imports it before any command runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooflint.common.vocabularies import CacheMode, CountersMode
from rooflint.formats.settings import (DEFAULT_CACHE, DEFAULT_COUNTERS, DEFAULT_COVERAGE,
                                       DEFAULT_TIMEOUT_S)


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


@dataclass(frozen=True)
class GateRequest:
    baseline_path: Path
    targets: tuple[str, ...] = ()         # none: the bundled families
    current: Path | None = None           # a result judged instead of measuring
    update: bool = False
    max_slowdown: str | None = None       # thresholds as typed (5%): read by formats.thresholds
    max_bytes_growth: str | None = None
    max_flops_growth: str | None = None
    gpu_mismatch: str = "error"           # a baseline from another GPU: error or warn
    markdown: Path | None = None
    junit: Path | None = None
    counters: CountersMode = DEFAULT_COUNTERS
    recheck: bool = False


@dataclass(frozen=True)
class ProfileRequest:
    command: tuple[str, ...]              # the program and its arguments
    top: int | None = None
    coverage: float = DEFAULT_COVERAGE
    nvtx: str | None = None
    kernel: str | None = None
    skip: int = 0
    gpu: str | None = None
    json_path: Path | None = None
    svg: Path | None = None
    logs: Path | None = None
    model: Path | None = None
    exports: Exports = Exports()
