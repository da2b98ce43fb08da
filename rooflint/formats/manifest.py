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

Loading validates everything a user can get wrong and says which file and field. Beside
this module: `families` finds a family's manifest, `manifest_fields` reads each field's
value, `family_files` checks the files a manifest names, `family_job` turns a manifest
plus ``--size`` overrides into the concrete job the measurement worker runs, and
`family_code` checks the Python functions it names.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rooflint.formats import compile_options, yamlfile
from rooflint.common.errors import RooflintError
from rooflint.analysis.evidence import Bound
from rooflint.formats.expressions import Number, evaluate
from rooflint.formats.families import find_manifest
from rooflint.formats.family_files import option_in_family, python_module, source_file
from rooflint.formats.gpus import PRECISIONS
from rooflint.formats.manifest_fields import FieldReader
from rooflint.formats.thresholds import parse_fraction
from rooflint.measure.protocol import REFERENCE_FILE

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


def load_manifest(target: str | Path) -> Manifest:
    """The manifest of the family ``target`` names, every field checked."""
    path = find_manifest(target)
    r = FieldReader(path)
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


def _gate(r: FieldReader, raw: Any, where: str) -> dict[str, float]:
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


def _buffer(r: FieldReader, name: str, spec: Any) -> Buffer:
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


def _range(r: FieldReader, value: Any, dtype: np.dtype, where: str) -> tuple[float, float]:
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


def _options(r: FieldReader, raw: Any, where: str, directory: Path) -> list[str]:
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
            for item in option_in_family(r, option, f"{where}[{option.index}]", directory).items]


def _variant(r: FieldReader, name: str, spec: Any, defaults: dict, buffer_names: set[str],
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
        r.choice(bound, tuple(Bound), where + "expect.bound")
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


def _function_name(r: FieldReader, value: Any, where: str) -> str:
    """A function of reference.py (a reference or ``prepare``), named as Python names it."""
    if not (isinstance(value, str) and value.isidentifier()):
        raise r.fail(where, f"is {value!r}; expected the name of a function in {REFERENCE_FILE}")
    return value


_ONE_KIND = ("needs exactly one of 'source' (a .cu file with launches), 'python' (FUNCTION in "
             f"{REFERENCE_FILE} or module.py:FUNCTION) or 'baseline: FUNCTION' (a python "
             "variant declared the baseline)")
_PYTHON_FORM = f"expected FUNCTION (in {REFERENCE_FILE}) or module.py:FUNCTION"


def _kind(r: FieldReader, spec: dict, where: str, directory: Path
          ) -> tuple[str | None, PythonCall | None, bool]:
    """(source, python function, declared baseline): what kind of variant this is."""
    source, python, baseline = spec.get("source"), spec.get("python"), spec.get("baseline")
    if not isinstance(baseline, (str, bool, type(None))):
        raise r.fail(where + "baseline", f"is {baseline!r}; expected true, false or a "
                     f"function in {REFERENCE_FILE} (shorthand for python: FUNCTION)")
    shorthand = isinstance(baseline, str)    # python: FUNCTION, baseline: true
    if [source, python, baseline if shorthand else None].count(None) != 2:
        raise r.fail(where.rstrip("."), _ONE_KIND)
    if source is not None:
        source = source_file(r, source, where + "source", directory)
    if shorthand:
        return None, _python_call(r, baseline, where + "baseline", directory), True
    call = _python_call(r, python, where + "python", directory) if python is not None else None
    return source, call, bool(baseline)


def _python_call(r: FieldReader, value: Any, where: str, directory: Path) -> PythonCall:
    """``FUNCTION`` (in reference.py) or ``module.py:FUNCTION``, a file beside the manifest
    that must exist (reference.py itself is only needed once the variant runs, as for the
    references)."""
    text = value if isinstance(value, str) else ""
    module, sep, function = text.rpartition(":")
    module = module if sep else REFERENCE_FILE
    if not (function.isidentifier() and module.endswith(".py")):
        raise r.fail(where, f"is {value!r}; {_PYTHON_FORM}")
    path = python_module(r, module, where, directory) if sep else directory / module
    return PythonCall(module=path, function=function, field=where)


def _launch(r: FieldReader, where: str, raw: Any, buffer_names: set[str]) -> Launch:
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


def _check_arg(r: FieldReader, where: str, arg: Any, buffer_names: set[str]) -> None:
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


def select_variants(manifest: Manifest, wanted: list[str] | None) -> list[Variant]:
    """The variants ``--variant`` names (all without one); an unknown name is refused."""
    if not wanted:
        return manifest.variants
    by_name = {v.name: v for v in manifest.variants}
    missing = [w for w in wanted if w not in by_name]
    if missing:
        raise RooflintError(f"{manifest.name}: no variant {', '.join(missing)} "
                            f"(variants: {', '.join(by_name)})")
    return [by_name[w] for w in wanted]
