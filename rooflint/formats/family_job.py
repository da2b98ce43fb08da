"""A manifest made concrete: sizes bound, expressions evaluated, CUDA's limits checked.

`resolve` turns a manifest plus ``--size`` overrides (and the device's ``num_sms``) into
the `FamilyJob` the measurement worker runs and, per variant, the evaluated work and
traffic model the analysis reads. Whatever a size makes impossible is refused here, naming
the file and field, before any GPU work; `check_sizes` does so before the device is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rooflint.common.errors import RooflintError
from rooflint.common.units import format_params
from rooflint.formats.expressions import Number, evaluate
from rooflint.formats.manifest import Buffer, Expectation, Launch, Manifest, select_variants
from rooflint.formats.jobs import ArgJob, BufferJob, FamilyJob, LaunchJob, TimingJob, VariantJob

DEVICE_NAMES = ("num_sms",)    # names only the device can give a value to
MAX_THREADS_PER_BLOCK = 1024   # every CUDA GPU since Fermi
MAX_BLOCK = (1024, 1024, 64)   # x, y, z threads of a block
MAX_GRID = (2**31 - 1, 65535, 65535)   # x, y, z blocks of a grid (compute capability >= 3.0)


@dataclass
class VariantModel:
    """The manifest's side of a variant, evaluated: what the analysis needs beside timing."""

    name: str
    description: str
    flops: float
    bytes: float
    precision: str
    expect: Expectation
    gate: dict[str, float]
    baseline: bool
    grid_blocks: int           # blocks of the largest launch, for the one-wave check
    threads_per_block: int
    launches: int
    written_bytes: float       # size of the out/inout buffers it writes: the compulsory writes


@dataclass
class ResolvedFamily:
    """A manifest with its sizes bound: the worker's job and each variant's model."""

    manifest: Manifest
    params: dict[str, Number]
    job: FamilyJob
    models: dict[str, VariantModel] = field(default_factory=dict)


def resolve(manifest: Manifest, overrides: dict[str, Number], device: dict[str, Number],
            timing: TimingJob, variants: list[str] | None = None) -> ResolvedFamily:
    """Concrete job for the worker plus the evaluated work/traffic model per variant.

    ``device`` adds names such as ``num_sms`` that launch geometry may use, so a
    grid-stride kernel can be sized to fill whatever GPU it runs on. Whatever a size
    makes impossible (an empty buffer, a zero grid, a block over 1024 threads) is refused
    here, naming the field, before any GPU work. Without ``device`` (`check_sizes`), an
    expression that names a device value is left for the call that has it.
    """
    unknown = set(overrides) - set(manifest.params)
    if unknown:
        raise RooflintError(f"{manifest.name}: unknown size parameter(s) "
                            f"{', '.join(sorted(unknown))} "
                            f"(parameters: {', '.join(manifest.params) or 'none'})")
    params = {**manifest.params, **overrides}
    names = {**device, **params}
    at = _Resolver(manifest.path, names, frozenset(DEVICE_NAMES) - set(names))
    chosen = select_variants(manifest, variants)
    buffers = [_resolve_buffer(b, at) for b in manifest.buffers]
    jobs, models = [], {}
    for v in chosen:
        where = f"variants.{v.name}."
        launches = [_resolve_launch(launch, at, f"{where}launches[{i}].")
                    for i, launch in enumerate(v.launches)]
        jobs.append(VariantJob(
            name=v.name, source=str(manifest.directory / v.source) if v.source else None,
            launches=launches, python=v.python.function if v.python else None,
            module=str(v.python.module) if v.python else None, baseline=v.baseline,
            reference=v.reference, tolerance=v.tolerance, options=v.options,
            compiler=v.compiler))
        largest = max(launches, key=lambda launch: _product(launch.grid), default=None)
        models[v.name] = VariantModel(
            name=v.name, description=v.description,
            flops=float(at.amount(v.flops, where + "flops")),
            bytes=float(at.amount(v.bytes, where + "bytes")),
            precision=v.precision, expect=v.expect, gate=v.gate, baseline=v.baseline,
            grid_blocks=_product(largest.grid) if largest else 0,
            threads_per_block=_product(largest.block) if largest else 0,
            launches=len(launches),
            written_bytes=_written_bytes(buffers, launches))
    # The reference, prepare and python functions see the device names too (num_sms).
    job = FamilyJob(family=manifest.name, directory=str(manifest.directory), params=names,
                    buffers=buffers, variants=jobs, timing=timing, prepare=manifest.prepare)
    return ResolvedFamily(manifest=manifest, params=params, job=job, models=models)


def check_sizes(manifest: Manifest, overrides: dict[str, Number],
                variants: list[str] | None = None) -> None:
    """Refuse, before any worker starts, every size `resolve` refuses that does not depend
    on the device (a zero, negative or fractional shape, grid or block; a block or grid
    over CUDA's limits); one that names ``num_sms`` is checked once the device is known."""
    resolve(manifest, overrides, {}, TimingJob(), variants)


@dataclass
class _Resolver:
    """Evaluates a manifest's expressions with the sizes bound; errors name file and field.

    An expression naming one of ``waiting`` (device names not known yet) stands for the
    least value its field allows, so that only what fails whatever the device is refused.
    """

    path: Path
    names: dict[str, Number]
    waiting: frozenset[str] = frozenset()

    def needs_device(self, expression: str | Number) -> bool:
        """Whether ``expression`` names a value the device has not given yet."""
        return (isinstance(expression, str)
                and not self.waiting.isdisjoint(re.findall(r"[A-Za-z_]\w*", expression)))

    def value(self, expression: str | Number, where: str) -> Number:
        if self.needs_device(expression):
            return 0
        try:
            return evaluate(expression, self.names)
        except RooflintError as exc:
            raise RooflintError(f"{self.path}: '{where}' {exc}{self._sizes()}") from None

    def amount(self, expression: str | Number, where: str) -> Number:
        """A FLOP or byte count: zero or more."""
        value = self.value(expression, where)
        if value < 0:
            raise RooflintError(f"{self.path}: '{where}' is {expression!r} = {value:g}, "
                                f"negative{self._sizes()}")
        return value

    def count(self, expression: str | Number, where: str, minimum: int = 1) -> int:
        """A whole number of elements, blocks, threads or bytes, at least ``minimum``."""
        if self.needs_device(expression):
            return minimum
        value = self.value(expression, where)
        if value != int(value) or value < minimum:
            raise RooflintError(f"{self.path}: '{where}' is {expression!r} = {value:g}; "
                                f"expected a whole number >= {minimum}{self._sizes()}")
        return int(value)

    def _sizes(self) -> str:
        shown = format_params(self.names)
        return f" (with {shown})" if shown else ""


def _written_bytes(buffers: list[BufferJob], launches: list[LaunchJob]) -> float:
    """Bytes of the outputs a variant's launches take (all outputs for a python variant)."""
    used = {a.buffer for launch in launches for a in launch.args if a.buffer}
    return float(sum(_product(b.shape) * np.dtype(b.dtype).itemsize for b in buffers
                     if b.role != "in" and (not launches or b.name in used)))


def _product(values: list[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def _resolve_buffer(b: Buffer, at: _Resolver) -> BufferJob:
    shape = [at.count(s, f"buffers.{b.name}.shape") for s in b.shape]
    return BufferJob(name=b.name, dtype=b.dtype, shape=shape, role=b.role,
                     low=b.range[0], high=b.range[1])


def _resolve_launch(launch: Launch, at: _Resolver, where: str) -> LaunchJob:
    args = []
    for i, arg in enumerate(launch.args):
        if isinstance(arg, str):
            args.append(ArgJob(buffer=arg))
        else:
            ((ctype, expression),) = arg.items()
            value = at.value(expression, f"{where}args[{i}]")
            args.append(ArgJob(ctype=ctype, value=int(value) if ctype[0] in "iu" else float(value)))
    block = [at.count(b, where + "block") for b in launch.block]
    if _product(block) > MAX_THREADS_PER_BLOCK:
        raise RooflintError(f"{at.path}: '{where}block' is {block}: "
                            f"{_product(block)} threads, over the {MAX_THREADS_PER_BLOCK} a "
                            f"block may have")
    grid = [at.count(g, where + "grid") for g in launch.grid]
    _within_limits(block, MAX_BLOCK, at.path, where + "block")
    _within_limits(grid, MAX_GRID, at.path, where + "grid")
    return LaunchJob(
        entry=launch.entry,
        grid=grid,
        block=block,
        shared_mem=at.count(launch.shared_mem, where + "shared_mem", minimum=0),
        args=args,
    )


def _within_limits(sizes: list[int], limits: tuple[int, ...], path: Path, where: str) -> None:
    """Each of a block's or grid's x, y, z within what CUDA allows in that dimension."""
    for axis, size, limit in zip("xyz", sizes, limits):
        if size > limit:
            raise RooflintError(f"{path}: '{where}' is {sizes}: {axis} is {size}, over the "
                                f"{limit} CUDA allows")
