"""Kernel manifests: ``kernel.yaml`` files describing a family of kernel variants.

A manifest names the parameters (with defaults), the buffers, the algorithmic work
(``flops``) and compulsory traffic (``bytes``) as safe expressions, the precision whose
compute roof applies, the reference, and the variants with their launches. Families can
override ``flops``/``bytes``/``reference``/``tolerance``/``precision`` per variant, since
one family often mixes kernels of different work (a copy and a triad).

A variant is one of two kinds, named by exactly one key:

- ``source: FILE.cu`` with ``launches:``: CUDA kernels that rooflint compiles and launches;
- ``python: FUNCTION`` (in ``reference.py``) or ``python: module.py:FUNCTION`` (a file
  beside the manifest): a function called as ``fn(cupy, bufs, params)`` that launches
  through Python (a Triton kernel, a PyTorch op, a CuPy ElementwiseKernel).

Either kind is an ordinary variant unless it says ``baseline: true``, which declares it
the family's baseline (every other variant reports its speed against it). The older
``baseline: FUNCTION`` stays as shorthand for ``python: FUNCTION`` + ``baseline: true``,
since a library call is what a baseline usually is; it counts as the variant's kind, so it
cannot be combined with ``source`` or ``python``.

Loading validates everything a user can get wrong and says which file and field;
`resolve` turns a manifest plus ``--size`` overrides into the concrete job the
measurement worker runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import math

import numpy as np

from rooflint import yamlfile
from rooflint.errors import RooflintError
from rooflint.expressions import Number, evaluate
from rooflint.gpus import PRECISIONS
from rooflint.units import format_params
from rooflint.measure.protocol import (
    REFERENCE_FILE, ArgJob, BufferJob, FamilyJob, LaunchJob, TimingJob, VariantJob,
)

MANIFEST_NAME = "kernel.yaml"
ROLES = ("in", "out", "inout")
SCALAR_TYPES = ("i32", "i64", "u32", "u64", "f32", "f64")
DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8",
          "uint32", "uint16", "uint8")
BOUNDS = ("bandwidth", "compute", "chain")
MOVES = ("up", "right")
COMPILERS = ("auto", "nvrtc", "nvcc")   # auto: NVRTC, and nvcc for what NVRTC cannot build
GATE_KEYS = ("max_slowdown", "max_bytes_growth", "max_flops_growth")
# Inputs are drawn uniformly from a buffer's range; without one, from these (integers stay
# small, and unsigned ones are not handed a -1 that would wrap to 4294967295).
DEFAULT_RANGES = {"f": (-1.0, 1.0), "i": (-100.0, 100.0), "u": (0.0, 100.0)}
_VARIANT_MODEL_KEYS = ("flops", "bytes", "reference", "tolerance", "precision")
# The keys each level of a manifest may have (anything else is a misspelling to name).
TOP_KEYS = ("name", "description", "params", "buffers", "prepare", "gate", "variants",
            "options", "compiler", *_VARIANT_MODEL_KEYS)
BUFFER_KEYS = ("dtype", "shape", "role", "range")
VARIANT_KEYS = ("description", "source", "python", "baseline", "launches", "options",
                "compiler", "expect", "gate", *_VARIANT_MODEL_KEYS)
LAUNCH_KEYS = ("entry", "grid", "block", "shared_mem", "args")
EXPECT_KEYS = ("bound", "faster_than", "move")
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".h", ".hpp")


@dataclass
class Buffer:
    name: str
    dtype: str
    shape: list[str | Number]
    role: str
    range: tuple[float, float]


@dataclass
class Launch:
    entry: str
    grid: list[str | Number]
    block: list[str | Number]
    shared_mem: str | Number
    args: list[str | dict[str, str | Number]]


@dataclass
class Expectation:
    """What the variant's author predicts; `run` flags a measurement that disagrees."""

    bound: str | None = None
    faster_than: str | None = None
    move: str | None = None        # up | right: the direction on the chart it should move


@dataclass
class PythonCall:
    """A python variant's function, called as ``fn(cupy, bufs, params)``."""

    module: Path                   # reference.py or the module.py the manifest names
    function: str


@dataclass
class Variant:
    name: str
    description: str
    source: str | None             # a CUDA variant's .cu file (launches say what to run)
    launches: list[Launch]
    python: PythonCall | None      # a python variant's function
    baseline: bool                 # declared the family's baseline
    flops: str | Number
    bytes: str | Number
    reference: str
    tolerance: float
    precision: str
    options: list[str]
    compiler: str
    expect: Expectation
    gate: dict[str, float] = field(default_factory=dict)   # thresholds for `rooflint gate`


@dataclass
class Manifest:
    name: str
    description: str
    path: Path                    # the kernel.yaml itself, named in every error
    directory: Path
    params: dict[str, Number]
    buffers: list[Buffer]
    variants: list[Variant]
    prepare: str | None = None    # reference.py function deriving inputs from the random ones


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
    manifest: Manifest
    params: dict[str, Number]
    job: FamilyJob
    models: dict[str, VariantModel] = field(default_factory=dict)


class _Reader:
    """Field access that reports the file and the dotted path of whatever is wrong."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, problem: str) -> RooflintError:
        return RooflintError(f"{self.path}: '{where}' {problem}")

    def mapping(self, value: Any, where: str, keys: tuple[str, ...] | None = None) -> dict:
        """``value`` as a mapping whose keys (when ``keys`` is given) are all known."""
        if not isinstance(value, dict):
            raise self.fail(where, "must be a mapping")
        if keys is not None:
            yamlfile.check_keys(value, keys, f"{where}." if where != "(top level)" else "",
                                self.path)
        return value

    def number(self, value: Any, where: str, example: str) -> float:
        """A finite, non-negative number (YAML reads ``1e-4`` as text: that is fine too)."""
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise self.fail(where, f"is {value!r}; expected a non-negative number such as "
                                   f"{example}")
        return number

    def get(self, data: dict, key: str, where: str, default: Any = ...) -> Any:
        if key in data and data[key] is not None:
            return data[key]
        if default is ...:
            raise RooflintError(f"{self.path}: missing field '{where}{key}'")
        return default

    def choice(self, value: Any, allowed: tuple[str, ...], where: str) -> str:
        if value not in allowed:
            raise self.fail(where, f"is {value!r}; expected one of {', '.join(allowed)}")
        return value

    def expr_list(self, value: Any, where: str) -> list[str | Number]:
        items = value if isinstance(value, list) else [value]
        if not 1 <= len(items) <= 3:
            raise self.fail(where, "must be a number, an expression or a list of 1 to 3 of them")
        return items


def find_manifest(target: str | Path) -> Path:
    """``kernels/gemm_fp32``, ``path/to/kernel.yaml`` or a bundled family name."""
    path = Path(target)
    if path.is_dir():
        path = path / MANIFEST_NAME
    elif not path.exists():
        from rooflint.paths import KERNELS_DIR
        bundled = KERNELS_DIR / str(target) / MANIFEST_NAME
        if bundled.exists():
            return bundled
    if not path.is_file():
        raise RooflintError(f"no kernel manifest at {target} (expected a directory with "
                            f"{MANIFEST_NAME}, a {MANIFEST_NAME} file, or a bundled family name)")
    if path.suffix in SOURCE_SUFFIXES:
        raise RooflintError(f"{target} is a CUDA source; rooflint expects a {MANIFEST_NAME} "
                            f"that names it (or its directory): see 'Writing a manifest' in "
                            f"the README")
    return path


def bundled_manifests() -> list[Path]:
    from rooflint.paths import KERNELS_DIR
    return sorted(p for p in KERNELS_DIR.glob(f"*/{MANIFEST_NAME}")
                  if not p.parent.name.startswith(("_", ".")))


def load_manifest(target: str | Path) -> Manifest:
    path = find_manifest(target)
    r = _Reader(path)
    data = r.mapping(yamlfile.load(path), "(top level)", TOP_KEYS)
    params: dict[str, Number] = {}
    for key, value in r.mapping(r.get(data, "params", "", {}), "params").items():
        if not str(key).isidentifier():
            raise r.fail(f"params.{key}", "is not a name expressions can use (letters, "
                                          "digits and _, not starting with a digit)")
        try:
            params[key] = evaluate(value, params)  # may use the parameters above it
        except RooflintError as exc:
            raise r.fail(f"params.{key}", f"is not a number: {exc}") from None
    buffers = [_buffer(r, name, spec) for name, spec in
               r.mapping(r.get(data, "buffers", ""), "buffers").items()]
    family_defaults = {key: data.get(key) for key in _VARIANT_MODEL_KEYS}
    family_defaults["options"] = data.get("options", [])   # before each variant's own
    family_defaults["compiler"] = r.choice(data.get("compiler", "auto"), COMPILERS, "compiler")
    family_gate = _gate(r, data.get("gate", {}), "gate")
    variants_raw = r.mapping(r.get(data, "variants", ""), "variants")
    if not variants_raw:
        raise r.fail("variants", "is empty")
    buffer_names = {b.name for b in buffers}
    variants = [_variant(r, name, spec, family_defaults, buffer_names, path.parent)
                for name, spec in variants_raw.items()]
    for variant, spec in zip(variants, variants_raw.values()):
        variant.gate = {**family_gate, **_gate(r, spec.get("gate", {}),
                                               f"variants.{variant.name}.gate")}
    return Manifest(
        name=str(data.get("name") or path.parent.name),
        description=str(data.get("description") or "").strip(),
        path=path,
        directory=path.parent,
        params=params,
        buffers=buffers,
        variants=variants,
        prepare=data.get("prepare"),
    )


def parse_fraction(value: Any) -> float:
    """``5%`` or ``0.05`` -> 0.05 (thresholds read as people write them): a finite,
    non-negative fraction, since a negative threshold would fail every variant."""
    text = str(value).strip()
    try:
        fraction = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise RooflintError(f"{value!r} is not a fraction (write 5% or 0.05)") from None
    if not math.isfinite(fraction) or fraction < 0:
        raise RooflintError(f"{value!r} is not a threshold: it must be zero or more "
                            f"(write 5% or 0.05)")
    return fraction


def _gate(r: _Reader, raw: Any, where: str) -> dict[str, float]:
    raw = r.mapping(raw, where)
    unknown = set(raw) - set(GATE_KEYS)
    if unknown:
        raise r.fail(f"{where}.{sorted(unknown)[0]}", f"is not a gate threshold "
                     f"({', '.join(GATE_KEYS)})")
    try:
        return {key: parse_fraction(value) for key, value in raw.items()}
    except RooflintError as exc:
        raise r.fail(where, str(exc)) from None


def _buffer(r: _Reader, name: str, spec: Any) -> Buffer:
    where = f"buffers.{name}."
    spec = r.mapping(spec, where.rstrip("."), BUFFER_KEYS)
    dtype = r.choice(r.get(spec, "dtype", where), DTYPES, where + "dtype")
    return Buffer(
        name=name,
        dtype=dtype,
        shape=r.expr_list(r.get(spec, "shape", where), where + "shape"),
        role=r.choice(r.get(spec, "role", where), ROLES, where + "role"),
        range=_range(r, spec.get("range"), np.dtype(dtype), where + "range"),
    )


def _range(r: _Reader, value: Any, dtype: np.dtype, where: str) -> tuple[float, float]:
    """``[low, high]``: two finite numbers, low below high, that the dtype holds (whole
    numbers for an integer buffer): inputs are drawn between them."""
    if value is None:
        return DEFAULT_RANGES[dtype.kind]
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise r.fail(where, f"is {value!r}; expected [low, high], e.g. [-1, 1]") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise r.fail(where, f"is {value!r}; expected finite [low, high] with low < high")
    limits = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
    least, most = float(limits.min), float(limits.max)
    if low < least or high > most:
        raise r.fail(where, f"is {value!r}, outside what {dtype} holds "
                            f"[{least:.10g}, {most:.10g}]")
    if dtype.kind in "iu" and not (low.is_integer() and high.is_integer()):
        raise r.fail(where, f"is {value!r}; a {dtype} buffer needs whole-number bounds")
    return low, high


INCLUDE_FLAGS = ("-I", "--include-path=")


def _options(r: _Reader, raw: Any, where: str, directory: Path) -> list[str]:
    """Compiler options, an include directory given relative (``-Iinclude``,
    ``-I include``, ``--include-path=include``) made relative to the manifest's directory,
    not to wherever rooflint was started: a family is a directory one can move or share."""
    if not isinstance(raw, list):
        raise r.fail(where, "must be a list of compiler options")
    options = [str(o) for o in raw]
    resolved = []
    for i, option in enumerate(options):
        after_flag = i > 0 and options[i - 1] in ("-I", "--include-path")
        flag = next((f for f in INCLUDE_FLAGS if option.startswith(f) and option != f), "")
        path = option[len(flag):] if flag else option if after_flag else None
        if path is not None and not Path(path).is_absolute():
            option = flag + str(directory / path)
        resolved.append(option)
    return resolved


def _variant(r: _Reader, name: str, spec: Any, defaults: dict, buffer_names: set[str],
             directory: Path) -> Variant:
    where = f"variants.{name}."
    spec = r.mapping(spec, where.rstrip("."), VARIANT_KEYS)

    def model(key: str) -> Any:
        value = spec.get(key, defaults[key])
        if value is None:
            raise RooflintError(f"{r.path}: missing field '{key}' (at the top level or in "
                                f"'{where}{key}')")
        return value

    def field_of(key: str) -> str:
        """Where a family-wide field came from: this variant, or the top level."""
        return where + key if key in spec else key

    source, python, baseline = _kind(r, spec, where, directory)
    if python is not None and "launches" in spec:
        raise r.fail(where + "launches", "is for a 'source' variant; a python variant "
                     "launches its kernels itself")
    raw_launches = r.get(spec, "launches", where) if source is not None else []
    if not isinstance(raw_launches, list):
        raise r.fail(where + "launches", "must be a list of launches")
    launches = [_launch(r, f"{where}launches[{i}].", raw, buffer_names)
                for i, raw in enumerate(raw_launches)]
    if source and not launches:
        raise r.fail(where + "launches", "is empty")
    expect = r.mapping(spec.get("expect", {}), where + "expect", EXPECT_KEYS)
    bound = expect.get("bound")
    if bound is not None:
        r.choice(bound, BOUNDS, where + "expect.bound")
    options = [*_options(r, defaults.get("options", []), "options", directory),
               *_options(r, spec.get("options", []), where + "options", directory)]
    return Variant(
        name=name,
        description=str(spec.get("description") or "").strip(),
        source=source,
        launches=launches,
        python=python,
        baseline=baseline,
        flops=model("flops"),
        bytes=model("bytes"),
        reference=str(model("reference")),
        tolerance=r.number(model("tolerance"), field_of("tolerance"), "1e-5"),
        precision=r.choice(model("precision"), PRECISIONS, field_of("precision")),
        options=options,
        compiler=r.choice(spec.get("compiler", defaults["compiler"]), COMPILERS,
                          field_of("compiler")),
        expect=Expectation(bound=bound, faster_than=expect.get("faster_than"),
                           move=r.choice(expect["move"], MOVES, where + "expect.move")
                           if expect.get("move") else None),
    )


_ONE_KIND = ("needs exactly one of 'source' (a .cu file with launches), 'python' (FUNCTION in "
             f"{REFERENCE_FILE} or module.py:FUNCTION) or 'baseline: FUNCTION' (a python "
             "variant declared the baseline)")
_PYTHON_FORM = f"expected FUNCTION (in {REFERENCE_FILE}) or module.py:FUNCTION"


def _kind(r: _Reader, spec: dict, where: str, directory: Path
          ) -> tuple[str | None, PythonCall | None, bool]:
    """(source, python function, declared baseline): what kind of variant this is."""
    source, python, baseline = spec.get("source"), spec.get("python"), spec.get("baseline")
    if not isinstance(baseline, (str, bool, type(None))):
        raise r.fail(where + "baseline", f"is {baseline!r}; expected true, false or a "
                     f"function in {REFERENCE_FILE} (shorthand for python: FUNCTION)")
    shorthand = isinstance(baseline, str)    # python: FUNCTION, baseline: true
    if [source, python, baseline if shorthand else None].count(None) != 2:
        raise r.fail(where.rstrip("."), _ONE_KIND)
    if source is not None and not isinstance(source, str):
        raise r.fail(where + "source", f"is {source!r}; expected the name of a .cu file")
    if source is not None and not (directory / source).is_file():
        raise r.fail(where + "source", f"names {source}, which is not in {directory}")
    if shorthand:
        return None, _python_call(r, baseline, where + "baseline", directory), True
    call = _python_call(r, python, where + "python", directory) if python is not None else None
    return source, call, bool(baseline)


def _python_call(r: _Reader, value: Any, where: str, directory: Path) -> PythonCall:
    """``FUNCTION`` (in reference.py) or ``module.py:FUNCTION``, a file beside the manifest
    that must exist (reference.py itself is only needed once the variant runs, as for the
    references)."""
    text = value if isinstance(value, str) else ""
    module, sep, function = text.rpartition(":")
    module = module if sep else REFERENCE_FILE
    if not (function.isidentifier() and module.endswith(".py")):
        raise r.fail(where, f"is {value!r}; {_PYTHON_FORM}")
    if sep and not (directory / module).is_file():
        raise r.fail(where, f"names {module}, which is not in {directory}")
    return PythonCall(module=directory / module, function=function)


def _launch(r: _Reader, where: str, raw: Any, buffer_names: set[str]) -> Launch:
    raw = r.mapping(raw, where.rstrip("."), LAUNCH_KEYS)
    args = r.get(raw, "args", where)
    if not isinstance(args, list):
        raise r.fail(where + "args", "must be a list")
    for i, arg in enumerate(args):
        _check_arg(r, f"{where}args[{i}]", arg, buffer_names)
    return Launch(
        entry=str(r.get(raw, "entry", where)),
        grid=r.expr_list(r.get(raw, "grid", where), where + "grid"),
        block=r.expr_list(r.get(raw, "block", where), where + "block"),
        shared_mem=raw.get("shared_mem", 0),
        args=args,
    )


def _check_arg(r: _Reader, where: str, arg: Any, buffer_names: set[str]) -> None:
    if isinstance(arg, str):
        if arg not in buffer_names:
            raise r.fail(where, f"is {arg!r}, which is not a buffer; scalars are written "
                         f"with their type, e.g. {{i32: {arg}}}")
        return
    if isinstance(arg, dict) and len(arg) == 1:
        (ctype,) = arg
        r.choice(ctype, SCALAR_TYPES, where + " type")
        return
    raise r.fail(where, "must be a buffer name or one typed scalar such as {i32: N}")


def resolve(manifest: Manifest, overrides: dict[str, Number], device: dict[str, Number],
            timing: TimingJob, variants: list[str] | None = None) -> ResolvedFamily:
    """Concrete job for the worker plus the evaluated work/traffic model per variant.

    ``device`` adds names such as ``num_sms`` that launch geometry may use, so a
    grid-stride kernel can be sized to fill whatever GPU it runs on. Whatever a size
    makes impossible (an empty buffer, a zero grid, a block over 1024 threads) is refused
    here, naming the field, before any GPU work.
    """
    unknown = set(overrides) - set(manifest.params)
    if unknown:
        raise RooflintError(f"{manifest.name}: unknown size parameter(s) {', '.join(sorted(unknown))} "
                            f"(parameters: {', '.join(manifest.params) or 'none'})")
    params = {**manifest.params, **overrides}
    names = {**device, **params}
    at = _Resolver(manifest.path, names)
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
        largest = max(launches, key=lambda l: _product(l.grid), default=None)
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


MAX_THREADS_PER_BLOCK = 1024   # every CUDA GPU since Fermi


@dataclass
class _Resolver:
    """Evaluates a manifest's expressions with the sizes bound; errors name file and field."""

    path: Path
    names: dict[str, Number]

    def value(self, expression: str | Number, where: str) -> Number:
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
        value = self.value(expression, where)
        if value != int(value) or value < minimum:
            raise RooflintError(f"{self.path}: '{where}' is {expression!r} = {value:g}; "
                                f"expected a whole number >= {minimum}{self._sizes()}")
        return int(value)

    def _sizes(self) -> str:
        shown = format_params(self.names)
        return f" (with {shown})" if shown else ""


def select_variants(manifest: Manifest, wanted: list[str] | None) -> list[Variant]:
    if not wanted:
        return manifest.variants
    by_name = {v.name: v for v in manifest.variants}
    missing = [w for w in wanted if w not in by_name]
    if missing:
        raise RooflintError(f"{manifest.name}: no variant {', '.join(missing)} "
                            f"(variants: {', '.join(by_name)})")
    return [by_name[w] for w in wanted]


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
    return LaunchJob(
        entry=launch.entry,
        grid=[at.count(g, where + "grid") for g in launch.grid],
        block=block,
        shared_mem=at.count(launch.shared_mem, where + "shared_mem", minimum=0),
        args=args,
    )
