"""The named validators a ``kernel.yaml``'s schema refers to, each error naming file and field.

`rooflint.formats.manifest` declares the manifest's schema (rooflint.formats.schema): its
records and fields, and where a value needs more than a shape, one of these: a word from a
list, a non-negative number, one to three expressions, a function of reference.py, a
buffer's range for its dtype, gate thresholds, parameters, a kernel's name, a launch
argument, a python variant's function (compiler options are read by `manifest` itself,
against `compile_options`' table). Each reads a value at its place and
returns what it becomes, or raises an error that reads ``FILE: 'variants.copy.tolerance'
is ...`` wherever the field sits.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rooflint.common.errors import RooflintError
from rooflint.formats.expressions import Number, evaluate
from rooflint.formats.family_files import python_module
from rooflint.formats.schema import MapOf, Place, Validator
from rooflint.formats.thresholds import parse_fraction
from rooflint.formats.jobs import REFERENCE_FILE

SCALAR_TYPES = ("i32", "i64", "u32", "u64", "f32", "f64")
GATE_KEYS = ("max_slowdown", "max_bytes_growth", "max_flops_growth")
# A kernel's name, qualified or a template expression (``ns::k``, ``sgemm<64, (unsigned)8>``):
# one line of C++ that rooflint writes into the unit it compiles, so nothing that could end
# that line or statement (newlines, ``;``, braces, ``#``, quotes).
ENTRY = re.compile(r"[\w:<>,()*&+\-./ ]+")
# A family's or a variant's name: typed back on the command line (``--variant NAME``,
# ``FILE.json:VARIANT``), shown in every table, export and picture, and made into file
# names by the tools that read results: one word, so no path separator, colon, space,
# quote or control character.
NAME = re.compile(r"\w[\w.+-]*")
NAME_RULE = "one word of letters, digits, _, -, . and +, starting with a letter, digit or _"


@dataclass
class PythonCall:
    """A python variant's function, called as ``fn(cupy, bufs, params)``."""

    module: Path                   # reference.py or the module.py the manifest names
    function: str
    field: str = "python"          # the manifest field naming it, for errors


def choice(words: tuple[str, ...]) -> Validator:
    """A validator taking one of ``words``."""
    def one_of(value: Any, place: Place) -> str:
        if value not in words:
            raise place.invalid(_not_one_of(value, words))
        return value
    return one_of


def _not_one_of(value: Any, words: tuple[str, ...]) -> str:
    return f"is {value!r}; expected one of {', '.join(words)}"


def non_negative(example: str) -> Validator:
    """A validator taking a finite, non-negative number (YAML reads ``1e-4`` as text: that
    is fine too); its error gives ``example``."""
    def number(value: Any, place: Place) -> float:
        try:
            read = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            read = math.nan
        if not math.isfinite(read) or read < 0:
            raise place.invalid(f"is {value!r}; expected a non-negative number such as "
                                f"{example}")
        return read
    return number


def expressions(value: Any, place: Place) -> list[str | Number]:
    """A shape, grid or block: one to three numbers or expressions, evaluated once sizes
    are bound."""
    items = value if isinstance(value, list) else [value]
    if not 1 <= len(items) <= 3:
        raise place.invalid("must be a number, an expression or a list of 1 to 3 of them")
    return items


def function_name(value: Any, place: Place) -> str:
    """A function of reference.py (a reference or ``prepare``), named as Python names it."""
    if not (isinstance(value, str) and value.isidentifier()):
        raise place.invalid(f"is {value!r}; expected the name of a function in {REFERENCE_FILE}")
    return value


def one_word_name(value: Any, place: Place) -> str:
    """A family's or a variant's name: one word (`NAME`), as YAML gave it, never converted
    (``!!binary`` gives bytes, which ``str`` would silently make ``b'hello'``)."""
    if not isinstance(value, str):
        raise place.invalid(f"is {value!r}, which YAML read as {type(value).__name__}, not "
                            f"text; a name is {NAME_RULE} (quoted where YAML would read it "
                            f"otherwise)")
    if not NAME.fullmatch(value):
        raise place.invalid(f"is {value!r}; a name is {NAME_RULE}")
    return value


def param_name(key: Any, place: Place) -> None:
    if not str(key).isidentifier():
        raise place.invalid("is not a name expressions can use (letters, digits and _, not "
                            "starting with a digit)")


def param_value(value: Any, place: Place) -> Number:
    """A parameter: a number, or an expression over the parameters above it."""
    try:
        return evaluate(value, place.beside)
    except RooflintError as exc:
        raise place.invalid(f"is not a number: {exc}") from None


def buffer_range(value: Any, place: Place) -> tuple[float, float]:
    """``[low, high]``: two finite numbers, low below high, that the buffer's dtype holds
    (whole numbers for an integer buffer): inputs are drawn between them."""
    dtype = np.dtype(place.beside["dtype"])
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise place.invalid(f"is {value!r}; expected [low, high], e.g. [-1, 1]") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise place.invalid(f"is {value!r}; expected finite [low, high] with low < high")
    limits = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
    least, most = float(limits.min), float(limits.max)
    if low < least or high > most:
        raise place.invalid(f"is {value!r}, outside what {dtype} holds "
                            f"[{least:.10g}, {most:.10g}]")
    if dtype.kind in "iu" and not (low.is_integer() and high.is_integer()):
        raise place.invalid(f"is {value!r}; a {dtype} buffer needs whole-number bounds")
    return low, high


def _gate_key(key: Any, place: Place) -> None:
    if key not in GATE_KEYS:
        raise place.invalid(f"is not a gate threshold ({', '.join(GATE_KEYS)})")


def _percentage(value: Any, place: Place) -> float:
    try:
        return parse_fraction(value)
    except RooflintError as exc:
        raise place.invalid(str(exc)) from None


# `rooflint gate`'s thresholds, as a family or a variant sets them: ``max_slowdown: 5%``.
GATE = MapOf(_percentage, key=_gate_key)


def entry(value: Any, place: Place) -> str:
    """The kernel a launch runs, as the source writes its name."""
    name = str(value)
    if not ENTRY.fullmatch(name):
        raise place.invalid(f"is {name!r}; expected a kernel's name as the source writes "
                            f"it, e.g. scale or \"sgemm<64, 8>\"")
    return name


def launch_arg(arg: Any, place: Place) -> Any:
    """A buffer's name, or one scalar written with its C type (``{i32: N}``)."""
    if isinstance(arg, str):
        if arg not in place.top["buffers"]:          # the buffers, by name
            raise place.invalid(f"is {arg!r}, which is not a buffer; scalars are written "
                                f"with their type, e.g. {{i32: {arg}}}")
        return arg
    if isinstance(arg, dict) and len(arg) == 1:
        (ctype,) = arg
        if ctype not in SCALAR_TYPES:
            typed = place.wording.field.format(f"{place.where} type")
            raise place.refuse(f"{typed} {_not_one_of(ctype, SCALAR_TYPES)}")
        return arg
    raise place.invalid("must be a buffer name or one typed scalar such as {i32: N}")


_PYTHON_FORM = f"expected FUNCTION (in {REFERENCE_FILE}) or module.py:FUNCTION"


def python_function(value: Any, place: Place) -> PythonCall:
    """``FUNCTION`` (in reference.py) or ``module.py:FUNCTION``, a file beside the manifest
    that must exist (reference.py itself is only needed once the variant runs, as for the
    references)."""
    written = value if isinstance(value, str) else ""
    module, sep, function = written.rpartition(":")
    module = module if sep else REFERENCE_FILE
    if not (function.isidentifier() and module.endswith(".py")):
        raise place.invalid(f"is {value!r}; {_PYTHON_FORM}")
    path = python_module(place, module) if sep else place.file.parent / module
    return PythonCall(module=path, function=function, field=place.where)


def baseline(value: Any, place: Place) -> bool | PythonCall:
    """``true``/``false``, or the older shorthand ``baseline: FUNCTION`` for ``python:
    FUNCTION`` + ``baseline: true`` (a library call is what a baseline usually is)."""
    if isinstance(value, str):
        return python_function(value, place)
    if not isinstance(value, bool):
        raise place.invalid(f"is {value!r}; expected true, false or a function in "
                            f"{REFERENCE_FILE} (shorthand for python: FUNCTION)")
    return value
