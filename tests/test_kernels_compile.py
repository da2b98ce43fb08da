"""Every bundled .cu compiles for Hopper with nvcc, template entries instantiated too.

CuPy compiles with NVRTC at run time; nvcc here catches syntax and type errors without a
GPU. Plain `nvcc -cubin` never instantiates a template, so a second build includes the
file and takes the address of each template entry a manifest launches.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from rooflint.manifest import bundled_manifests, load_manifest
from rooflint.paths import KERNELS_DIR

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH (CUDA toolkit not installed)")

SOURCES = sorted(KERNELS_DIR.glob("**/*.cu"))


def nvcc(source: Path, out: Path, *include: Path) -> None:
    command = [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-o", str(out), str(source),
               *[f"-I{d}" for d in include]]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_there_are_kernels():
    assert len(SOURCES) >= 2


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(KERNELS_DIR)))
def test_compiles(source, tmp_path):
    nvcc(source, tmp_path / "out.cubin", source.parent)


def template_entries() -> list[tuple[Path, list[str]]]:
    found = []
    for path in bundled_manifests():
        manifest = load_manifest(path)
        by_source: dict[str, set[str]] = {}
        for v in manifest.variants:
            for launch in v.launches:
                if "<" in launch.entry:
                    by_source.setdefault(v.source, set()).add(launch.entry)
        found += [(manifest.directory / s, sorted(e)) for s, e in by_source.items()]
    return found


@pytest.mark.parametrize("source, entries", template_entries(),
                         ids=lambda x: x.name if isinstance(x, Path) else ",".join(x))
def test_template_entries_instantiate(source, entries, tmp_path):
    wrapper = tmp_path / "instantiate.cu"
    pointers = ", ".join(f"(void*)&{e}" for e in entries)
    wrapper.write_text(f'#include "{source}"\nvoid* rooflint_entries[] = {{{pointers}}};\n')
    nvcc(wrapper, tmp_path / "out.cubin", source.parent)
