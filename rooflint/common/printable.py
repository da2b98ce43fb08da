"""Text from files someone else wrote, made safe to show.

Results, baselines, calibrations and manifests arrive from colleagues and CI artifacts;
their names, notes and messages reach the terminal, the gate's Markdown and JUnit reports
and the picture. A control character in them would drive the terminal
(``\\x1b]0;title\\x07\\x1b[2J`` sets the window title and clears the screen), break a
one-line error into several, or make the JUnit XML invalid (XML 1.0 cannot carry it).
So every such character is shown as a visible escape (``\\x1b``, ``\\n``), as Python's
``repr`` writes it; every other character, ordinary Unicode included, is kept as written.
Unpaired surrogates (which JSON can spell, and which no output encoding can write) and
the two Unicode non-characters XML forbids are escaped the same way.

:func:`printable` is for a line (a message, a name in a cell); :func:`printable_lines`, the
same escaping with the line breaks and tabs that lay a text out kept, is for what is
written on standard output or error as a whole (a table, a CSV, a page): the one escaping
every text rooflint shows passes through (commands/stdio.py).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, TypeVar

T = TypeVar("T")

# C0 controls (ESC, BEL, newline...), DEL and the C1 controls (CSI is one byte there);
# unpaired surrogates; U+FFFE and U+FFFF.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_LAYOUT = "\n\t"      # what printable_lines keeps: they move to the next line or column only


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """``text`` with every control character written as a visible escape."""
    return _UNPRINTABLE.sub(_visible, text)


def printable_lines(text: str) -> str:
    """``text`` made :func:`printable` but for its newlines and tabs, which only lay it out."""
    return _UNPRINTABLE.sub(_visible_but_layout, text)


def _visible_but_layout(match: re.Match[str]) -> str:
    return match.group() if match.group() in _LAYOUT else _visible(match)


def printable_fields(document: T) -> T:
    """A copy of ``document`` (dataclasses, lists, tuples and dicts of them, as read from a
    file) with every string in it, dict keys included, made :func:`printable`; what is
    rendered from the copy cannot reach the terminal raw, whichever field it shows."""
    return mapped_strings(document, printable)


def mapped_strings(document: T, change: Callable[[str], str]) -> T:
    """A copy of ``document`` (dataclasses, lists, tuples and dicts of them) with ``change``
    made to every string in it, dict keys included."""
    if isinstance(document, str):
        return change(document)             # type: ignore[return-value]
    if dataclasses.is_dataclass(document) and not isinstance(document, type):
        return dataclasses.replace(document, **{  # type: ignore[return-value]
            f.name: mapped_strings(getattr(document, f.name), change)
            for f in dataclasses.fields(document) if f.init})
    if type(document) in (list, tuple):
        return type(document)(mapped_strings(item, change)  # type: ignore[return-value]
                              for item in document)
    if isinstance(document, dict):
        return {mapped_strings(k, change): mapped_strings(v, change)  # type: ignore[return-value]
                for k, v in document.items()}
    return document
