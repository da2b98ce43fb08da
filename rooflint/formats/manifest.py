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

import ast
import contextlib
import importlib.util
import math
import re
import sys
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from rooflint.formats import compile_options, yamlfile
from rooflint.common.errors import RooflintError
from rooflint.analysis.evidence import BOUNDS
from rooflint.formats.jsonfile import not_a_file
from rooflint.formats.expressions import Number, evaluate
from rooflint.formats.gpus import PRECISIONS
from rooflint.measure import build
from rooflint.common.units import format_params
from rooflint.measure.protocol import (
    REFERENCE_FILE, ArgJob, BufferJob, FamilyJob, LaunchJob, TimingJob, VariantJob,
    uses_torch,
)

MANIFEST_NAME = "kernel.yaml"
ROLES = ("in", "out", "inout")
SCALAR_TYPES = ("i32", "i64", "u32", "u64", "f32", "f64")
DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8",
          "uint32", "uint16", "uint8")
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
# A kernel's name, qualified or a template expression (``ns::k``, ``sgemm<64, (unsigned)8>``):
# one line of C++ that rooflint writes into the unit it compiles, so nothing that could end
# that line or statement (newlines, ``;``, braces, ``#``, quotes).
ENTRY = re.compile(r"[\w:<>,()*&+\-./ ]+")


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
    field: str = "python"          # the manifest field naming it, for errors


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
    options: list[str]             # as the compiler gets them: allowed ones, paths absolute
    compiler: str
    expect: Expectation
    gate: dict[str, float] = field(default_factory=dict)   # thresholds for `rooflint gate`
    reference_field: str = "reference"   # where its reference was named: here or family-wide


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
    if path.is_dir() and path.name != MANIFEST_NAME:   # a directory named so is a mistake to name
        path = path / MANIFEST_NAME
    elif not path.exists():
        from rooflint.common.paths import KERNELS_DIR
        bundled = KERNELS_DIR / str(target) / MANIFEST_NAME
        if bundled.exists():
            return bundled
    if not path.is_file():
        instead = not_a_file(path)
        if instead:
            raise RooflintError(f"{path} {instead}; a kernel manifest is a {MANIFEST_NAME} file")
        raise RooflintError(f"no kernel manifest at {target} (expected a directory with "
                            f"{MANIFEST_NAME}, a {MANIFEST_NAME} file, or a bundled family name)")
    if path.suffix in SOURCE_SUFFIXES:
        raise RooflintError(f"{target} is a CUDA source; rooflint expects a {MANIFEST_NAME} "
                            f"that names it (or its directory): see 'Writing a manifest' in "
                            f"the README")
    return path


def bundled_manifests() -> list[Path]:
    from rooflint.common.paths import KERNELS_DIR
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
        prepare=(_function_name(r, data["prepare"], "prepare")
                 if data.get("prepare") is not None else None),
    )


def parse_fraction(value: Any) -> float:
    """A threshold, ``5%``, as the fraction 0.05. It is written with ``%`` and nothing else
    is read: a bare ``5`` could mean 5 % or 500 % (rooflint once read it as the fraction
    5, so ``--max-slowdown 5`` let a kernel get six times slower), and ``0.05`` reads as
    0.05 % to some. It is finite and zero or more, since a negative one fails every
    variant. The error starts with "is" so that callers put the option or field first."""
    text = str(value).strip()
    number = _number(text.removesuffix("%"))
    if number is None:
        raise RooflintError(f"is {value!r}, not a percentage (write e.g. 5%)")
    if not math.isfinite(number) or number < 0:
        raise RooflintError(f"is {value!r}: a threshold is a finite percentage, zero or more "
                            f"(e.g. 5%)")
    if not text.endswith("%"):
        raise RooflintError(f"is {value!r}, a bare number: write the threshold as a "
                            f"percentage, e.g. {_as_percentage(number, text)}")
    return number / 100


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _as_percentage(number: float, text: str) -> str:
    """What a bare number most likely meant: 0.05 was a fraction (as rooflint once read
    it), so 5%; 5 was 5%."""
    return f"{number * 100:g}%" if 0 < number < 1 else f"{text}%"


def _gate(r: _Reader, raw: Any, where: str) -> dict[str, float]:
    raw = r.mapping(raw, where)
    unknown = set(raw) - set(GATE_KEYS)
    if unknown:
        raise r.fail(f"{where}.{sorted(unknown)[0]}", f"is not a gate threshold "
                     f"({', '.join(GATE_KEYS)})")
    thresholds = {}
    for key, value in raw.items():
        try:
            thresholds[key] = parse_fraction(value)
        except RooflintError as exc:
            raise r.fail(f"{where}.{key}", str(exc)) from None
    return thresholds


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


def _options(r: _Reader, raw: Any, where: str, directory: Path) -> list[str]:
    """Compiler options, each one `compile_options.FLAGS` allows (anything else is refused
    here, naming it); a relative path (``-Iinclude``, ``-I include``) is made relative to
    the manifest's directory, not to wherever rooflint was started: a family is a directory
    one can move or share."""
    if not isinstance(raw, list):
        raise r.fail(where, "must be a list of compiler options")
    try:
        options = compile_options.parse([str(o) for o in raw])
    except compile_options.OptionError as exc:
        raise r.fail(f"{where}[{exc.index}]", f"is {exc.written!r}: {exc.problem}") from None
    return [item for option in options
            for item in _in_family(r, option, f"{where}[{option.index}]", directory).items]


def _in_family(r: _Reader, option: compile_options.Option, where: str, directory: Path
               ) -> compile_options.Option:
    """A path option made absolute, if it names a directory (``-I``) or file
    (``-include``) inside the family's directory or the CUDA toolkit's include directory,
    symbolic links and ``..`` resolved: the compiler may read nothing else."""
    if not option.is_path:
        return option
    if not compile_options.plain(option.value):
        raise r.fail(where, f"is {' '.join(option.items)!r}: a path in options may not hold "
                            f"spaces, quotes, $, backquotes or backslashes")
    path = directory / option.value
    roots = (directory.resolve(), *build.toolkit_include_dirs())
    kind = "directory" if option.flag.value is compile_options.Value.DIRECTORY else "file"
    if not any(path.resolve().is_relative_to(root) for root in roots):
        raise r.fail(where, f"is {' '.join(option.items)!r}: {option.spelling} takes a {kind} "
                            f"inside the family's directory ({directory}) or the CUDA "
                            f"toolkit's include directory; {option.value} is {path.resolve()}")
    if not (path.is_dir() if kind == "directory" else path.is_file()):
        raise r.fail(where, f"is {' '.join(option.items)!r}: {path} is not a {kind}")
    return replace(option, value=str(path))


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
        reference=_function_name(r, model("reference"), field_of("reference")),
        tolerance=r.number(model("tolerance"), field_of("tolerance"), "1e-5"),
        precision=r.choice(model("precision"), PRECISIONS, field_of("precision")),
        options=options,
        compiler=r.choice(spec.get("compiler", defaults["compiler"]), COMPILERS,
                          field_of("compiler")),
        expect=Expectation(bound=bound, faster_than=expect.get("faster_than"),
                           move=r.choice(expect["move"], MOVES, where + "expect.move")
                           if expect.get("move") else None),
        reference_field=field_of("reference"),
    )


def _function_name(r: _Reader, value: Any, where: str) -> str:
    """A function of reference.py (a reference or ``prepare``), named as Python names it."""
    if not (isinstance(value, str) and value.isidentifier()):
        raise r.fail(where, f"is {value!r}; expected the name of a function in {REFERENCE_FILE}")
    return value


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
    if source is not None and build.SHELL_ACTIVE.search(source):
        raise r.fail(where + "source", f"is {source!r}: nvcc's shell would expand its $, `, "
                                       f"\" or \\; rename the file")
    if source is not None and not (directory / source).is_file():
        instead = not_a_file(directory / source)
        raise r.fail(where + "source", f"names {source}, which " + (
            f"{instead}" if instead else f"is not in {directory}"))
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
    if sep and not (directory / module).resolve().is_relative_to(directory.resolve()):
        raise r.fail(where, f"names {module}, which is outside the family's directory "
                            f"({directory}): a python variant runs the family's own code")
    if sep and not (directory / module).is_file():
        raise r.fail(where, f"names {module}, which is not in {directory}")
    return PythonCall(module=directory / module, function=function, field=where)


def _launch(r: _Reader, where: str, raw: Any, buffer_names: set[str]) -> Launch:
    raw = r.mapping(raw, where.rstrip("."), LAUNCH_KEYS)
    args = r.get(raw, "args", where)
    if not isinstance(args, list):
        raise r.fail(where + "args", "must be a list")
    for i, arg in enumerate(args):
        _check_arg(r, f"{where}args[{i}]", arg, buffer_names)
    entry = str(r.get(raw, "entry", where))
    if not ENTRY.fullmatch(entry):
        raise r.fail(where + "entry", f"is {entry!r}; expected a kernel's name as the source "
                                      f"writes it, e.g. scale or \"sgemm<64, 8>\"")
    return Launch(
        entry=entry,
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
    here, naming the field, before any GPU work. Without ``device`` (`check_sizes`), an
    expression that names a device value is left for the call that has it.
    """
    unknown = set(overrides) - set(manifest.params)
    if unknown:
        raise RooflintError(f"{manifest.name}: unknown size parameter(s) {', '.join(sorted(unknown))} "
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


def check_sizes(manifest: Manifest, overrides: dict[str, Number],
                variants: list[str] | None = None) -> None:
    """Refuse, before any worker starts, every size `resolve` refuses that does not depend
    on the device (a zero, negative or fractional shape, grid or block; a block or grid
    over CUDA's limits); one that names ``num_sms`` is checked once the device is known."""
    resolve(manifest, overrides, {}, TimingJob(), variants)


DEVICE_NAMES = ("num_sms",)    # names only the device can give a value to
MAX_THREADS_PER_BLOCK = 1024   # every CUDA GPU since Fermi
MAX_BLOCK = (1024, 1024, 64)   # x, y, z threads of a block
MAX_GRID = (2**31 - 1, 65535, 65535)   # x, y, z blocks of a grid (compute capability >= 3.0)


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


def check_code(manifest: Manifest, variants: list[str] | None = None) -> None:
    """Refuse, before any worker starts, a function the chosen variants need that its
    module cannot give: reference.py missing, a syntax error, a function not defined,
    reference.py raising when imported. reference.py is imported (what it imports, numpy
    usually, is loaded already) unless it imports PyTorch or Triton, which take seconds;
    such a file and python variants' modules are read, not run (a variant whose library is
    missing is skipped when it runs, not refused)."""
    calls = _needed_functions(manifest, select_variants(manifest, variants))
    for module in dict.fromkeys(call.module for call in calls):
        mine = [call for call in calls if call.module == module]
        defined, written = _module_functions(manifest, mine[0])
        for call in mine:
            if defined is not None and call.function not in defined:
                listed = f" (it defines: {', '.join(written)})" if written else ""
                raise RooflintError(f"{manifest.path}: '{call.field}' names {call.function}(), "
                                    f"which {module} does not define{listed}")


def _needed_functions(manifest: Manifest, chosen: list[Variant]) -> list[PythonCall]:
    """Every function the chosen variants call: references, prepare, python variants."""
    reference = manifest.directory / REFERENCE_FILE
    calls = [PythonCall(reference, manifest.prepare, "prepare")] if manifest.prepare else []
    for v in chosen:
        calls.append(PythonCall(reference, v.reference, v.reference_field))
        calls += [v.python] if v.python else []
    return calls


def _module_functions(manifest: Manifest, call: PythonCall) -> tuple[set[str] | None, list[str]]:
    """(the names the module binds, None when a star import makes that unknowable; the
    functions it defines, to list) for the module ``call`` names, which must exist and
    parse; reference.py imported when that is cheap."""
    module = call.module
    named = f"{manifest.path}: '{call.field}' names {call.function}() in {module}"
    if not module.is_file():
        raise RooflintError(f"{named}, which is not a file")
    try:
        tree = ast.parse(module.read_bytes(), str(module))
    except SyntaxError as exc:
        raise RooflintError(f"{named}, which has a syntax error at line {exc.lineno}: "
                            f"{exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise RooflintError(f"{named}, which Python cannot parse: {exc}") from None
    bound, written = _top_level(tree)
    if module == manifest.directory / REFERENCE_FILE and not uses_torch(module):
        loaded = _import(module, named)
        bound = {name for name, value in vars(loaded).items() if callable(value)}
    return bound, written


def _import(module: Path, named: str) -> ModuleType:
    """``module`` imported as the worker will import it, its printing sent to stderr (the
    result may be going to stdout); what it raises is the manifest's error."""
    spec = importlib.util.spec_from_file_location(f"rooflint_check_{module.parent.name}", module)
    loaded = importlib.util.module_from_spec(spec)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(loaded)
    except (Exception, SystemExit) as exc:
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
                 if f.filename == str(module)]
        at = f" at line {lines[-1]}" if lines else ""
        said = " ".join(str(exc).split())     # one line, whatever the message
        raise RooflintError(f"{named}, which raised {type(exc).__name__}{at} when imported: "
                            f"{said}") from None
    return loaded


def _top_level(tree: ast.Module) -> tuple[set[str] | None, list[str]]:
    """(every name a module binds at its top level, None after ``from m import *``; the
    functions it defines), read without running it. Statements under ``if``/``try``/
    ``with`` count: ``try: import x`` / ``except ImportError: def f`` binds both ways."""
    bound: set[str] | None = set()
    functions = []
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            functions += [node.name] if not isinstance(node, ast.ClassDef) else []
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                bound = None
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        else:   # if, try, with, for: their statements run at import too
            names = []
            pending += [child for key in ("body", "orelse", "finalbody")
                        for child in getattr(node, key, [])]
            pending += [child for handler in getattr(node, "handlers", [])
                        for child in handler.body]
        if bound is not None:
            bound.update(names)
    return bound, functions


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
