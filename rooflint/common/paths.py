"""Where rooflint's files live: the bundled GPU specs and kernel families, its cache, and
where a result says its families came from.

The checkout keeps them at its top level (specs/, kernels/); an install (wheel, pipx,
`pip install .`) ships them inside the package as rooflint/specs and rooflint/kernels
(pyproject.toml maps them). The installed copy is looked up through importlib.resources
first, so the tool works from any directory after any install; a checkout that is run
in place (editable install, `python -m rooflint`) falls back to its own folders.
"""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path, PurePosixPath

from rooflint.common.errors import RooflintError

REPO_ROOT = Path(__file__).resolve().parents[2]


def _bundled(name: str) -> Path:
    installed = Path(str(resources.files("rooflint") / name))
    return installed if installed.is_dir() else REPO_ROOT / name


SPECS_DIR = _bundled("specs")
KERNELS_DIR = _bundled("kernels")
CACHE_VARIABLE = "ROOFLINT_CACHE_DIR"


def cache_dir() -> Path:
    """rooflint's own cache (calibrations, nvcc builds): ``$ROOFLINT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/rooflint``, else ``~/.cache/rooflint``."""
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rooflint"


def repository_root(path: Path) -> Path | None:
    """The git work tree holding ``path`` (the nearest ancestor with a ``.git``), found
    without running git."""
    for directory in (path.resolve(), *path.resolve().parents):
        if (directory / ".git").exists():
            return directory
    return None


def portable_path(path: Path) -> str:
    """How a result records a family's directory or a source file: relative to its git
    repository (``kernels/stream``), so a clone elsewhere finds it and no machine's paths
    are kept; absolute only outside any repository (nothing re-measures such a family)."""
    root = repository_root(path)
    resolved = path.resolve()
    return resolved.relative_to(root).as_posix() if root else str(resolved)


# An absolute path in a line of text: two names or more, the first slash starting a word
# (not the slash of B/s, obs/alg or a template's (int)/2, nor an address's //); a name ends
# at a space, a colon (file.py:12) or a bracket (file.py(12)).
_ABSOLUTE = re.compile(r"(?<![\w.:/~)\]>-])(?:/[\w.@+~%-]+){2,}/?")
CUT = "…/"            # in front of a path's last name where the folders above were left out


def relative_paths(text: str, directory: Path) -> str:
    """``text`` with each absolute path in it written relative to ``directory`` (a result
    file's folder) where it lies under it, else as its last name behind CUT: a page passed
    on names none of the folders of the machine it was made on."""
    base = PurePosixPath(os.path.abspath(directory))

    def relative(match: re.Match[str]) -> str:
        path = PurePosixPath(match.group())
        return path.relative_to(base).as_posix() if path.is_relative_to(base) else CUT + path.name
    return _ABSOLUTE.sub(relative, text)


def locate_family(location: str, repository: Path | None = None) -> Path:
    """The directory a result's ``location`` names, inside the repository holding the
    current directory (or ``repository``): `gate --recheck` runs git there, so a result
    file may never point it anywhere else."""
    root = repository or repository_root(Path.cwd())
    if root is None:
        raise RooflintError("--recheck rebuilds the baseline's code from git: run it inside "
                            "the repository that holds the kernels")
    directory = (root / location).resolve()
    if not directory.is_relative_to(root.resolve()):
        raise RooflintError(f"the result's family directory {location!r} is outside this "
                            f"repository ({root}); run --recheck in the clone it came from")
    return directory
