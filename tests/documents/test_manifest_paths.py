"""Paths in a manifest mean the same wherever rooflint is started: include directories
in ``options`` (the family's, then each variant's) resolve against the manifest's
directory, as ``source`` does (issue 12)."""

from __future__ import annotations

import shutil

import pytest
import yaml

from rooflint.common.errors import RooflintError
from rooflint.formats.manifest import load_manifest

from edges import REPO


@pytest.fixture
def family(tmp_path):
    """The bundled stream family, copied where a test may edit its manifest."""
    target = tmp_path / "stream"
    shutil.copytree(REPO / "kernels" / "stream", target)
    return target


def edit(family, change) -> None:
    path = family / "kernel.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))


def test_relative_include_directories_resolve_against_the_manifest(family, tmp_path,
                                                                  monkeypatch):
    names = []
    for directory in ("common", "include", "more", "abs"):
        (family / directory).mkdir()

    def change(data):
        data["options"] = ["-Icommon", "-DTILE=4"]
        names.extend(data["variants"])
        data["variants"][names[0]]["options"] = ["-I", "include", "--include-path=more",
                                                 f"-I{family / 'abs'}", "-lineinfo"]
    edit(family, change)
    monkeypatch.chdir(tmp_path)                       # started somewhere else
    variants = {v.name: v for v in load_manifest(family).variants}
    family_options = [f"-I{family / 'common'}", "-DTILE=4"]
    assert variants[names[0]].options == [*family_options, "-I", str(family / "include"),
                                          f"--include-path={family / 'more'}",
                                          f"-I{family / 'abs'}", "-lineinfo"]
    assert variants[names[1]].options == family_options


def test_family_options_must_be_a_list(family):
    edit(family, lambda data: data.update(options="-O3"))
    with pytest.raises(RooflintError, match="'options'.*must be a list of compiler options"):
        load_manifest(family)
