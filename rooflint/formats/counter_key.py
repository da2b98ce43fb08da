"""What a variant's counters depend on, as one digest: the counter cache's key for a family.

Nsight Compute's counters of a variant (rooflint.formats.counter_cache) change whenever its
kernels' code or launches, the values they run on, the GPU or the tools do; the key names
all of them:

- the code: the variant as the worker runs it (its launches, their grids, blocks and
  arguments, its Python function, compiler options), the compiler that built it, the
  contents of its source and of the files it includes (``#include "..."``, followed inside
  the family directory), of the family's Python and data files (``prepare`` in
  ``reference.py`` derives inputs, a Python variant's module may call the others) and of a
  Python variant's module wherever it is, and the versions of the libraries a Python
  variant calls; another variant's source is not read, so editing one variant's file
  profiles again only the variants built from it;
- the inputs: the parameters, every buffer's name, dtype, shape, role and range, the seed
  and ``prepare``;
- the measurement: the GPU (its name, SMs, L2, memory), its driver, the CUDA runtime and
  CuPy the worker runs, Nsight Compute's version, the cache control (a cold run's caches
  are flushed before each launch) and the list of counters read (a rooflint that reads
  another list, or keeps other fields, misses).

Files outside the family directory that a source includes with ``-I`` or ``<...>`` are
not read (their directories are in the options); a change there leaves stale counters, which
``rooflint run --no-counter-cache`` or ``rooflint cache clear`` sets right. Files over
HASHED_BYTES are named by their size and modification time rather than read whole.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, fields
from importlib import metadata
from pathlib import Path

from rooflint.analysis.counters import Counters
from rooflint.formats.gpus import DeviceInfo
from rooflint.formats.jobs import FamilyJob, VariantJob

SHARED_FILES = frozenset({".py", ".npy", ".npz"})   # any variant's inputs or code may read
HASHED_BYTES = 16 * 2**20
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
PYTHON_LIBRARIES = ("torch", "triton", "cupy-cuda12x", "cupy-cuda13x", "cupy", "numpy")


def variant_key(job: FamilyJob, variant: VariantJob, compiler: str, device: DeviceInfo,
                ncu_version: str | None, metrics: tuple[str, ...]) -> str:
    """The hex digest naming ``variant``'s counters in ``job``, built by ``compiler``, on
    ``device`` under this Nsight Compute and this counter list."""
    directory = Path(job.directory)
    own = asdict(variant) | {"source": _relative(variant.source, directory),
                             "module": _relative(variant.module, directory)}
    described = {
        "counters": sorted(f.name for f in fields(Counters)), "metrics": list(metrics),
        "ncu": ncu_version, "device": asdict(device) | {"index": None},
        "cache": str(job.timing.cache), "compiler": compiler, "variant": own,
        "params": job.params, "seed": job.seed, "prepare": job.prepare,
        "buffers": [asdict(b) for b in job.buffers],
        "files": variant_files(directory, variant.source, variant.module),
        "libraries": python_libraries() if variant.python else {},
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def variant_files(directory: Path, source: str | None, module: str | None) -> dict[str, str]:
    """A digest of each file a variant's counters depend on, by its path relative to the
    family directory: its source and what that includes, the family's Python and data
    files (cache and hidden folders left out) and ``module`` wherever it is."""
    found = {path for path in directory.rglob("*") if path.suffix in SHARED_FILES
             and not any(part.startswith(".") or part == "__pycache__"
                         for part in path.relative_to(directory).parts)}
    if source:
        found |= included(Path(source), directory)
    if module and Path(module).is_file():
        found.add(Path(module))
    return {_relative(str(path), directory): _digest(path) for path in sorted(found)
            if path.is_file()}


def included(source: Path, directory: Path) -> set[Path]:
    """``source`` and the files of ``directory`` it includes with ``#include "..."``,
    directly or through each other (looked up beside the including file, then in the
    family directory)."""
    root, found, pending = directory.resolve(), set(), [source.resolve()]
    while pending:
        path = pending.pop()
        if path in found or not path.is_file():
            continue
        found.add(path)
        for name in INCLUDE.findall(path.read_text(errors="replace")):
            for candidate in (path.parent / name, root / name):
                if candidate.resolve().is_relative_to(root) and candidate.is_file():
                    pending.append(candidate.resolve())
                    break
    return found


def _digest(path: Path) -> str:
    status = path.stat()
    if status.st_size > HASHED_BYTES:
        return f"{status.st_size}:{status.st_mtime_ns}"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _relative(path: str | None, directory: Path) -> str | None:
    """A path inside ``directory`` by its relative name (a family copied elsewhere keeps
    its keys); any other as it is."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    root = directory.resolve()
    return resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else path


def python_libraries() -> dict[str, str]:
    """The versions of the libraries a Python variant may call, those installed."""
    versions = {}
    for name in PYTHON_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
