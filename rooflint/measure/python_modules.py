"""A family's Python files, loaded in the worker: its reference.py and python variants'
modules, and what a row says when one needs a package this interpreter lacks."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_module(path: Path) -> ModuleType | None:
    """A family's reference.py (or a python variant's module), None if there is none."""
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(
        f"rooflint_{path.stem}_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def missing_module_note(exc: ImportError) -> str:
    """The skipped row's note, e.g. needs triton (No module named 'triton'): the package
    to install, then Python's own words (which name the submodule or symbol missing)."""
    package = (exc.name or "").split(".")[0]
    return f"needs {package} ({exc})" if package else f"cannot import: {exc}"
