"""Pass 2 by rotation: a program that repeats a training step gets Nsight Compute's counters
without Nsight Compute's replays (rotation_engine.cpp; measured against ncu in
benchmarks/rotation: every launch of a 282-launch step in 6.9 s against ncu's 81 s, verdicts
apart from ncu's by less than a second ncu run's).

This module builds the engine (once per toolkit, with its nvcc against its CUPTI, kept in
rooflint's cache, as kernel_trace builds its recorder) and turns what it recorded
(formats/rotation_records) into the rows Nsight Compute's log would have held for the same
launches, so that pass 2's reading, matching and analysis are the same for both. The range
profiler reads counters, not launch statistics: a launch's occupancy, limiter and waves are
computed from its shape and its kernel's registers and shared memory (analysis/occupancy,
equal to Nsight Compute's on every launch recorded with both), and its duration is pass
1's, which timed every launch in the program as it runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rooflint.analysis.occupancy import LIMITERS, LaunchResources, occupancy
from rooflint.common.paths import cache_dir
from rooflint.common.toolkit import find_nvcc, toolkit_roots
from rooflint.formats.ncu_log import BLOCK, DURATION, GRID, ID, KERNEL_NAME
from rooflint.formats.rotation_records import RotationRecords
from rooflint.judge.kernel_times import Identity, name_key
from rooflint.measure import ncu
from rooflint.measure.kernel_trace import KernelTraceUnavailable, build_library, cupti_dirs

SOURCE = Path(__file__).with_name("rotation_engine.cpp")
LIBRARY = "librooflint_rotation.so"


class RotationUnavailable(Exception):
    """Why the rotation cannot measure this program: pass 2 is Nsight Compute's then."""


def engine_library() -> Path:
    """The engine, built for this toolkit's CUPTI unless the cache holds it already."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise RotationUnavailable("no nvcc to build the rotation engine with")
    try:
        include, lib = cupti_dirs(toolkit_roots())
    except KernelTraceUnavailable as exc:
        raise RotationUnavailable(str(exc)) from None
    key = hashlib.sha256("\0".join([SOURCE.read_text(), str(nvcc.resolve()), str(include),
                                    str(lib)]).encode()).hexdigest()[:16]
    built = cache_dir() / "rotation" / key / LIBRARY
    if not built.exists():
        try:
            build_library(nvcc, [f"-I{include}"], SOURCE,
                          [f"-L{lib}", "-lcupti", "-lcuda", "-Xlinker", f"-rpath={lib}"],
                          built, "the rotation engine")
        except KernelTraceUnavailable as exc:
            raise RotationUnavailable(str(exc)) from None
    return built


@dataclass(frozen=True)
class KernelResources:
    """What pass 1's trace says of a kernel at one shape: what each block needs, and how
    long it ran."""

    registers_per_thread: int
    shared_bytes_per_block: int     # static and dynamic
    duration_s: float               # its launches' median


def rows_of(records: RotationRecords, resources: Mapping[Identity, KernelResources]
            ) -> list[dict[str, float | str]]:
    """A row a launch, as Nsight Compute's log would hold it: its name, shape, counters,
    launch statistics and duration. A launch pass 1 did not see (no resources) is left out,
    as is every launch where the records do not give the SM's limits."""
    if records.sm is None or not records.sms:
        return []
    rows = []
    for number, (launch, counters) in enumerate(zip(records.launches, records.counters)):
        key = (name_key(launch.name), _dims(launch.grid), _dims(launch.block))
        kernel = resources.get(key)
        if kernel is None:
            continue
        shape = LaunchResources(blocks=_count(launch.grid),
                                threads_per_block=_count(launch.block),
                                registers_per_thread=kernel.registers_per_thread,
                                shared_bytes_per_block=kernel.shared_bytes_per_block)
        rows.append({ID: number, KERNEL_NAME: launch.name, GRID: key[1], BLOCK: key[2],
                     **counters, **_statistics(shape, records), DURATION:
                     kernel.duration_s * 1e9})
    return rows


def _statistics(shape: LaunchResources, records: RotationRecords) -> dict[str, float]:
    """Nsight Compute's launch statistics for ``shape``, computed."""
    found = occupancy(shape, records.sm)
    return {ncu.GRID_SIZE: float(shape.blocks), ncu.BLOCK_SIZE: float(shape.threads_per_block),
            ncu.REGISTERS: float(shape.registers_per_thread),
            ncu.THEORETICAL_OCCUPANCY: found.theoretical_pct(shape.threads_per_block),
            ncu.WAVES: found.waves(shape.blocks, records.sms),
            **{ncu.OCCUPANCY_LIMITS[k]: float(found.limits[k]) for k in LIMITERS}}


def _dims(shape: tuple[int, int, int]) -> str:
    """As Nsight Compute writes a grid or block: "(8, 64, 1)"."""
    return f"({', '.join(map(str, shape))})"


def _count(shape: tuple[int, int, int]) -> int:
    x, y, z = shape
    return x * y * z
