"""The files a manifest may name: only what its family's directory holds.

A family is a directory one can move or share, and rooflint builds and runs what its
manifest names: a CUDA source, a python variant's module, a compiler option's include
directory or file. Each is looked up relative to the manifest's directory (not wherever
rooflint was started), symbolic links and ``..`` resolved, and refused when it lies
outside the family (a compiler option may also name the CUDA toolkit's include directory)
or when nvcc's shell would expand its name. Which compiler options exist at all is
`rooflint.formats.compile_options`'s table; this module checks the paths they take.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from rooflint.formats import compile_options
from rooflint.formats.jsonfile import not_a_file
from rooflint.formats.schema import Place
from rooflint.common.toolkit import toolkit_include_dirs


def source_file(source: Any, place: Place) -> str:
    """A CUDA variant's ``source``: a file in the family's directory whose name nvcc's
    shell leaves as it is."""
    directory = place.file.parent
    if not isinstance(source, str):
        raise place.invalid(f"is {source!r}; expected the name of a .cu file")
    if compile_options.SHELL_ACTIVE.search(source):
        raise place.invalid(f"is {source!r}: nvcc's shell would expand its $, `, "
                            f"\" or \\; rename the file")
    if not (directory / source).is_file():
        raise place.invalid(f"names {source}, which {_not_there(directory / source)}")
    return source


def python_module(place: Place, module: str) -> Path:
    """The ``module.py`` of ``python: module.py:FUNCTION``: a file inside the family's
    directory, since a python variant runs the family's own code."""
    directory = place.file.parent
    path = directory / module
    if not path.resolve().is_relative_to(directory.resolve()):
        raise place.invalid(f"names {module}, which is outside the family's directory "
                            f"({directory}): a python variant runs the family's own code")
    if not path.is_file():
        raise place.invalid(f"names {module}, which {_not_there(path)}")
    return path


def _not_there(path: Path) -> str:
    """Why a file a manifest names cannot be used, in words: what is at ``path`` instead
    (a directory, a dangling link), or that nothing is, and where that was looked for (a
    name with ``..`` may lead out of the family: "not in the family's directory" said
    where the file is not, not that it is missing)."""
    return not_a_file(path) or f"does not exist ({os.path.abspath(path)})"


def option_in_family(place: Place, option: compile_options.Option) -> compile_options.Option:
    """A path option made absolute, if it names a directory (``-I``) or file
    (``-include``) inside the family's directory or the CUDA toolkit's include directory,
    symbolic links and ``..`` resolved: the compiler may read nothing else."""
    if not option.is_path:
        return option
    directory = place.file.parent
    if not compile_options.plain(option.value):
        raise place.invalid(f"is {' '.join(option.items)!r}: a path in options may not hold "
                            f"spaces, quotes, $, backquotes or backslashes")
    path = directory / option.value
    toolkit = toolkit_include_dirs()
    kind = "directory" if option.flag.value is compile_options.Value.DIRECTORY else "file"
    if not any(path.resolve().is_relative_to(root) for root in (directory.resolve(), *toolkit)):
        raise place.invalid(f"is {' '.join(option.items)!r}: {option.spelling} takes a {kind} "
                            f"inside the family's directory ({directory}) or the CUDA "
                            f"toolkit's include directory ({_listed(toolkit)})"
                            f"{_leads_to(option.value, path.resolve())}")
    if not (path.is_dir() if kind == "directory" else path.is_file()):
        raise place.invalid(f"is {' '.join(option.items)!r}: {path} is not a {kind}")
    return replace(option, value=str(path))


def _leads_to(written: str, resolved: Path) -> str:
    """``; WRITTEN is RESOLVED`` where a relative path, ``..`` or a link makes the path
    another than the one written (what was compared); nothing where it is that path."""
    return "" if Path(written) == resolved else f"; {written} is {resolved}"


def _listed(toolkit: list[Path]) -> str:
    """The toolkits' include directories, for an error; with none, how to name one (a
    wrapper script's directory is not a toolkit: see common/toolkit.py)."""
    if not toolkit:
        return "none found: set CUDA_HOME to the toolkit"
    return ", ".join(map(str, toolkit))
