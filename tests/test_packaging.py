"""The package ships its data: every bundled family and the specs reach an install."""

import tomllib

from rooflint import __version__
from rooflint.formats.manifest import MANIFEST_NAME
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
