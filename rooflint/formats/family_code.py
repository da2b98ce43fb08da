"""The Python functions a manifest names, checked before any worker starts.

A family's reference, ``prepare`` and python variants are functions of ``reference.py`` or
of a module beside the manifest. A name that is missing, a module that does not parse or
one that raises when imported would otherwise surface inside the worker, after the GPU
was set up; `check_code` finds them first and names the manifest's field. A module that
imports PyTorch or Triton (seconds to load) is read with ``ast``, not run.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from rooflint.common.errors import RooflintError
from rooflint.formats.manifest import Manifest, Variant, select_variants
from rooflint.formats.manifest_fields import PythonCall
from rooflint.formats.jobs import REFERENCE_FILE, uses_torch


def check_code(manifest: Manifest, variants: list[str] | None = None) -> None:
    """Refuse, before any worker starts, a function the chosen variants need that its
    module cannot give: reference.py missing, a syntax error, a function not defined,
    reference.py raising when imported. reference.py is imported (what it imports, numpy
    usually, is loaded already) unless it imports PyTorch or Triton, which take seconds;
    such a file and python variants' modules are read, not run (a variant whose library is
    missing is skipped when it runs, not refused)."""
    calls = _needed_functions(manifest, select_variants(manifest, variants))
    for module in dict.fromkeys(call.module for call in calls):
        mine = [call for call in calls if call.module == module]
        defined, written = _module_functions(manifest, mine[0])
        for call in mine:
            if defined is not None and call.function not in defined:
                listed = f" (it defines: {', '.join(written)})" if written else ""
                raise RooflintError(f"{manifest.path}: '{call.field}' names {call.function}(), "
                                    f"which {module} does not define{listed}")


def _needed_functions(manifest: Manifest, chosen: list[Variant]) -> list[PythonCall]:
    """Every function the chosen variants call: references, prepare, python variants."""
    reference = manifest.directory / REFERENCE_FILE
    calls = [PythonCall(reference, manifest.prepare, "prepare")] if manifest.prepare else []
    for v in chosen:
        calls.append(PythonCall(reference, v.reference, v.reference_field))
        calls += [v.python] if v.python else []
    return calls


def _module_functions(manifest: Manifest, call: PythonCall) -> tuple[set[str] | None, list[str]]:
    """(the names the module binds, None when a star import makes that unknowable; the
    functions it defines, to list) for the module ``call`` names, which must exist and
    parse; reference.py imported when that is cheap."""
    module = call.module
    named = f"{manifest.path}: '{call.field}' names {call.function}() in {module}"
    if not module.is_file():
        raise RooflintError(f"{named}, which is not a file")
    try:
        tree = ast.parse(module.read_bytes(), str(module))
    except SyntaxError as exc:
        raise RooflintError(f"{named}, which has a syntax error at line {exc.lineno}: "
                            f"{exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise RooflintError(f"{named}, which Python cannot parse: {exc}") from None
    bound, written = _top_level(tree)
    if module == manifest.directory / REFERENCE_FILE and not uses_torch(module):
        loaded = _import(module, named)
        bound = {name for name, value in vars(loaded).items() if callable(value)}
    return bound, written


def _import(module: Path, named: str) -> ModuleType:
    """``module`` imported as the worker will import it, its printing sent to stderr (the
    result may be going to stdout); what it raises is the manifest's error."""
    spec = importlib.util.spec_from_file_location(f"rooflint_check_{module.parent.name}", module)
    loaded = importlib.util.module_from_spec(spec)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(loaded)
    except (Exception, SystemExit) as exc:
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
                 if f.filename == str(module)]
        at = f" at line {lines[-1]}" if lines else ""
        said = " ".join(str(exc).split())     # one line, whatever the message
        raise RooflintError(f"{named}, which raised {type(exc).__name__}{at} when imported: "
                            f"{said}") from None
    return loaded


def _top_level(tree: ast.Module) -> tuple[set[str] | None, list[str]]:
    """(every name a module binds at its top level, None after ``from m import *``; the
    functions it defines), read without running it. Statements under ``if``/``try``/
    ``with`` count: ``try: import x`` / ``except ImportError: def f`` binds both ways."""
    bound: set[str] | None = set()
    functions = []
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            functions += [node.name] if not isinstance(node, ast.ClassDef) else []
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                bound = None
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        else:   # if, try, with, for: their statements run at import too
            names = []
            pending += [child for key in ("body", "orelse", "finalbody")
                        for child in getattr(node, key, [])]
            pending += [child for handler in getattr(node, "handlers", [])
                        for child in handler.body]
        if bound is not None:
            bound.update(names)
    return bound, functions
