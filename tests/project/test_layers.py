"""The layers of rooflint, read from its imports (issues 26 and 46): no import circle, and
no layer imports one above it. From the ground up: the pure analysis core, the documents
built from its types, the decisions over documents (judge), then the GPU code and the
printers, then the commands.

Every module is parsed with ``ast``, never imported, so this runs on any machine. Every
import of ``rooflint.*`` counts, at module level or inside a function (a function-level
import that closes a circle only moves the failure to the call); imports under ``if
TYPE_CHECKING:`` never run and close no circle, but they are dependencies all the same.
``LAYERS`` is the one place that says which module belongs to which layer: DESIGN.md's
diagram and issue 26's list, as the tree is today; ``FORBIDDEN`` says which edges would
point up.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rooflint"

# Each layer's modules, by dotted name; a package's name stands for every module in it.
# The layers are packages (issue 26): a newcomer reads the architecture from `ls rooflint`.
LAYERS: dict[str, tuple[str, ...]] = {
    # The pure analysis core: numbers in, verdicts out; caller_moves is the catalog kept as
    # data beside moves (DESIGN.md); stats, the statistics the worker and documents share;
    # gpu_spec and ceilings, the datasheet and measured roofs a kernel is judged against.
    "core": ("rooflint.analysis",),
    # The documents and their schemas, built from the core's types; trace_events reads
    # PyTorch's trace, compile_options is the schema of a manifest's compiler options,
    # calibration the measured ceilings and their cache.
    "formats": ("rooflint.formats",),
    # The decisions over documents: a measurement judged into a result, comparison, gate,
    # explain, a program's kernels chosen and their upside.
    "judge": ("rooflint.judge",),
    # The only code that touches a GPU (DESIGN.md).
    "measure": ("rooflint.measure",),
    # What users read: the printers, and the guard on what a command may write.
    "output": ("rooflint.output",),
    # The work behind the commands, shared by them: families measured, a program profiled,
    # compare's sides, the counters switch, a GPU named on the command line.
    "engine": ("rooflint.engine",),
    # The commands and the command line that calls them.
    "commands": ("rooflint.commands", "rooflint.__main__"),
    # Small modules any layer may use.
    "shared": ("rooflint.common",),
    # The package itself: the notebook API (rooflint.load, plot, compare), above all else,
    # and what it gives (notebook.py: results and explanations that show themselves).
    "api": ("rooflint", "rooflint.notebook"),
}
# What each layer may not import, and why: every edge that would point up.
FORBIDDEN = {
    "core": {"formats": "documents are built from the core's types, never the other way",
             "judge": "the decisions over documents are built on the core, never the other way",
             "output": "the core computes; what users read is printed above it",
             "measure": "the core runs with no GPU and no CuPy (DESIGN.md)",
             "engine": "the core is what the engine calls, never the other way",
             "commands": "the core is what commands call, never the other way"},
    "formats": {"judge": "documents are what the decisions read and fill, never the other way",
                "output": "documents are what printers print, never the other way",
                "measure": "documents are read and written with no GPU: the worker imports "
                           "the job and measurement records, never the other way",
                "engine": "documents are what the engine reads and writes, never the other way",
                "commands": "documents are what commands read and write, never the other way"},
    "judge": {"output": "a decision is made once and printed by whoever shows it",
              "measure": "decisions are made over documents, with no GPU",
              "engine": "the decisions are what the engine calls, never the other way",
              "commands": "the decisions are what commands call, never the other way"},
    "measure": {"output": "printers show what the GPU code measured; it never calls them",
                "engine": "the GPU code is what the engine runs, never the other way",
                "commands": "the GPU code is what commands run, never the other way"},
    "output": {"engine": "printers print what they are given; they never call the work",
               "commands": "printers print what commands give them; they never call back up"},
    "engine": {"commands": "the engine works for any command and prints nothing; the "
                           "commands parse, print and exit"},
}


@dataclass(frozen=True)
class Import:
    module: str         # the rooflint module imported
    line: int
    where: str          # "module", "function" or "typing" (under `if TYPE_CHECKING:`)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str | None:
    """The layer whose entry names ``module`` or the nearest package holding it."""
    owners = [(len(name), layer) for layer, names in LAYERS.items() for name in names
              if module == name or (name != "rooflint" and module.startswith(name + "."))]
    return max(owners)[1] if owners else None


def imports_of(module: str) -> list[Import]:
    """The rooflint modules ``module`` imports, each where it is imported."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(nodes: Iterable[ast.AST], where: str) -> None:
        for node in nodes:
            found.extend(Import(name, node.lineno, where) for name in _targets(node, package))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(ast.iter_child_nodes(node), "function")
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.body, "typing")
                visit(node.orelse, where)
            else:
                visit(ast.iter_child_nodes(node), where)

    visit(ast.parse(path.read_text(encoding="utf-8")).body, "module")
    return [i for i in found if i.module != module]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.AST, package: str) -> Iterator[str]:
    """The rooflint modules an import statement loads: ``from rooflint.common import paths`` loads
    rooflint.common.paths, ``from rooflint.formats.gate_outcomes import FAILING``
    loads rooflint.formats.gate_outcomes."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield from _existing(alias.name)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join(anchor + ([node.module] if node.module else []))
        for alias in node.names:
            yield from _existing(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES
                                 else base)


def _existing(name: str) -> Iterator[str]:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    if name:
        yield name


def import_graph() -> dict[str, list[Import]]:
    return {module: imports_of(module) for module in MODULES}


def circles(graph: dict[str, list[Import]]) -> list[list[str]]:
    """The import circles a depth-first walk meets, each as the modules around it (the
    first repeated last): none when there is none, at least one when there is. Imports
    under TYPE_CHECKING do not run and close none."""
    edges = {m: sorted({i.module for i in imports if i.where != "typing"})
             for m, imports in graph.items()}
    found: list[list[str]] = []
    done: set[frozenset[str]] = set()
    finished: set[str] = set()      # every circle through these is already found

    def walk(module: str, path: list[str]) -> None:
        for target in edges.get(module, []):
            if target in path:
                circle = path[path.index(target):] + [target]
                if frozenset(circle) not in done:
                    done.add(frozenset(circle))
                    found.append(circle)
            elif target not in finished:
                walk(target, path + [target])
        finished.add(module)

    for module in sorted(edges):
        if module not in finished:
            walk(module, [module])
    return found


def forbidden_imports(graph: dict[str, list[Import]]) -> list[str]:
    """Every import from a layer into one it may not use, with the reason."""
    found = []
    for module, imports in sorted(graph.items()):
        rules = FORBIDDEN.get(layer_of(module) or "", {})
        for i in imports:
            why = rules.get(layer_of(i.module) or "")
            if why:
                found.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{i.line} imports "
                             f"{i.module} ({layer_of(i.module)}, {i.where} level): {why}")
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Import]]:
    return import_graph()


def test_every_module_has_a_layer():
    """A new module is placed in LAYERS, so the table stays the whole tree."""
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_every_layer_entry_names_a_module():
    """An entry for a module that was moved or removed is a table that no longer tells the truth."""
    stale = [name for names in LAYERS.values() for name in names if name not in MODULES]
    assert stale == []


def test_no_import_circle(graph):
    assert circles(graph) == []


def test_no_layer_imports_one_above_it(graph):
    assert forbidden_imports(graph) == []


# What every command shares in commands/: its request, the terminal, the writing of what
# it was asked for, shell completion. The rest are the commands, one module each, and cli.py.
SHARED_BY_COMMANDS = {"rooflint.commands.cli", "rooflint.commands.requests",
                      "rooflint.commands.stdio", "rooflint.commands.writing",
                      "rooflint.commands.completion"}


def command_crossings(graph: dict[str, list[Import]]) -> list[str]:
    """Every import of one command's module by another's (compare once took gate's
    threshold reader): what two commands share belongs below them."""
    commands = {m for m in graph if m.startswith("rooflint.commands.")
                and m not in SHARED_BY_COMMANDS}
    return [f"{module}:{i.line} imports {i.module}" for module in sorted(commands)
            for i in graph[module] if i.module in commands]


def test_no_command_imports_another(graph):
    assert command_crossings(graph) == []


def test_a_command_importing_another_would_be_found(graph):
    graph = {**graph, "rooflint.commands.compare": graph["rooflint.commands.compare"]
             + [Import("rooflint.commands.gate", 1, "module")]}
    assert command_crossings(graph) == ["rooflint.commands.compare:1 imports "
                                        "rooflint.commands.gate"]


def test_nothing_imports_the_package_init(graph):
    """The package's __init__ is the notebook API, which imports the layers: a module that
    takes a name from it (results once took __version__) imports upwards."""
    upward = [f"{module}:{i.line}" for module, imports in graph.items() for i in imports
              if i.module == "rooflint"]
    assert upward == []


def test_the_walk_sees_imports_at_every_level(graph):
    """The walk itself: module-level, function-level and TYPE_CHECKING imports, and
    `from rooflint import MODULE` read as that module."""
    seen = {(m, i.module, i.where) for m, imports in graph.items() for i in imports}
    assert ("rooflint.analysis.evidence", "rooflint.analysis.counters", "module") in seen
    assert ("rooflint.measure.worker", "rooflint.measure.calibrate", "function") in seen
    assert ("rooflint.output.live", "rooflint.measure.runner", "typing") in seen
    assert ("rooflint.formats.manifest", "rooflint.formats.compile_options", "module") in seen


@pytest.mark.parametrize("module, imported", [
    ("rooflint.measure.calibrate", "rooflint.measure.worker"),   # `send`, imported from worker
    ("rooflint.formats.results", "rooflint"),                    # `__version__`, from __init__
], ids=["calibrate-worker", "results-init"])
def test_the_circles_issue_26_removed_would_be_found(graph, module, imported):
    """The two circles issue 26 names, put back into the real graph."""
    graph = {**graph, module: graph[module] + [Import(imported, 1, "module")]}
    assert any({module, imported} <= set(circle) for circle in circles(graph))


@pytest.mark.parametrize("module, imported", [
    ("rooflint.analysis.roofline", "rooflint.measure.protocol"),
    ("rooflint.analysis.roofline", "rooflint.engine.families"),
    ("rooflint.analysis.roofline", "rooflint.formats.results"),     # the edge issue 46 removed
    ("rooflint.analysis.roofline", "rooflint.judge.comparison"),
    ("rooflint.formats.results", "rooflint.judge.upside"),
    ("rooflint.formats.results", "rooflint.output.tables"),
    ("rooflint.judge.gate", "rooflint.output.gate_report"),
    ("rooflint.judge.measurement", "rooflint.measure.protocol"),
    ("rooflint.judge.explain", "rooflint.commands.explain"),
])
def test_an_import_that_points_up_would_be_found(graph, module, imported):
    graph = {**graph, module: graph[module] + [Import(imported, 1, "function")]}
    path = module.replace(".", "/") + ".py"
    assert any(finding.startswith(f"{path}:1 imports {imported} ")
               for finding in forbidden_imports(graph))
