"""On the GPU machine: a host reference computed once and read back from the reference
cache (issue 25), missed again when what it imports changes, bypassed on request, and a
damaged entry computed again, every run checked as before."""

from __future__ import annotations

import pytest

from rooflint.engine.families import RunOptions, run
from rooflint.common.phases import REFERENCE_CACHE_HIT, REFERENCE_CACHE_MISS
from rooflint.formats.reference_cache import ENTRY_FILE, references_directory
from rooflint.output.live import Listener

pytestmark = pytest.mark.gpu

MANIFEST = """\
name: cached_reference
params: {N: 2**24}
precision: fp32
flops: N
bytes: 8*N
reference: scaled
tolerance: 1e-7
buffers:
  x: {dtype: float32, shape: N, role: in}
  y: {dtype: float32, shape: N, role: out}
variants:
  double:
    source: double.cu
    launches:
      - {entry: double_it, grid: "cdiv(N, 256)", block: 256, args: [x, y, {i64: N}]}
"""

SOURCE = """\
extern "C" __global__ void double_it(const float* x, float* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""

# The reference imports its factor from a file beside it (the worker runs with the
# current directory first on sys.path, so the test runs from the family's directory).
REFERENCE = ("from factor import FACTOR\n\n\n"
             "def scaled(bufs, params):\n    return {'y': FACTOR * bufs['x']}\n")


@pytest.fixture
def family(tmp_path, monkeypatch):
    directory = tmp_path / "cached_reference"
    directory.mkdir()
    (directory / "kernel.yaml").write_text(MANIFEST)
    (directory / "double.cu").write_text(SOURCE)
    (directory / "reference.py").write_text(REFERENCE)
    (directory / "factor.py").write_text("FACTOR = 2.0\n")
    monkeypatch.chdir(directory)
    monkeypatch.syspath_prepend(str(directory))
    return directory


def measured(family, reference_cache: bool = True) -> tuple[str, set[str]]:
    """The variant's status and the reference's phases in one run."""
    result = run(RunOptions(targets=[str(family)], variants=[], sizes={}, counters="off",
                            reference_cache=reference_cache), Listener())
    [variant] = result.families[0].variants
    timings = result.families[0].timings
    return variant.status, {p for p in timings if p.startswith("reference")}


def test_the_reference_is_computed_once_then_read(family):
    status, phases = measured(family)
    assert status == "ok" and REFERENCE_CACHE_MISS in phases and REFERENCE_CACHE_HIT not in phases
    assert len(list(references_directory().iterdir())) == 1
    status, phases = measured(family)
    assert status == "ok" and REFERENCE_CACHE_HIT in phases and REFERENCE_CACHE_MISS not in phases


def test_a_changed_helper_is_computed_again_and_checked(family):
    """Stale outputs would pass a kernel that is now wrong: the helper's change misses."""
    measured(family)
    (family / "factor.py").write_text("FACTOR = 3.0\n")
    status, phases = measured(family)
    assert status == "fail" and REFERENCE_CACHE_MISS in phases


def test_the_cache_can_be_bypassed(family):
    measured(family)
    status, phases = measured(family, reference_cache=False)
    assert status == "ok" and phases == {"reference"}


def test_a_damaged_entry_is_computed_again(family):
    measured(family)
    [entry] = references_directory().iterdir()
    (entry / ENTRY_FILE).write_text("{")
    status, phases = measured(family)
    assert status == "ok" and REFERENCE_CACHE_MISS in phases
    status, phases = measured(family)
    assert REFERENCE_CACHE_HIT in phases
