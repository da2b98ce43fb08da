"""Every global name each rooflint module uses is defined there (or is a builtin).

The worker's modules import CuPy, so on a machine without a GPU no test can import them:
a name left undefined by an edit (a missing import) would first fail on the GPU machine.
symtable resolves scopes as the compiler does, so this catches exactly those names.
"""

import builtins
import symtable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rooflint"
MODULES = sorted(PACKAGE.rglob("*.py"))


def _global_uses(table: symtable.SymbolTable) -> set[str]:
    used = {s.get_name() for s in table.get_symbols()
            if s.is_referenced() and (s.is_global() or table.get_type() == "module")
            and not s.is_assigned() and not s.is_imported()}
    for child in table.get_children():
        used |= _global_uses(child)
    return used


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_global_name_is_defined(path):
    module = symtable.symtable(path.read_text(), str(path), "exec")
    defined = {s.get_name() for s in module.get_symbols()
               if s.is_assigned() or s.is_imported() or s.is_namespace()}
    undefined = _global_uses(module) - defined - set(dir(builtins)) - {"__file__", "__name__"}
    assert not undefined, f"{path.name} uses undefined names: {sorted(undefined)}"


def test_it_finds_a_missing_import(tmp_path):
    source = "from x import used\n\ndef f():\n    return used() + Stopwatch()\n"
    module = symtable.symtable(source, "m.py", "exec")
    defined = {s.get_name() for s in module.get_symbols() if s.is_assigned() or s.is_imported()}
    assert _global_uses(module) - defined - set(dir(builtins)) == {"Stopwatch"}
