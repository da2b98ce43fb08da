"""The package ships its data: every bundled family and the specs reach an install."""

import tomllib

from rooflint import __version__
from rooflint.formats.families import MANIFEST_NAME
from rooflint.common.paths import KERNELS_DIR, REPO_ROOT, SPECS_DIR

from edges import rooflint


def _setuptools() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_bundled_family_is_a_listed_package():
    families = {p.parent.name for p in (REPO_ROOT / "kernels").glob(f"*/{MANIFEST_NAME}")}
    listed = {name.removeprefix("rooflint.kernels.") for name in _setuptools()["packages"]
              if name.startswith("rooflint.kernels.")}
    assert families and families == listed


def test_data_folders_are_mapped_into_the_package():
    assert _setuptools()["package-dir"] == {"rooflint.specs": "specs",
                                            "rooflint.kernels": "kernels"}
    assert SPECS_DIR.is_dir() and any(SPECS_DIR.glob("*.yaml"))
    assert KERNELS_DIR.is_dir() and any(KERNELS_DIR.glob(f"*/{MANIFEST_NAME}"))


def test_version_flag(tmp_path):
    outcome = rooflint("--version", cwd=tmp_path)
    assert outcome.code == 0 and outcome.stdout.strip() == f"rooflint {__version__}"


def test_every_code_package_is_listed_and_every_import_in_ci_resolves():
    """A non-editable install ships only the listed packages: each folder of rooflint/ with
    an __init__.py must be one (the layer packages moved there on 2026-11-25), and the
    imports .ci/run's install check makes must still exist after a module moves."""
    import importlib
    import re
    code = {".".join(p.parent.relative_to(REPO_ROOT).parts)
            for p in (REPO_ROOT / "rooflint").rglob("__init__.py")}
    assert code <= set(_setuptools()["packages"])
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    imports = re.findall(r"^from (rooflint[\w.]*) import ([\w, ]+)$", ci, re.M)
    assert imports
    for module, names in imports:
        loaded = importlib.import_module(module)
        assert all(hasattr(loaded, n.strip()) for n in names.split(",")), (module, names)
