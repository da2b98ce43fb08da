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

Loading validates everything a user can get wrong and says which file and field: the
manifest's schema (`MANIFEST_FILE`, read by rooflint.formats.schema) is declared below.
Beside this module: `families` finds a family's manifest, `manifest_fields` holds the
validators the schema names for its fields, `family_files` checks the files a manifest
names, `family_job` turns a manifest plus ``--size`` overrides into the concrete job the
measurement worker runs, and `family_code` checks the Python functions it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rooflint.common.vocabularies import CompilerChoice, Precision
from rooflint.analysis.evidence import Bound
from rooflint.common.errors import RooflintError
from rooflint.formats import compile_options, yamlfile
from rooflint.formats.expressions import Number
from rooflint.formats.families import find_manifest
from rooflint.formats.family_files import option_in_family, source_file
from rooflint.formats.manifest_fields import (
    GATE, PythonCall, baseline, buffer_range, choice, entry, expressions, function_name,
    launch_arg, one_word_name, non_negative, param_name, param_value, python_function,
)
from rooflint.formats.schema import (
    Document, Field, ListOf, MapOf, Place, Record, Wording, as_written, prose,
)
from rooflint.formats.jobs import REFERENCE_FILE

ROLES = ("in", "out", "inout")
DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8",
          "uint32", "uint16", "uint8")
MOVES = ("up", "right")
# Inputs are drawn uniformly from a buffer's range; without one, from these (integers stay
# small, and unsigned ones are not handed a -1 that would wrap to 4294967295).
DEFAULT_RANGES = {"f": (-1.0, 1.0), "i": (-100.0, 100.0), "u": (0.0, 100.0)}


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
    return yamlfile.read(find_manifest(target), MANIFEST_FILE)


# --- the validators and rules of this module's fields --------------------------------

def _compiler_options(value: Any, place: Place) -> list[str]:
    """Compiler options, each one `compile_options.FLAGS` allows (anything else is refused
    here, naming it); a relative path (``-Iinclude``, ``-I include``) is made relative to
    the manifest's directory, not to wherever rooflint was started: a family is a directory
    one can move or share."""
    if not isinstance(value, list):
        raise place.invalid("must be a list of compiler options")
    try:
        options = compile_options.parse([str(o) for o in value])
    except compile_options.OptionError as exc:
        raise place.item(exc.index).invalid(f"is {exc.written!r}: {exc.problem}") from None
    return [item for option in options
            for item in option_in_family(place.item(option.index), option).items]


def _move(value: Any, place: Place) -> str | None:
    """The direction the variant should move on the chart; an empty one predicts none."""
    return _MOVES(value, place) if value else None


_ONE_KIND = ("needs exactly one of 'source' (a .cu file with launches), 'python' (FUNCTION in "
             f"{REFERENCE_FILE} or module.py:FUNCTION) or 'baseline: FUNCTION' (a python "
             "variant declared the baseline)")


def _one_kind(values: dict, place: Place, written: Mapping) -> None:
    """A variant is CUDA source or a python function, named by exactly one key (the
    ``baseline: FUNCTION`` shorthand counts as its kind)."""
    shorthand = values["baseline"] if isinstance(values["baseline"], PythonCall) else None
    if [values["source"], values["python"], shorthand].count(None) != 2:
        raise place.invalid(_ONE_KIND)


def _launches_for_source(values: dict, place: Place, written: Mapping) -> None:
    """A CUDA variant says what to launch; a python variant launches its kernels itself."""
    launches = place.inner("launches", values)
    if values["source"] is None and "launches" in written:
        raise launches.invalid("is for a 'source' variant; a python variant launches its "
                               "kernels itself")
    if values["source"] is not None and values["launches"] is None:
        raise launches.missing()
    if values["source"] is not None and not values["launches"]:
        raise launches.invalid("is empty")


# --- what the fields become ----------------------------------------------------------

def _buffer(values: dict, place: Place, written: Mapping) -> Buffer:
    kind = np.dtype(values["dtype"]).kind
    return Buffer(name=place.key, dtype=values["dtype"], shape=values["shape"],
                  role=values["role"], range=values["range"] or DEFAULT_RANGES[kind])


def _launch(values: dict, place: Place, written: Mapping) -> Launch:
    return Launch(**values)


def _expectation(values: dict, place: Place, written: Mapping) -> Expectation:
    return Expectation(**values)


def _variant(values: dict, place: Place, written: Mapping) -> Variant:
    """A variant, with the family's options before its own and its gate over the family's."""
    shorthand = isinstance(values["baseline"], PythonCall)     # baseline: FUNCTION
    where = f"{place.where}.reference" if "reference" in written else "reference"
    return Variant(
        name=place.key, description=values["description"], source=values["source"],
        launches=values["launches"] or [],
        python=values["baseline"] if shorthand else values["python"],
        baseline=shorthand or bool(values["baseline"]),
        flops=values["flops"], bytes=values["bytes"], reference=values["reference"],
        tolerance=values["tolerance"], precision=values["precision"],
        options=[*place.top["options"], *values["options"]], compiler=values["compiler"],
        expect=values["expect"], gate={**place.top["gate"], **values["gate"]},
        reference_field=where)


def _manifest(values: dict, place: Place, written: Mapping) -> Manifest:
    return Manifest(
        name=values["name"] or place.file.parent.name, description=values["description"],
        path=place.file, directory=place.file.parent, params=values["params"],
        buffers=list(values["buffers"].values()), variants=list(values["variants"].values()),
        prepare=values["prepare"])


# --- the schema (rooflint.formats.schema) --------------------------------------------

_PRECISION = choice(tuple(Precision))
_COMPILER = choice(tuple(CompilerChoice))
_MOVES = choice(MOVES)
_BUFFER = Record((
    Field("dtype", choice(DTYPES)),
    Field("shape", expressions),
    Field("role", choice(ROLES)),
    Field("range", buffer_range, default=None),      # checked against the dtype above it
), build=_buffer)
_LAUNCH = Record((
    Field("entry", entry),
    Field("grid", expressions),
    Field("block", expressions),
    Field("shared_mem", as_written, default=0, keeps_null=True),
    Field("args", ListOf(launch_arg, shape="must be a list")),
), build=_launch)
_EXPECT = Record((
    Field("bound", choice(tuple(Bound)), default=None),
    Field("faster_than", as_written, default=None),
    Field("move", _move, default=None),
), build=_expectation)
# A variant's work model, reference and compiler are the family's unless it has its own.
_VARIANT = Record((
    Field("description", prose, default=""),
    Field("source", source_file, default=None),
    Field("python", python_function, default=None),
    Field("baseline", baseline, default=None),
    _one_kind,
    Field("launches", ListOf(_LAUNCH, shape="must be a list of launches"), default=None),
    _launches_for_source,
    Field("options", _compiler_options, default=[], keeps_null=True),
    Field("compiler", _COMPILER, inherit=True, keeps_null=True),
    Field("expect", _EXPECT, default=Expectation(), keeps_null=True),
    Field("gate", GATE, default={}, keeps_null=True),
    Field("flops", as_written, inherit=True),
    Field("bytes", as_written, inherit=True),
    Field("reference", function_name, inherit=True),
    Field("tolerance", non_negative("1e-5"), inherit=True),
    Field("precision", _PRECISION, inherit=True),
), build=_variant)
MANIFEST_FILE = Document(Record((
    Field("name", one_word_name, default=None),
    Field("description", prose, default=""),
    Field("params", MapOf(param_value, key=param_name), default={}),
    Field("buffers", MapOf(_BUFFER)),
    Field("prepare", function_name, default=None),
    Field("gate", GATE, default={}, keeps_null=True),
    Field("options", _compiler_options, default=[], keeps_null=True),
    Field("compiler", _COMPILER, default=CompilerChoice.AUTO, keeps_null=True),
    # the family-wide defaults, checked where a variant takes them
    *(Field(key, as_written, default=None)
      for key in ("flops", "bytes", "reference", "tolerance", "precision")),
    Field("variants", MapOf(_VARIANT, key=one_word_name, empty="is empty")),
), build=_manifest, shape="'(top level)' must be a mapping"),
    Wording(field="'{}'", missing="missing field '{}'", not_mapping="must be a mapping"))


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
