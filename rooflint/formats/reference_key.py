"""What a family's reference outputs depend on, as one digest: the reference cache's key.

A host reference over gigabyte inputs takes seconds, and a family's unchanged reference
gives the same outputs run after run (issue 25), so they are kept on disk under this key
(rooflint.formats.reference_cache). The key must change whenever the outputs could:

- the code: the whole of the family's ``reference.py`` (the reference may call its other
  functions and read its constants; ``prepare``, which derives inputs, lives there too),
  and every file of the family's directory it imports, followed through their own imports;
- the inputs: the parameters (device names such as ``num_sms`` included), every buffer's
  name, dtype, shape, role and range, the seed, and which function ``prepare`` is;
- the environment the worker names: the numpy and CuPy versions and the rules that draw
  the inputs (their source), any of which changes the values a reference sees.

Only import statements are followed (``importlib.import_module(name)`` or a data file the
reference opens is not seen); a change that is not seen would leave stale outputs, which
the checks then fail loudly, and ``rooflint run --no-reference-cache`` or ``rooflint cache
clear`` sets right.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path

from rooflint.formats.jobs import REFERENCE_FILE, FamilyJob


def reference_key(job: FamilyJob, reference: str, environment: Mapping[str, str]) -> str:
    """The hex digest naming the outputs of ``reference`` for ``job``'s family, sizes and
    inputs in this ``environment``."""
    directory = Path(job.directory)
    files = {path.relative_to(directory).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
             for path in family_python_files(directory / REFERENCE_FILE, directory)}
    described = {"reference": reference, "prepare": job.prepare, "params": job.params,
                 "seed": job.seed, "buffers": [asdict(b) for b in job.buffers],
                 "environment": dict(environment), "files": files}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def family_python_files(start: Path, directory: Path) -> list[Path]:
    """``start`` and the Python files of ``directory`` it imports, directly or through
    each other, sorted; none if ``start`` does not exist."""
    root = directory.resolve()
    found: set[Path] = set()
    pending = [start.resolve()] if start.is_file() else []
    while pending:
        path = pending.pop()
        if path in found:
            continue
        found.add(path)
        pending += [module.resolve() for module in _imported_candidates(path, root)
                    if module.is_file() and module.resolve().is_relative_to(root)]
    return sorted(directory / path.relative_to(root) for path in found)


def _imported_candidates(path: Path, root: Path) -> Iterator[Path]:
    """The files each import statement of ``path`` could load, found or not: ``import
    a.b`` could be a.py, a/__init__.py, a/b.py or a/b/__init__.py, below the family's
    directory ``root`` or the file's own (whichever the user put on sys.path); ``from a
    import c`` also a/c.py; a relative import counts from the file's own directory. A
    file Python cannot parse imports nothing (it cannot run either)."""
    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                for base in (root, path.parent):
                    yield from _module_files(base, alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            parts = node.module.split(".") if node.module else []
            for base in _import_bases(path, root, node.level):
                yield from _module_files(base, parts)
                for alias in node.names:
                    yield from _module_files(base, [*parts, alias.name])


def _import_bases(path: Path, root: Path, level: int) -> tuple[Path, ...]:
    """Where a ``from`` import's dotted path starts: for ``from ..a import b`` (level 2)
    the parent of the file's directory; for an absolute one, as ``import`` looks."""
    if level == 0:
        return root, path.parent
    base = path.parent
    for _ in range(level - 1):
        base = base.parent
    return (base,)


def _module_files(base: Path, parts: list[str]) -> Iterator[Path]:
    """Each package on the dotted path ``parts`` below ``base`` and the module it ends in."""
    for end in range(1, len(parts) + 1):
        yield base.joinpath(*parts[:end]).with_suffix(".py")
        yield base.joinpath(*parts[:end], "__init__.py")
