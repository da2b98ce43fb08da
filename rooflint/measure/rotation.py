"""Pass 2 by rotation: a program that repeats a training step gets Nsight Compute's counters
without Nsight Compute's replays (rotation_engine.cpp; measured against ncu in
benchmarks/rotation: every launch of a 282-launch step in 6.9 s against ncu's 81 s, verdicts
apart from ncu's by less than a second ncu run's). The engine ranges only the launches pass
2 reads: the first launch in a step of each chosen kernel, as Nsight Compute profiles the
first launch of each (a range costs the same whatever it holds).

This module builds the engine (once per toolkit, with its nvcc against its CUPTI, kept in
rooflint's cache, as kernel_trace builds its recorder) and turns what it recorded
(formats/rotation_records) into the rows Nsight Compute's log would have held for the same
launches, so that pass 2's reading, matching and analysis are the same for both. The range
profiler reads counters, not launch statistics: a launch's occupancy, limiter and waves are
computed from its shape and its kernel's registers and shared memory (analysis/occupancy,
equal to Nsight Compute's on every launch recorded with both); its duration is the kernel's
own after the engine's L2 flush, as Nsight Compute takes it after its cache control (CUPTI's
activity record of the launch in the first pass: a range's gpu__time_duration is the
range's).
"""

from __future__ import annotations

import bisect
import enum
import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from rooflint.analysis.occupancy import LIMITERS, LaunchResources, occupancy
from rooflint.common.paths import cache_dir
from rooflint.common.toolkit import find_nvcc, toolkit_roots
from rooflint.formats.ncu_log import BLOCK, DEVICE_ATTRIBUTE, GRID, ID, KERNEL_NAME, raw_page
from rooflint.formats.rotation_records import RotationRecords, UnreadableRotation, read_rotation
from rooflint.formats.trace_events import Launch, shape_text
from rooflint.judge.kernel_times import Identity, name_key
from rooflint.measure import ncu, trace_bootstrap
from rooflint.measure.kernel_trace import KernelTraceUnavailable, build_library, cupti_dirs
from rooflint.common.errors import RooflintError
from rooflint.measure.pass_runner import Pass, PassProgress, program_environment, stop

# The environment variable that says how pass 2 is taken: by rotation where the program can
# carry it (ROTATION_ASKED, or unset: the default since it was checked against Nsight
# Compute's on an H200, benchmarks/results/h200/rotation), or by Nsight Compute always
# (NCU_ASKED).
PASS_TWO_VARIABLE, ROTATION_ASKED, NCU_ASKED = "ROOFLINT_PASS_TWO", "rotation", "ncu"
SOURCE = Path(__file__).with_name("rotation_engine.cpp")
LIBRARY = "librooflint_rotation.so"
BOOTSTRAP = Path(trace_bootstrap.__file__)
# What the engine's counters leave to rows_of: Nsight Compute's own launch statistics, which
# the range profiler does not measure.
COMPUTED = (ncu.THEORETICAL_OCCUPANCY,)
# The passes the engine takes of rooflint's counter list (H200, 2026-11-30): 7 with one
# tensor precision's FLOPs (44 counters), 12 with every precision's (49), each precision's
# counter about one more. A program with fewer steps than that to spare is not rotated (it
# would be run for nothing); MOST_PASSES bounds the steps the rotation may take.
PASSES_ONE_PRECISION, PASSES_EVERY_PRECISION, MOST_PASSES = 7, 12, 16
# The most optimizers of one class a program's step is read as stepping (a GAN's two).
OPTIMIZERS = 3
# Room in the engine's record beyond the ranges a step should make. The first pass's cost
# grows with the room asked for (8,000 ranges: 10.8 s, 600: 1.7 s; the training step, H200).
RANGE_ROOM = 1.25
# What the rotation costs for each range of a step over its passes, beside the program's
# run, as Nsight Compute's estimate is its launches' alone (kernel_choice.pass2_estimate_s):
# about 1.9 ms a range a pass, 7 passes (H200, 2026-11-30, ranging every launch and its
# flush: 7.6 s for the training step's 564 ranges, 24.0 s for a ResNet-50 step's 1,786,
# the programs' runs with them; 2026-12-01, the chosen kernels' alone: pass 2 about 3 s
# for 48 and 8 s for 103, benchmarks/results/h200/speed.json). Where Nsight Compute's pass
# 2 should cost less (a second profile, the counter cache serving most kernels), it is
# taken.
ROTATION_S_PER_RANGE = 0.0135


class PassTwo(enum.Enum):
    """How pass 2 is asked for: by rotation where the program can carry it, said where it
    cannot (ROTATION_ASKED); so too but unsaid where the engine cannot be had (unset: a
    program that is no training loop needs none); Nsight Compute's (NCU_ASKED)."""

    ROTATION = "rotation"
    DEFAULT = "default"
    NCU = "ncu"


def asked() -> PassTwo:
    """How pass 2 is asked for; a RooflintError naming the variable where it says neither
    (checked before pass 1: a misspelt request is not run as the other)."""
    value = os.environ.get(PASS_TWO_VARIABLE, "")
    if value not in ("", NCU_ASKED, ROTATION_ASKED):
        raise RooflintError(f"{PASS_TWO_VARIABLE} is {value[:40]!r}: it takes "
                            f"{ROTATION_ASKED} or {NCU_ASKED}")
    return {ROTATION_ASKED: PassTwo.ROTATION, NCU_ASKED: PassTwo.NCU}.get(value,
                                                                        PassTwo.DEFAULT)


class RotationUnavailable(Exception):
    """Why the rotation cannot measure this program: pass 2 is Nsight Compute's then."""


def engine_library(say: Callable[[str], None] | None = None) -> Path:
    """The engine, built for this toolkit's CUPTI unless the cache holds it already (said
    first, where ``say`` is given: nvcc takes a while)."""
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
        if say:
            say("pass 2: building the rotation's engine with nvcc (once for this toolkit)")
        try:
            build_library(nvcc, [f"-I{include}"], SOURCE,
                          [f"-L{lib}", "-lcupti", "-lcuda", "-Xlinker", f"-rpath={lib}"],
                          built, "the rotation engine")
        except KernelTraceUnavailable as exc:
            raise RotationUnavailable(str(exc)) from None
    return built


@dataclass(frozen=True)
class RotationSteps:
    """How a program's steps carry the rotation: begun after the first optimizer's
    ``warm_up``-th step, a pass a step for at most ``most_steps`` steps of ``launches``
    kernel launches each, ranging the first launch in a step of each ``chosen`` kernel: its
    pattern on mangled names, grid and block (``x,y,z``), as the engine reads them."""

    warm_up: int
    most_steps: int
    launches: int
    chosen: tuple[tuple[str, str, str], ...]

    @property
    def max_ranges(self) -> int:
        """The room the engine's record is given: RANGE_ROOM's more than a pass's ranges."""
        return int(RANGE_ROOM * len(self.chosen)) + 64

    @property
    def expected_s(self) -> float:
        """About how long the rotation's ranges take, beside the program's run."""
        return ROTATION_S_PER_RANGE * len(self.chosen)


def passes_for(precisions: frozenset[str] | None) -> int:
    """The passes the engine should take for the counter list of these tensor precisions
    (ncu.metrics_for's; None: every precision)."""
    if precisions is None:
        return PASSES_EVERY_PRECISION
    return PASSES_ONE_PRECISION + max(0, len(precisions) - 1)


def rotation_steps(launches: list[Launch], step_ends: list[float], passes: int,
                   kernels: Mapping[Identity, str]) -> RotationSteps | None:
    """Pass 1's steps as the rotation's (_steps_every), each the launches between the
    first optimizer's steps' ends, ranging the first launch in a step of each of
    ``kernels`` (each with its pattern on mangled names, pass2_patterns.kernel_patterns,
    as Nsight Compute is asked for it): the trace names an optimizer's class, not which of
    its kind stepped, so a GAN's two Adams each end a step of the trace's, and every
    OPTIMIZERS-th end of the trace's is the first optimizer's (the bootstrap's passes end
    there, trace_bootstrap._FirstOptimizerSteps): the fewest that gives steps alike."""
    for optimizers in range(1, OPTIMIZERS + 1):
        found = _steps_every(launches, step_ends[::optimizers], passes, kernels)
        if found:
            return found
    return None


def _steps_every(launches: list[Launch], step_ends: list[float], passes: int,
                 kernels: Mapping[Identity, str]) -> RotationSteps | None:
    """The steps ``step_ends`` end as the rotation's: begun after the first step from which
    every step launched the same kernels at the same shapes in the same order (a pass is
    only another part of the same launches' if each launched the same), for the steps
    left, MOST_PASSES at most; None where fewer than the ``passes`` the engine takes are
    left, or a step launches none of ``kernels``."""
    steps: list[list[tuple[str, str, str]]] = [[] for _ in step_ends]
    for launch in launches:
        index = bisect.bisect_left(step_ends, launch.start_us)
        if index < len(steps):
            steps[index].append((launch.name, launch.grid, launch.block))
    last = len(steps) - 1
    warm_up = last
    while warm_up > 1 and steps[warm_up - 1] == steps[last]:
        warm_up -= 1
    most_steps = len(steps) - warm_up
    if most_steps < passes:
        return None
    chosen = _first_places(steps[last], kernels)
    if not chosen:
        return None
    return RotationSteps(warm_up, min(most_steps, MOST_PASSES), len(steps[last]), chosen)


def _first_places(step: list[tuple[str, str, str]], kernels: Mapping[Identity, str]
                  ) -> tuple[tuple[str, str, str], ...]:
    """Each of ``kernels`` that ``step`` launches, as the engine is told it, in the order
    the step first launches them."""
    first: dict[Identity, None] = {}
    for name, grid, block in step:
        key = (name_key(name), grid, block)
        if key in kernels:
            first.setdefault(key)
    return tuple((kernels[key], _engine_shape(key[1]), _engine_shape(key[2])) for key in first)


def _engine_shape(shape: str) -> str:
    """A trace's ``(2, 64, 1)`` as the engine reads it: ``2,64,1``."""
    return ",".join(re.findall(r"\d+", shape))


@dataclass(frozen=True)
class KernelResources:
    """What pass 1's trace says of a kernel at one shape: what each block needs."""

    registers_per_thread: int
    shared_bytes_per_block: int     # static and dynamic


def resources_of(launches: list[Launch]) -> dict[Identity, KernelResources]:
    """Each kernel at each shape in pass 1's trace: its registers and shared memory (its
    first launch's: one function at one shape)."""
    found: dict[Identity, KernelResources] = {}
    for launch in launches:
        if launch.registers:
            found.setdefault((name_key(launch.name), launch.grid, launch.block),
                             KernelResources(launch.registers, launch.shared_bytes))
    return found


@dataclass(frozen=True)
class StartedRotation:
    """Pass 2's program started for the rotation: it waits, right after its first import of
    a library it launches kernels through and before any CUDA call, until pass 1 is over
    (go) or for ``config`` (trace_bootstrap._rotated)."""

    process: subprocess.Popen
    config: Path
    records: Path
    output: Path                    # the program's stdout and stderr

    def waits(self, within_s: float) -> bool:
        """Whether the program says it waits (trace_bootstrap.WAITING) within ``within_s``:
        one that has not reached a library it launches kernels through by then, or has
        ended, may have run on the GPU beside pass 1."""
        marker = self.config.with_name(self.config.name + trace_bootstrap.WAITING)
        deadline = time.monotonic() + within_s
        while not marker.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(trace_bootstrap.CONFIG_POLL_S)
        return True

    def go(self) -> None:
        """Lets the program run up to its first optimizer step's end, where it waits for
        ``config``: its start on the GPU (its CUDA context, its model, cuDNN's benchmark:
        about 5 s of a ResNet-50 step's pass 2, H200) beside rooflint's reading of pass 1,
        whose program has ended."""
        self.config.with_name(self.config.name + trace_bootstrap.GO).touch()


@contextmanager
def started_rotation(command: list[str]) -> Iterator[StartedRotation]:
    """The Python program ``command`` started for pass 2 by rotation, so that its imports
    are done while pass 1 runs (Nsight Compute's early start does the same for its pass 2);
    killed on the way out if still running."""
    with tempfile.TemporaryDirectory(prefix="rooflint-rotation-") as scratch:
        folder = Path(scratch)
        config, output = folder / "rotation.json", folder / "output.txt"
        with output.open("w") as sink:
            try:
                process = subprocess.Popen(
                    [command[0], str(BOOTSTRAP), trace_bootstrap.ROTATION, str(config), "--",
                     *command[1:]], stdout=sink, stderr=subprocess.STDOUT,
                    start_new_session=True, env=program_environment())
            except OSError as exc:
                raise RooflintError(f"cannot start {Path(command[0]).name}: "
                                    f"{exc.strerror or exc}") from None
        try:
            yield StartedRotation(process, config, folder / "records", output)
        finally:
            stop(process)


def engine_metrics(metrics: list[str]) -> list[str]:
    """What of Nsight Compute's list the engine reads: not its launch statistics (COMPUTED by
    rows_of)."""
    return [m for m in metrics if not m.startswith("launch__") and m not in COMPUTED]


def rotation_pass(command: list[str], metrics: list[str], steps: RotationSteps,
                  resources: Mapping[Identity, KernelResources], kept: Path | None,
                  progress: PassProgress, started: StartedRotation | None = None) -> Pass:
    """Pass 2 by rotation: the Python program ``command`` (``started`` early, else now)
    through the bootstrap's rotation (trace_bootstrap._Rotation), its records made into
    Nsight Compute's rows (rows_of, as a raw page: read as ncu's log is), written to
    ``kept`` too where given. RotationUnavailable says why it measured nothing: pass 2 is
    then Nsight Compute's."""
    if started is None:
        with started_rotation(command) as now:
            return replace(rotation_pass(command, metrics, steps, resources, kept, progress,
                                         now), attached=False)
    engine = engine_library()
    asked = engine_metrics(metrics)
    partial = started.config.with_name(f".{started.config.name}")
    partial.write_text(json.dumps(dict(zip(trace_bootstrap.ROTATION_FIELDS, (
        str(engine), asked, steps.max_ranges, steps.warm_up, steps.most_steps,
        [list(kernel) for kernel in steps.chosen], str(started.records))))))
    partial.rename(started.config)          # whole, as the program sees it appear
    began = time.perf_counter()
    status = progress.wait(lambda seconds: started.process.wait(timeout=seconds))
    wall = time.perf_counter() - began
    records = started.records
    failed = records.with_name(records.name + trace_bootstrap.FAILED)
    if failed.exists():
        raise RotationUnavailable(failed.read_text()[:300])
    if not records.exists():
        raise RotationUnavailable(
            f"the program ended (exit status {status}) before every pass was in "
            f"({steps.most_steps} steps after its first {steps.warm_up})")
    try:
        read = read_rotation(records.read_text(),
                             records.with_name(records.name + ".launches").read_text(),
                             chosen=True)
    except (UnreadableRotation, OSError) as exc:
        raise RotationUnavailable(str(exc)) from None
    text = raw_page(rows_of(read, resources))
    if not text:
        raise RotationUnavailable("the engine's records hold none of pass 1's kernels")
    if kept:
        kept.write_text(text)
    return Pass(text, wall, attached=True, rotated=True)


def rows_of(records: RotationRecords, resources: Mapping[Identity, KernelResources]
            ) -> list[dict[str, float | str]]:
    """A row a measured launch, as Nsight Compute's log would hold it: its name, shape,
    counters (the duration among them), launch statistics and the device's L2 size and
    clocks where the engine gave them. A launch pass 1 did not see
    (no resources) is left out, as is every launch where the records do not give the SM's
    limits."""
    if records.sm is None or not records.sms:
        return []
    rows = []
    for number, counters in sorted(records.counters.items()):
        launch = records.launches[number]
        key = (name_key(launch.name), shape_text(launch.grid), shape_text(launch.block))
        kernel = resources.get(key)
        if kernel is None:
            continue
        shape = LaunchResources(blocks=_count(launch.grid),
                                threads_per_block=_count(launch.block),
                                registers_per_thread=kernel.registers_per_thread,
                                shared_bytes_per_block=kernel.shared_bytes_per_block)
        rows.append({ID: number, KERNEL_NAME: launch.name, GRID: key[1], BLOCK: key[2],
                     **counters, **_statistics(shape, records),
                     **{DEVICE_ATTRIBUTE + name: float(value)
                        for name, value in records.device.items()}})
    return rows


def _statistics(shape: LaunchResources, records: RotationRecords) -> dict[str, float]:
    """Nsight Compute's launch statistics for ``shape``, computed."""
    found = occupancy(shape, records.sm)
    return {ncu.GRID_SIZE: float(shape.blocks), ncu.BLOCK_SIZE: float(shape.threads_per_block),
            ncu.REGISTERS: float(shape.registers_per_thread),
            ncu.THEORETICAL_OCCUPANCY: found.theoretical_pct(shape.threads_per_block),
            ncu.WAVES: found.waves(shape.blocks, records.sms),
            **{ncu.OCCUPANCY_LIMITS[k]: float(found.limits[k]) for k in LIMITERS}}


def _count(shape: tuple[int, int, int]) -> int:
    x, y, z = shape
    return x * y * z
