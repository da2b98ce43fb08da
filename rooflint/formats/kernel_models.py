"""The optional file that gives a profiled program's kernels the author's count of the work.

A profile measures a kernel's bytes and FLOPs but cannot know its compulsory bytes, so its
points have no algorithmic intensity and nothing says how far right a kernel could move.
A user who knows can say so, per kernel-name pattern, in expressions over named values::

    values:                       # numbers, or expressions over the values above them
      B: 8
      S: 1024
      D: 2048
    kernels:
      - match: layer_norm         # a regular expression on the kernel's demangled name
        flops: 8 * B * S * D      # per launch
        bytes: 2 * (2 * B * S * D)
        written: 2 * B * S * D    # optional: output bytes (the compulsory writes)

The first pattern that matches a kernel's demangled name, or its short name in the profile
(``nvjet_..._TNT@1536`` names one grid of a kernel run at two), gives that kernel's model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rooflint.formats import yamlfile
from rooflint.common.errors import RooflintError
from rooflint.formats.expressions import Number, evaluate
from rooflint.analysis.observation import Model

KEYS = ("values", "kernels")
KERNEL_KEYS = ("match", "flops", "bytes", "written")


@dataclass
class KernelModel:
    pattern: re.Pattern[str]
    model: Model


def load(path: Path) -> list[KernelModel]:
    """The file's kernel models, in order; RooflintError naming the file and field."""
    data = yamlfile.load(path)
    if not isinstance(data, dict):
        raise RooflintError(f"{path}: expected a mapping with 'values' and 'kernels'")
    yamlfile.check_keys(data, KEYS, "", path)
    values = _values(data.get("values") or {}, path)
    entries = data.get("kernels")
    if not isinstance(entries, list) or not entries:
        raise RooflintError(f"{path}: 'kernels' must be a list of {{match, flops, bytes}}")
    return [_kernel(entry, i, values, path) for i, entry in enumerate(entries)]


def model_for(names: tuple[str, ...], models: list[KernelModel]) -> Model | None:
    """The model of the first pattern matching any of a kernel's names, or None."""
    return next((m.model for m in models if any(m.pattern.search(n) for n in names)), None)


def _values(raw: object, path: Path) -> dict[str, Number]:
    if not isinstance(raw, dict):
        raise RooflintError(f"{path}: 'values' must map names to numbers or expressions")
    values: dict[str, Number] = {}
    for name, expression in raw.items():
        if not (isinstance(name, str) and name.isidentifier()):
            raise RooflintError(f"{path}: 'values.{name}': a value's name must be an identifier")
        values[name] = _evaluate(expression, values, f"values.{name}", path)
    return values


def _kernel(entry: object, i: int, values: dict[str, Number], path: Path) -> KernelModel:
    where = f"kernels[{i}]"
    if not isinstance(entry, dict):
        raise RooflintError(f"{path}: '{where}' must be a mapping with match, flops and bytes")
    yamlfile.check_keys(entry, KERNEL_KEYS, f"{where}.", path)
    for key in ("match", "flops", "bytes"):
        if key not in entry:
            raise RooflintError(f"{path}: '{where}.{key}' is missing")
    try:
        pattern = re.compile(str(entry["match"]))
    except re.error as exc:
        raise RooflintError(f"{path}: '{where}.match' is not a regular expression: "
                            f"{exc}") from None
    counts = {key: _evaluate(entry.get(key, 0), values, f"{where}.{key}", path)
              for key in ("flops", "bytes", "written")}
    if counts["bytes"] <= 0 or counts["flops"] < 0 or counts["written"] < 0:
        raise RooflintError(f"{path}: '{where}': bytes must be positive, flops and written "
                            f"not negative")
    return KernelModel(pattern, Model(flops=float(counts["flops"]),
                                      bytes=float(counts["bytes"]),
                                      written_bytes=float(counts["written"])))


def _evaluate(expression: object, values: dict[str, Number], field: str, path: Path) -> Number:
    try:
        return evaluate(expression, values)  # type: ignore[arg-type]
    except RooflintError as exc:
        raise RooflintError(f"{path}: '{field}': {exc}") from None
