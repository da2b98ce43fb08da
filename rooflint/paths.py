"""Where rooflint's files live: the bundled GPU specs and kernel families, and its cache.

The checkout keeps them at its top level (specs/, kernels/); an install (wheel, pipx,
`pip install .`) ships them inside the package as rooflint/specs and rooflint/kernels
(pyproject.toml maps them). The installed copy is looked up through importlib.resources
first, so the tool works from any directory after any install; a checkout that is run
in place (editable install, `python -m rooflint`) falls back to its own folders.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _bundled(name: str) -> Path:
    installed = Path(str(resources.files("rooflint") / name))
    return installed if installed.is_dir() else REPO_ROOT / name


SPECS_DIR = _bundled("specs")
KERNELS_DIR = _bundled("kernels")


def cache_dir() -> Path:
    """rooflint's own cache (calibrations, nvcc builds): ``$ROOFLINT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/rooflint``, else ``~/.cache/rooflint``."""
    if os.environ.get("ROOFLINT_CACHE_DIR"):
        return Path(os.environ["ROOFLINT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rooflint"
