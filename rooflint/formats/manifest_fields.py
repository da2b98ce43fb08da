"""Typed access to a ``kernel.yaml``'s fields, each error naming the file and the field.

This is the manifest's hand-written YAML validator (issue 26 counts three, beside one
declarative JSON reader): every check of a value's shape (a mapping with known keys, a
non-negative number, one of a list of words, one to three expressions) goes through
`FieldReader`, so its error reads ``FILE: 'variants.copy.tolerance' is ...`` wherever the
field sits. What each field means is `rooflint.formats.manifest`'s business.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rooflint.common.errors import RooflintError
from rooflint.formats import yamlfile
from rooflint.formats.expressions import Number


class FieldReader:
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
