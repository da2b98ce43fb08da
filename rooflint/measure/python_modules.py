"""A family's Python files, loaded in the worker: its reference.py and python variants'
modules, the functions they name, and what a row says when one needs a package this
interpreter lacks."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Callable

from rooflint.measure.faults import VariantFailed


class FamilyModules:
    """A family's Python files, each loaded once: its reference.py at the session's start
    (prepare and the references need it), a python variant's module when first used (it
    may be reference.py itself)."""

    def __init__(self, reference_path: Path):
        self.reference_path = reference_path
        self.reference = load_module(reference_path)
        self.loaded = {str(reference_path): self.reference}   # by path

    def reference_function(self, name: str) -> Callable:
        return function_in(self.reference, name, self.reference_path)

    def function(self, path: str, name: str) -> Callable:
        """Function ``name`` of the module at ``path``, loaded at its first use."""
        if path not in self.loaded:
            self.loaded[path] = load_module(Path(path))
        return function_in(self.loaded[path], name, Path(path))


def load_module(path: Path) -> ModuleType | None:
    """A family's reference.py (or a python variant's module), None if there is none."""
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(
        f"rooflint_{path.stem}_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def function_in(module: ModuleType | None, name: str, path: Path) -> Callable:
    """The function ``name`` of the module loaded from ``path``; a row's failure if the
    file or the function is not there."""
    if module is None:
        raise VariantFailed(f"{path} not found (needed for {name}())")
    function = getattr(module, name, None)
    if not callable(function):
        raise VariantFailed(f"{path} has no function {name}()")
    return function


def missing_module_note(exc: ImportError) -> str:
    """The skipped row's note, e.g. needs triton (No module named 'triton'): the package
    to install, then Python's own words (which name the submodule or symbol missing)."""
    package = (exc.name or "").split(".")[0]
    return f"needs {package} ({exc})" if package else f"cannot import: {exc}"
