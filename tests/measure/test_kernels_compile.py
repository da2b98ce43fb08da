"""Every bundled source builds with nvcc for Hopper and for both Blackwells (sm_100: B200
and GB200; sm_120: the RTX 5090), as a run on them asks (runners.py: sm_ and the compute
capability), and defines every entry its manifest launches, template instantiations
included: syntax, type and entry-name errors caught without a GPU (CuPy's NVRTC build runs
on the GPU machine; nvcc is rooflint's other path).
"""

from pathlib import Path

import pytest

from rooflint.formats.families import bundled_manifests
from rooflint.formats.manifest import load_manifest
from rooflint.measure import build
from rooflint.common.paths import KERNELS_DIR

pytestmark = pytest.mark.skipif(build.find_nvcc() is None,
                                reason="nvcc not found (CUDA toolkit not installed)")


def bundled_sources() -> list[tuple[Path, list[str], list[str]]]:
    """(source, the entries launched from it, its options) for every bundled variant."""
    found: dict[Path, tuple[set[str], list[str]]] = {}
    for path in bundled_manifests():
        for v in load_manifest(path).variants:
            if v.source:
                entries, _ = found.setdefault(path.parent / v.source, (set(), v.options))
                entries.update(launch.entry for launch in v.launches)
    return [(source, sorted(entries), options) for source, (entries, options) in found.items()]


def test_there_are_kernels():
    assert len(bundled_sources()) >= 5


@pytest.mark.parametrize("arch", ["sm_90", "sm_100", "sm_120"])
@pytest.mark.parametrize("source, entries, options", bundled_sources(),
                         ids=lambda x: str(x.relative_to(KERNELS_DIR)) if isinstance(x, Path)
                         else None)
def test_builds_with_every_entry(source, entries, options, arch, tmp_path):
    cubin = build.build(source, entries, options, arch, tmp_path)
    assert sorted(cubin.symbols) == entries
