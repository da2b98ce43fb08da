"""The files rooflint reads and writes: versioned JSON documents and the reports beside them.

Writing: atomically (a temporary file beside the target, flushed to disk, then renamed),
so a failed or interrupted write never leaves a truncated file that a later command would
trust, never leaves the temporary file behind, and leaves an existing file as it was.
Files get the permissions any other program would give them (0o666 less the umask;
``mkstemp`` alone makes them 0600, which a CI artifact step or a colleague cannot read).
A directory the user names must exist: a typo in ``--junit ci/reprots/x.xml`` is reported,
not silently grown into a tree; only rooflint's own cache directory is created. Every
failure is one RooflintError naming the path and the reason.

Reading: a document is checked against the dataclasses it becomes, by the one reader of
every rooflint document (rooflint.formats.schema), its schema derived from those
dataclasses' fields and type hints (rooflint.formats.typed_schema), so a wrong or missing
field is named by its path (``families[0].variants[2].time.median_s``) instead of
surfacing later as a KeyError. Only a regular file is read, and only so much of it
(:func:`read_limited`): a FIFO, a device or a directory named as a document is refused by
what it is; a document of more rows than a person reads is refused before its fields are.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rooflint.common.errors import RooflintError
from rooflint.formats.schema import Document, read
from rooflint.formats.typed_schema import node_of

T = TypeVar("T")


# --- writing -------------------------------------------------------------------------

def require_directory(path: Path) -> None:
    """RooflintError unless the directory that would hold ``path`` exists."""
    parent = Path(path).parent
    if not parent.is_dir():
        raise RooflintError(f"cannot write {path}: no directory {parent}")


def require_writable(path: Path) -> None:
    """RooflintError unless :func:`write_bytes` could write ``path``, asked before minutes
    of measuring rather than after them: an existing path is a regular file, or something
    written in place that takes bytes (a pipe, the null device, one of rooflint's own
    standard streams such as ``/dev/stdout``), not a directory nor another device
    (``/dev/full`` takes nothing); a file's directory exists and takes new files, which
    only creating one tells for sure (a read-only mount, or /sys, refuses even root)."""
    path = Path(path)
    try:
        status = path.stat()
    except FileNotFoundError:
        status = None
    except OSError as exc:          # a link loop, a directory on the way we may not enter
        raise _cannot_write(path, exc) from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise RooflintError(f"cannot write {path}: Is a directory")
    if status is not None and not stat.S_ISREG(status.st_mode):
        if not _takes_bytes(status):
            raise RooflintError(f"cannot write {path}: a device, not a file (only a pipe, a "
                                f"terminal rooflint writes to, or {os.devnull} can stand "
                                f"for one)")
        return
    require_directory(path)
    try:
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    os.close(fd)
    os.unlink(probe)


def _takes_bytes(status: os.stat_result) -> bool:
    """Whether a path that is not a regular file (``status``) may stand for an output file."""
    if stat.S_ISFIFO(status.st_mode):
        return True
    allowed = [os.stat(os.devnull)]
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            allowed.append(os.fstat(fd))
    return any(_same_node(status, other) for other in allowed)


def _same_node(a: os.stat_result, b: os.stat_result) -> bool:
    """The same file, or the same character device under another name."""
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) or (
        stat.S_ISCHR(a.st_mode) and stat.S_ISCHR(b.st_mode) and a.st_rdev == b.st_rdev)


def write_atomic(data: dict[str, Any], path: Path, *, create_directory: bool = False) -> None:
    """Write a JSON document (see the module docstring for the guarantees)."""
    write_text(json.dumps(data, indent=1) + "\n", path, create_directory=create_directory)


def write_text(text: str, path: Path, *, create_directory: bool = False) -> None:
    """Replace ``path`` with ``text`` (:func:`_encoded`), as :func:`write_bytes` does."""
    write_bytes(_encoded(text), path, create_directory=create_directory)


def _encoded(text: str) -> bytes:
    """``text`` as UTF-8, an unpaired surrogate (a name JSON spelt ``\\udcff``, a file
    name's undecodable byte) written as that escape: no UTF-8 can hold it, and a table or
    page must not fail for one, let alone after the rest was shown (issue 45)."""
    return text.encode("utf-8", "backslashreplace")


def write_bytes(data: bytes, path: Path, *, create_directory: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically; ``create_directory`` only for rooflint's own
    directories. A device or pipe (``/dev/stdout``) is written in place: renaming over it
    would replace the device with a regular file."""
    path = Path(path)
    if create_directory:
        _create_directory(path.parent)
    require_directory(path)
    if _exists_not_regular(path):
        _write_in_place(data, path, "wb")
        return
    try:
        with replacing(path) as temporary, open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())    # a full disk or quota shows here, not after the rename
    except OSError as exc:
        raise _cannot_write(path, exc) from None


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A new empty file beside ``path`` for the block to write, renamed over ``path`` when
    the block ends and removed when it raises: a reader (a later command, the counter
    pass, a CI step) finds the old file or the new one whole, never a part, and no
    temporary file is left behind. It gets the permissions any other program would give
    it. The one way rooflint replaces a file: its documents (:func:`write_bytes`) and its
    compile caches (measure/kernels, measure/build). OSErrors pass through as raised."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temporary = Path(name)
    try:
        try:
            os.fchmod(fd, 0o666 & ~_umask())
        finally:
            os.close(fd)
        yield temporary
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()           # gone already once the rename succeeded


def append_text(text: str, path: Path) -> None:
    """Append to ``path`` (created if absent), e.g. GitHub's step summary."""
    require_directory(path)
    _write_in_place(_encoded(text), Path(path), "ab")


def _write_in_place(data: bytes, path: Path, mode: str) -> None:
    """Write to a device or pipe (or append to a file) where it is. A named pipe is opened
    without blocking, so one that no process reads is an error, not a wait forever."""
    flags = os.O_WRONLY | os.O_CLOEXEC | (os.O_APPEND | os.O_CREAT if "a" in mode else 0)
    try:
        descriptor = os.open(path, flags | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise RooflintError(f"cannot write {path}: it is a named pipe (FIFO) that no "
                                f"process reads") from None
        raise _cannot_write(path, exc) from None
    try:
        os.set_blocking(descriptor, True)      # the reader is there: write all of it
        with open(descriptor, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise _cannot_write(path, exc) from None


def _create_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflintError(f"cannot create directory {directory}: {exc.strerror or exc}") from None


def _exists_not_regular(path: Path) -> bool:
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _umask() -> int:
    """The process umask (there is no way to read it without setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _cannot_write(path: Path, exc: OSError) -> RooflintError:
    return RooflintError(f"cannot write {path}: {exc.strerror or exc}")


# --- reading -------------------------------------------------------------------------

# A document is read whole, so its size is what a read costs: parsing takes some 5 times
# the file's size in memory and 35 ms a megabyte, checking the fields 0.4 ms a variant
# (one core). The largest committed document is a 1.4 MB profile (11 kernels, up to
# 11,366 samples each); the bundled results hold 38 variants of about 11 KB in 0.4 MB,
# and a profile of a convolutional network (about 420 kernels) is some 5 MB. Limits 44
# times the largest document's bytes and 12 times the network's kernels leave real
# documents far inside (5,000 variants of 11 KB are 55 MB); past them a read takes minutes
# and gigabytes (100,000 variants in 206 MB: `show` 172 s, `report` past 900 s and 6.1
# GB), and a table of that many rows is not one a person reads. The bytes are checked
# before the document is parsed (its size, then the read stops one byte past), the rows
# (rooflint.formats.results counts variants) once it is parsed, before any field is read.
# `show /dev/zero` once read 2.9 GB.
MAX_DOCUMENT_BYTES = 64 << 20
MAX_ROWS = 5_000
_NOT_FILES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
              (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


STDIN = "-"          # a document's path that means standard input (`... | rooflint show -`)
_stdin_read = False


def read_limited(path: Path, what: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (or of standard input, for ``-``), at
    most ``limit`` of them; anything else is a RooflintError naming the file and what it
    is instead.

    Its kind is checked before it is opened (opening a FIFO waits for a writer, forever),
    the open does not block, and the read stops one byte past ``limit``, so a file that
    is swapped or keeps growing meanwhile costs no more than that."""
    if str(path) == STDIN:
        return _standard_input(what, limit)
    if instead := not_a_file(path):
        raise RooflintError(f"cannot read {what} {path}: it {instead}")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise RooflintError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    too_large = RooflintError(f"cannot read {what} {path}: too large for a rooflint {what} "
                              f"(the limit is {limit} bytes)")
    with open(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        if instead := _not_regular(status.st_mode):      # swapped since the check above
            raise RooflintError(f"cannot read {what} {path}: it {instead}")
        if status.st_size > limit:
            raise too_large
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise RooflintError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise too_large
    return data


def _standard_input(what: str, limit: int) -> bytes:
    """Standard input, once: a terminal (nothing piped in) is refused rather than waited
    on, and a second ``-`` would find it already read."""
    global _stdin_read
    if _stdin_read:
        raise RooflintError(f"cannot read {what} -: standard input was read already; give "
                            f"this one by its path")
    if sys.stdin is None or sys.stdin.isatty():
        raise RooflintError(f"cannot read {what} -: - reads standard input, and nothing is "
                            f"piped in")
    _stdin_read = True
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise RooflintError(f"cannot read {what} -: too large for a rooflint {what} (the "
                            f"limit is {limit} bytes)")
    return data


def not_a_file(path: Path) -> str | None:
    """What is at ``path`` instead of a regular file, in words ("is a named pipe (FIFO),
    not a file", "is a symbolic link that loops"); None for a regular file, or for nothing
    there at all (reading it then says so), found without opening it."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if not os.path.islink(path):
            return None
        if exc.errno == errno.ELOOP:
            return "is a symbolic link that loops"
        return f"is a symbolic link to {os.readlink(path)}, which does not exist"
    return _not_regular(mode)


def _not_regular(mode: int) -> str | None:
    return next((f"is {kind}, not a file" for test, kind in _NOT_FILES if test(mode)), None)


def parse_large(data: bytes) -> Any:
    """A large JSON text (a profiler's trace), parsed by orjson where it is installed (a
    182 MB trace of the training step's launches, copied 15 times: 3.6 s against the
    standard library's 6.0 s), else by the standard library, which also reads, and
    refuses with its own errors, what orjson does not take (NaN, integers past 64 bits)."""
    try:
        import orjson
    except ImportError:
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def read_versioned(path: Path, schema: str, what: str) -> dict[str, Any]:
    """The document at ``path``; RooflintError unless it parses and declares ``schema``.
    JSON's NaN and Infinity are read as Python's json module writes them; the fields'
    senses decide where they may stand (rooflint.common.sense)."""
    try:
        data = json.loads(read_limited(path, what))
    except (ValueError, RecursionError) as exc:     # bad JSON, bad UTF-8, absurd nesting
        raise RooflintError(f"cannot read {what} {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise RooflintError(f"{path} is not a rooflint {what} ({schema})")
    return data


@dataclass(frozen=True)
class Rows:
    """What a document holds one table row of (a result's variants): ``count`` counts them
    in the document as parsed, before any field is read, so it trusts no shape (a value
    that is not a list counts none, and the reader then names it)."""

    noun: str
    count: Callable[[dict[str, Any]], int]


def read_document(path: Path, cls: type[T], schema: str, what: str,
                  rows: Rows | None = None) -> T:
    """The document at ``path`` as a ``cls``, every field checked against its type hint
    (rooflint.formats.typed_schema: unknown keys are ignored, since a newer rooflint may
    have added fields; a missing field without a default, a value of the wrong type, or
    one that makes no sense is a RooflintError naming the file and the field's path).
    One of more than MAX_ROWS ``rows`` is refused before its fields are read."""
    data = read_versioned(path, schema, what)
    if rows is not None and (count := rows.count(data)) > MAX_ROWS:
        raise RooflintError(f"{path}: {count:,} {rows.noun} is not a {what} a person reads "
                            f"(rooflint reads up to {MAX_ROWS:,})")
    return read(Document(node_of(cls)), data, path)
