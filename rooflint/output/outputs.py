"""Where a command may write: the guard every command runs before it reads or measures.

Nothing a user named is overwritten unless it is the output they asked for, of the kind
they asked for (issue 22):

- an output path that starts with ``-`` is an option whose value went missing
  (``--markdown --junit j.xml``), not a file name;
- two outputs are never one file, and no output is one of the command's inputs, compared
  as files (a link, a ``./`` spelling or a hard link to the input is the input); that
  holds for a file appended to ($GITHUB_STEP_SUMMARY) as for one replaced;
- an existing file is replaced only if it is empty or already a document of the kind
  written (``--update`` replaces a baseline, never a result or notes; ``-o`` a picture of
  its own format; ``--markdown`` an earlier gate summary, never a README).

:func:`jsonfile.require_writable` is the other half, that a path can be written at all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Callable, Sequence

from rooflint.formats import baseline as baselines, results

from rooflint.analysis import calibration as calibrations
from rooflint.common.errors import RooflintError
from rooflint.formats.jsonfile import read_versioned
from rooflint.output import exports
from rooflint.output.gate_report import GATE_HEADING

HEAD_BYTES = 4096   # what is read of an existing file to tell its kind by its start


def _any_name(path: Path) -> None:
    """Every name will do (JSON and reports are written whatever their extension)."""


@dataclass(frozen=True)
class Kind:
    """What a command writes; ``holds`` tells whether an existing regular file already is
    one (so that replacing it loses nothing the user did not ask to replace), and
    ``check_name`` refuses a name it cannot be written under (a picture's extension)."""

    name: str                       # as the refusal says it: "a rooflint baseline"
    holds: Callable[[Path], bool]
    check_name: Callable[[Path], object] = _any_name


@dataclass(frozen=True)
class Named:
    """A path and how the user named it: ``--current``, ``RESULT``, ``GITHUB_STEP_SUMMARY``."""

    option: str
    path: Path


@dataclass(frozen=True)
class Output(Named):
    """A path a command writes, and what it writes there."""

    kind: Kind | None               # None: appended to (the step summary), never replaced


def refuse_overwrites(outputs: Sequence[Output], inputs: Sequence[Named] = ()) -> None:
    """RooflintError, one line naming the options, for an output that would replace or
    append to something the user did not ask to replace (see the module docstring)."""
    for output in outputs:
        if str(output.path) == "-":
            raise RooflintError(f"{output.option} -: this writes a file, not standard "
                                f"output; name the file")
        if str(output.path).startswith("-"):
            raise RooflintError(f"{output.option} {output.path}: an option, not a file name; "
                                f"{output.option} is missing its value (give a file whose "
                                f"name starts with - by its full path)")
        if output.kind:
            output.kind.check_name(output.path)
    for a, b in combinations(outputs, 2):
        if _same_path(a.path, b.path):
            raise RooflintError(f"{a.option} {a.path} and {b.option} {b.path} are one file; "
                                f"give each its own path")
    for output in outputs:
        for source in inputs:
            if _same_file(output.path, source.path):
                verb = "append to" if output.kind is None else "write over"
                raise RooflintError(f"{output.option} {output.path} is {source.option} "
                                    f"{source.path}: rooflint does not {verb} a file it "
                                    f"reads; give {output.option} another path")
    for output in outputs:
        if output.kind and _nonempty_file(output.path) and not output.kind.holds(output.path):
            raise RooflintError(f"{output.option} {output.path} exists and is not "
                                f"{output.kind.name}, so rooflint will not replace it: "
                                f"remove it or choose another path")


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one existing file (device and inode: links count)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _same_path(a: Path, b: Path) -> bool:
    """One file, or one path once resolved (two outputs not written yet)."""
    return _same_file(a, b) or os.path.realpath(a) == os.path.realpath(b)


def _nonempty_file(path: Path) -> bool:
    """A regular file with something in it to lose (a pipe or device is written in place)."""
    return path.is_file() and path.stat().st_size > 0


def _head(path: Path) -> bytes:
    """The first bytes of ``path`` (none if it cannot be read), opened without blocking: a
    FIFO swapped in for the file since its kind was checked does not hang the command."""
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError:
        return b""


def _document(schema: str) -> Callable[[Path], bool]:
    """Whether a file is a rooflint JSON document declaring ``schema``."""
    def holds(path: Path) -> bool:
        try:
            read_versioned(path, schema, "document")
        except RooflintError:
            return False
        return True
    return holds


def _starts_with(*signatures: bytes, containing: bytes = b"") -> Callable[[Path], bool]:
    """Whether a file starts (after white space) with one of ``signatures`` and holds
    ``containing`` within its first bytes."""
    def holds(path: Path) -> bool:
        start = _head(path)
        return start.lstrip().startswith(signatures) and containing in start
    return holds


RESULT = Kind("a rooflint result", _document(results.SCHEMA))
BASELINE = Kind("a rooflint baseline", _document(baselines.SCHEMA))
CALIBRATION = Kind("a rooflint calibration", _document(calibrations.SCHEMA))
GATE_SUMMARY = Kind("a rooflint gate summary", _starts_with(GATE_HEADING.encode()))
JUNIT = Kind("JUnit XML", _starts_with(b"<", containing=b"<testsuite"))
EXPLANATION = Kind("a rooflint explanation", _starts_with(b"{", containing=b'"verdict"'))
COMPARISON = Kind("a rooflint comparison", _starts_with(b"{", containing=b'"comparisons"'))
# --csv and --markdown: tables that begin as every such table of rooflint's does.
TABLES = {format: Kind(exporter.name, _starts_with(exporter.starts))
          for format, exporter in exports.EXPORTERS.items()}
# What Nsight Compute's logs and PyTorch's profiler trace begin with.
PROFILE_LOG = Kind("a log of rooflint profile", _starts_with(b"==", b'"ID"', b"{"))
_PICTURE_STARTS = {"svg": _starts_with(b"<", containing=b"<svg"),
                   "png": _starts_with(b"\x89PNG\r\n\x1a\n"),
                   "pdf": _starts_with(b"%PDF-")}


def _picture(path: Path) -> bool:
    """Whether a file is a picture in the format its extension names."""
    return _PICTURE_STARTS[_picture_format(path)](path)


def _picture_format(path: Path) -> str:
    from rooflint.output.plotting import picture_format    # matplotlib: only when drawing
    return picture_format(path)


PICTURE = Kind("a picture in the format its extension names", _picture, _picture_format)


def _report(path: Path) -> bool:
    """Whether a file is a report `rooflint report` wrote (by how its page starts)."""
    from rooflint.output.html_page import DOCTYPE, GENERATOR    # matplotlib: only for reports
    return _starts_with(DOCTYPE.encode(), containing=GENERATOR.encode())(path)


REPORT = Kind("a rooflint report", _report)
