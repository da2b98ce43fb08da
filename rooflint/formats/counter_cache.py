"""The counter cache: Nsight Compute's counters of a kernel kept between runs (issue 50).

A profiled launch costs Nsight Compute a replay pass per group of counters, about 0.2 s a
launch and more for gigabyte inputs, and nothing else a run does costs as much: the
counter pass was 5-6 s of a user's ten-kernel family run of 13.5 s (H200). What it counts
(bytes at each level, FLOPs, stalls, occupancy) is the kernel's own, the same from one run
to the next while the kernel's code, compiler, launch, inputs, GPU, driver, Nsight
Compute and the list of counters read are the same; the time is not, and is measured
every run. So a run keeps each kernel's counters under a key that names all of those
(rooflint.formats.counter_key), and a later run reads them instead of profiling again.

An entry is one file ``<key>.json`` under ``$ROOFLINT_CACHE_DIR/counters`` holding the
counters and the date they were taken; it is written whole to a hidden temporary file and
renamed into place, so a killed run never leaves half an entry where a reader looks. An
entry that does not read back whole, as counters of this rooflint, is a miss (and is
replaced by the next write). Entries are a few kilobytes: the cache is not bounded, and
`rooflint cache clear` empties it with the references; nothing is removed that the cache
did not name, and nothing through a symbolic link. A cache that cannot be written (a full
disk, a read-only directory) costs the run its caching, nothing else.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, fields
from datetime import date
from pathlib import Path

from rooflint.analysis.counters import Counters
from rooflint.common.errors import RooflintError
from rooflint.common.paths import cache_dir

_ENTRY = re.compile(r"[0-9a-f]{64}\.json")
_TEMPORARY = re.compile(r"\.[0-9a-f]{64}\..*\.tmp")


@dataclass(frozen=True)
class Cached:
    """A kernel's counters as a run took them, and the day it did."""

    counters: Counters
    taken: str          # ISO date


@dataclass(frozen=True)
class CounterCache:
    directory: Path

    @classmethod
    def default(cls) -> "CounterCache":
        return cls(counters_directory())

    def read(self, key: str) -> Cached | None:
        """The counters kept under ``key``; None where there are none, or none that read
        back as this rooflint's Counters (an older entry with other fields is a miss)."""
        if os.path.islink(self.directory):
            return None
        try:
            entry = json.loads((self.directory / f"{key}.json").read_text())
            return Cached(counters_from(entry["counters"]), str(entry["taken"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, key: str, counters: Counters) -> None:
        """Keep ``counters`` under ``key``. Never raises for the cache's sake: a write that
        fails is dropped."""
        if os.path.islink(self.directory):
            return
        text = json.dumps({"counters": asdict(counters), "taken": date.today().isoformat()})
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.",
                                                 suffix=".tmp")
        except OSError:
            return
        try:
            with os.fdopen(handle, "w") as file:
                file.write(text)
            os.replace(temporary, self.directory / f"{key}.json")
        except OSError:
            Path(temporary).unlink(missing_ok=True)


def counters_from(data: dict) -> Counters:
    """Counters from their JSON form; TypeError unless its fields are exactly Counters'."""
    if set(data) != {f.name for f in fields(Counters)}:
        raise TypeError("not this rooflint's counters")
    return Counters(**data)


def counters_directory() -> Path:
    return cache_dir() / "counters"


def clear(directory: Path) -> int:
    """Every entry and leftover temporary file of the cache in ``directory`` removed
    (`rooflint cache clear`), as many entries as there were; files named otherwise stay,
    and nothing is removed through a link."""
    if os.path.islink(directory):
        raise RooflintError(f"{directory} is a symbolic link to {os.readlink(directory)}: "
                            f"rooflint removes nothing through a link; remove the link, or "
                            f"set ROOFLINT_CACHE_DIR to move the cache")
    try:
        names = [item for item in os.scandir(directory) if item.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise RooflintError(f"cannot clear {directory}: {exc.strerror or exc}") from None
    entries = [item for item in names if _ENTRY.fullmatch(item.name)]
    for item in [*entries, *(i for i in names if _TEMPORARY.fullmatch(i.name))]:
        try:
            os.unlink(item.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise RooflintError(f"cannot clear {directory}: {exc.strerror or exc}") from None
    return len(entries)
