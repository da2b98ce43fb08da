"""The reference cache: host references' outputs kept on disk between runs (issue 25).

A user's reference in numpy over gigabyte inputs takes seconds per variant, and an
unchanged family gives the same outputs every run. The worker keeps each host reference's
outputs here under its key (rooflint.formats.reference_key), as the reference returned
them (``.npy``, its own dtype: a float32 output stays half the size of its float64 copy),
and a later run reads them instead of computing them. References that take ``xp`` are
not kept: on the GPU they take milliseconds, less than reading gigabytes back from disk.

An entry is a directory ``<key>/`` under ``$ROOFLINT_CACHE_DIR/references`` holding one
``.npy`` per output and ``entry.json`` naming them with their dtypes and shapes. It is
written whole into a hidden temporary directory and renamed into place, so a run that is
interrupted or killed never leaves a part of one where a reader looks (its temporary
directory is removed by a later write once a day old); an entry that cannot be read
whole, as listed, is a miss and is removed. The cache is bounded (DEFAULT_LIMIT, or
``$ROOFLINT_REFERENCE_CACHE_SIZE``): after each write the least recently used entries
(a read counts as a use) go first until it fits, and outputs larger than the bound are
not kept at all. A cache that cannot be written (a full disk, a read-only directory)
costs the run its caching, nothing else.

Nothing is removed that the cache did not write (issue 45: `cache clear` emptied a user's
folder that ``references`` linked to): only a directory named as the cache names them,
holding only the files it writes (an entry also its ``entry.json``), and never through a
symbolic link, neither the directory being one nor an entry. A ``references`` that is a
link is not used at all (entries written through it could never be evicted); the cache
is moved with ``$ROOFLINT_CACHE_DIR``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rooflint.common.errors import RooflintError
from rooflint.common.paths import cache_dir
from rooflint.common.units import parse_bytes

DEFAULT_LIMIT = 16 * 2**30      # a family's ten 1 GiB float32 outputs, with room for another's
LIMIT_VARIABLE = "ROOFLINT_REFERENCE_CACHE_SIZE"
ENTRY_FILE = "entry.json"
STALE_WRITE_S = 24 * 3600       # a temporary directory this old was left by a killed writer
_KEY = re.compile(r"[0-9a-f]{64}")
_TEMPORARY = re.compile(r"\.[0-9a-f]{64}\..*\.tmp")
_OUTPUT_FILE = re.compile(r"[0-9]+\.npy")     # as _write_entry names an output's file


@dataclass(frozen=True)
class Cleared:
    """What `clear` removed."""

    entries: int
    size: int                   # bytes


@dataclass(frozen=True)
class ReferenceCache:
    directory: Path
    limit: int                  # bytes the entries may take together

    @classmethod
    def default(cls) -> "ReferenceCache":
        """rooflint's own: in its cache directory, bounded as the environment says."""
        return cls(references_directory(), size_limit())

    def read(self, key: str) -> dict[str, np.ndarray] | None:
        """The outputs kept under ``key``, or None: never written, not readable whole as
        its ``entry.json`` lists them (then removed, so that a new write replaces it), or
        in a directory that is a link (not used: see the module docstring)."""
        if _linked(self.directory):
            return None
        entry = self.directory / key
        try:
            listed = json.loads((entry / ENTRY_FILE).read_text())["outputs"]
            outputs = {item["name"]: _load(entry / item["file"], item) for item in listed}
        except (OSError, EOFError, ValueError, KeyError, TypeError):
            if _written_by_cache(entry, listed=False):      # not whole: its listing lost
                shutil.rmtree(entry, ignore_errors=True)
            return None
        _touch(entry)
        return outputs

    def write(self, key: str, outputs: dict[str, Any]) -> None:
        """Keep ``outputs`` under ``key`` unless they alone exceed the bound, then evict
        down to it. Never raises for the cache's sake: a write that fails is dropped."""
        arrays = {name: np.asarray(value) for name, value in outputs.items()}
        if sum(a.nbytes for a in arrays.values()) > self.limit or _linked(self.directory):
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            temporary = Path(tempfile.mkdtemp(dir=self.directory, prefix=f".{key}.",
                                              suffix=".tmp"))
        except OSError:
            return
        try:
            _write_entry(temporary, arrays)
            os.rename(temporary, self.directory / key)   # fails if another writer got there
        except (OSError, ValueError):   # full disk; an object array, which .npy cannot hold
            return
        finally:
            shutil.rmtree(temporary, ignore_errors=True)     # gone already once renamed
        self.evict()

    def evict(self) -> None:
        """The least recently used entries removed until the rest fit the bound; temporary
        directories of writers killed long ago removed."""
        try:
            entries = sorted((_last_used_ns(path), _size(path), path)
                             for path in _own(self.directory, _KEY))
            leftovers = [path for path in _own(self.directory, _TEMPORARY)
                         if _age_s(path) > STALE_WRITE_S]
        except OSError:             # a directory we may not read: left as it is
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in entries:
            if total <= self.limit:
                break
            shutil.rmtree(path, ignore_errors=True)
            total -= size
        for path in leftovers:
            shutil.rmtree(path, ignore_errors=True)


def references_directory() -> Path:
    return cache_dir() / "references"


def clear(directory: Path) -> Cleared:
    """Every entry of the cache in ``directory`` removed, and every temporary directory of
    its writers (`rooflint cache clear`); RooflintError if one cannot be, or if
    ``directory`` is a link (whatever it leads to was not written by the cache)."""
    if _linked(directory):
        raise RooflintError(f"{directory} is a symbolic link to {os.readlink(directory)}: "
                            f"rooflint removes nothing through a link; remove the link, or "
                            f"set ROOFLINT_CACHE_DIR to move the cache")
    try:
        entries = _own(directory, _KEY)
        size = sum(_size(path) for path in entries)
        for path in [*entries, *_own(directory, _TEMPORARY)]:
            _remove(path)
    except OSError as exc:
        raise RooflintError(f"cannot clear {directory}: {exc.strerror or exc}") from None
    return Cleared(len(entries), size)


def _remove(directory: Path) -> None:
    try:
        shutil.rmtree(directory)
    except FileNotFoundError:       # removed meanwhile by another run
        pass


def _own(directory: Path, name: re.Pattern) -> list[Path]:
    """The directories in ``directory`` that the cache wrote: named as ``name`` (an entry's
    key, or a writer's temporary name) and holding what _written_by_cache says (nothing
    else that may have been put there is ever removed); none through a link."""
    if _linked(directory):
        return []
    try:
        return [Path(item.path) for item in os.scandir(directory)
                if name.fullmatch(item.name) and
                _written_by_cache(Path(item.path), listed=name == _KEY)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _written_by_cache(directory: Path, listed: bool) -> bool:
    """Whether ``directory`` is one the cache wrote: a directory, not a link, holding
    regular files only, each named as the cache names its files; with ``listed``, an
    entry's ``entry.json`` among them (a temporary one may not have it yet)."""
    try:
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            return False
        files = list(os.scandir(directory))
    except OSError:
        return False
    names = {item.name for item in files}
    return (all(item.is_file(follow_symlinks=False) and
                (item.name == ENTRY_FILE or _OUTPUT_FILE.fullmatch(item.name))
                for item in files)
            and (ENTRY_FILE in names or not listed))


def _linked(directory: Path) -> bool:
    """Whether the cache's directory is a symbolic link: nothing is removed through one."""
    return os.path.islink(directory)


def size_limit() -> int:
    """The cache's bound: ``$ROOFLINT_REFERENCE_CACHE_SIZE`` (``8GiB``, ``500MB``; 0 keeps
    nothing), else DEFAULT_LIMIT."""
    written = os.environ.get(LIMIT_VARIABLE)
    if written is None:
        return DEFAULT_LIMIT
    try:
        return int(parse_bytes(written))
    except RooflintError as exc:
        raise RooflintError(f"{LIMIT_VARIABLE}={written}: {exc}") from None


def _write_entry(directory: Path, arrays: dict[str, np.ndarray]) -> None:
    listed = []
    for index, (name, array) in enumerate(arrays.items()):
        file = f"{index}.npy"
        np.save(directory / file, array, allow_pickle=False)
        listed.append({"name": name, "file": file, "dtype": array.dtype.str,
                       "shape": list(array.shape)})
    (directory / ENTRY_FILE).write_text(json.dumps({"outputs": listed}))


def _load(path: Path, item: dict[str, Any]) -> np.ndarray:
    """One output, exactly as listed (ValueError otherwise: a truncated or replaced file)."""
    array = np.load(path, allow_pickle=False)
    if not isinstance(array, np.ndarray) or (array.dtype.str, list(array.shape)) != (
            item["dtype"], item["shape"]):
        raise ValueError(f"{path} is not the {item['dtype']} {item['shape']} listed")
    return array


def _size(directory: Path) -> int:
    """The bytes of an entry's files (0 once another run has removed it)."""
    try:
        return sum(item.stat().st_size for item in os.scandir(directory) if item.is_file())
    except FileNotFoundError:
        return 0


def _last_used_ns(entry: Path) -> int:
    """When an entry was written or last read (0 once another run has removed it)."""
    try:
        return entry.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def _touch(entry: Path) -> None:
    """Mark an entry used now (eviction goes least recently used first)."""
    try:
        os.utime(entry)
    except OSError:
        pass


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0
