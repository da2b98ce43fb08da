"""Safe arithmetic over manifest parameters.

Manifests write sizes, FLOP counts and launch geometry as expressions
(``2*M*N*K``, ``cdiv(N, 256)``). They come from files users download and share, so
they are parsed into a Python AST and walked against a whitelist; ``eval`` is never
called. Allowed: numbers, parameter names, ``+ - * / // % **``, unary minus,
parentheses, and the functions min, max, ceil, floor, cdiv.

What an expression can cost is bounded too: every value, intermediate ones included, must
be finite and at most MAX_MAGNITUDE (far above any real size or FLOP count), and a power
whose result would pass that is refused before it is computed, so ``((2**64)**64)**64``
is one error, not a minute of big-integer arithmetic. So is its text: at most MAX_LENGTH
characters and MAX_DEPTH levels of nesting (Python's own parser runs out of stack on a few
thousand ``1+1+...`` terms and of memory on 200,000 unary minus signs; no size or FLOP
formula comes near either bound).
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Mapping

from rooflint.common.errors import RooflintError

Number = int | float

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCTIONS = {
    "min": min, "max": max,
    "ceil": lambda x: int(math.ceil(x)), "floor": lambda x: int(math.floor(x)),
    "cdiv": lambda a, b: -(-a // b),
}
MAX_MAGNITUDE = 1e24   # 10^24: a yotta-FLOP; no size, count or byte total comes near
MAX_LENGTH = 500       # characters; the bundled manifests' longest expression has 11
MAX_DEPTH = 100        # nested operations, calls and parentheses


def evaluate(expression: str | Number, names: Mapping[str, Number]) -> Number:
    """Value of ``expression`` with ``names`` bound; RooflintError on anything not allowed."""
    if isinstance(expression, bool):
        raise RooflintError(f"expected a number or expression, got {expression!r}")
    if isinstance(expression, (int, float)):
        return expression
    text = str(expression).strip()
    if len(text) > MAX_LENGTH:
        raise RooflintError(f"expression {text[:40]!r}... is {len(text)} characters long; "
                            f"expressions may have at most {MAX_LENGTH}")
    try:
        tree = ast.parse(text, mode="eval")
    except (RecursionError, MemoryError):
        raise _too_deep(text) from None
    except SyntaxError as exc:
        hint = ""
        if str(expression).count("(") != str(expression).count(")"):
            hint = (" (in YAML, quote expressions with commas: inside {...} or [...] a comma "
                    "splits them)")
        raise RooflintError(f"cannot parse expression {expression!r}: {exc.msg}{hint}") from None
    if _depth(tree.body) > MAX_DEPTH:
        raise _too_deep(text)
    return _walk(tree.body, names, text)


def _depth(tree: ast.AST) -> int:
    """How deeply ``tree`` nests, found without recursion (the walk that follows recurses)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _too_deep(text: str) -> RooflintError:
    return RooflintError(f"expression {text[:40]!r}... nests more than {MAX_DEPTH} levels "
                         f"deep; write it with fewer nested operations")


def _walk(node: ast.AST, names: Mapping[str, Number], source: str) -> Number:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return _bounded(node.value, source)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise _unknown_name(node.id, source, names)
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _walk(node.left, names, source), _walk(node.right, names, source)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right, source)
        try:
            return _bounded(_BINARY[type(node.op)](left, right), source)
        except ZeroDivisionError:
            raise RooflintError(f"division by zero in {source!r}") from None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_walk(node.operand, names, source))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in _FUNCTIONS and not node.keywords:
        args = [_walk(arg, names, source) for arg in node.args]
        try:
            return _bounded(_FUNCTIONS[node.func.id](*args), source)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
            raise RooflintError(f"bad call {node.func.id}() in {source!r}: {exc}") from None
    raise RooflintError(f"not allowed in expression {source!r}: {ast.dump(node)[:60]}")


def _unknown_name(name: str, source: str, names: Mapping[str, Number]) -> RooflintError:
    """A name the expression uses that nothing defines, said as what it is: where no name
    is defined at all (``--size N=abc``, a family's first parameter) a word is simply not
    a number, and "known: none" would send the reader looking for names that cannot be."""
    where = "" if source == name else f" in {source!r}"
    if not names:
        return RooflintError(f"{name!r}{where} is not a number, and no names are defined here")
    return RooflintError(f"unknown name {name!r}{where} (known: {', '.join(sorted(names))})")


def _bounded(value: Number, source: str) -> Number:
    if isinstance(value, complex):
        raise RooflintError(f"{source!r} is not a real number")
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise RooflintError(f"{source!r} reaches {value!r}: values must be finite and at most "
                            f"{MAX_MAGNITUDE:g}")
    return value


def _check_power(base: Number, exponent: Number, source: str) -> None:
    """Refuse a power whose result would exceed MAX_MAGNITUDE, before computing it."""
    if base and exponent * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE):
        raise RooflintError(f"{source!r}: {base!r}**{exponent!r} would exceed "
                            f"{MAX_MAGNITUDE:g}")
    if base == 0 and exponent < 0:
        raise RooflintError(f"division by zero in {source!r} (0 to a negative power)")
