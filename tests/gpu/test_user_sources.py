"""Kernels as their authors wrote them (issue 12): nvcc-style sources built with nvcc,
C++-linkage entries found by name under NVRTC, and entry typos answered with the list."""

from pathlib import Path

import pytest

from rooflint.engine.families import RunOptions, run
from rooflint.output.live import Listener

pytestmark = pytest.mark.gpu
FAMILIES = Path(__file__).parent.parent / "families"


def _run(target: str, counters: str = "off") -> dict:
    result = run(RunOptions(targets=[target], variants=[], sizes={}, counters=counters),
                 Listener())
    return {v.name: v for v in result.families[0].variants}


def test_an_unmodified_nvcc_tutorial_compiles_runs_and_gets_verdicts():
    variants = _run(str(FAMILIES / "sgemm_nvcc"), counters="ncu")
    for v in variants.values():
        assert v.status == "ok", f"{v.name}: {v.message}"
        assert v.verdict is not None and v.counters is not None
    for name in ("naive", "coalesce", "shared_mem_block"):
        assert variants[name].compiler.startswith("nvcc ")
    times = [variants[n].time.median_s for n in ("naive", "coalesce", "shared_mem_block")]
    assert times == sorted(times, reverse=True)


CXX_LINKAGE = """
template <int SCALE>
__global__ void scaled(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = SCALE * x[i];
}
__global__ void doubled(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2 * x[i];
}
"""


def _family(tmp_path: Path, entry: str, compiler: str = "auto") -> str:
    (tmp_path / "k.cu").write_text(CXX_LINKAGE)
    (tmp_path / "reference.py").write_text(
        "def twice(inputs, params):\n    return {'y': 2 * inputs['x']}\n")
    (tmp_path / "kernel.yaml").write_text(f"""
name: linkage
params: {{N: 1048576}}
precision: fp32
flops: N
bytes: 8*N
reference: twice
tolerance: 0
compiler: {compiler}
buffers:
  x: {{dtype: float32, shape: N, role: in}}
  y: {{dtype: float32, shape: N, role: out}}
variants:
  v:
    source: k.cu
    launches:
      - {{entry: "{entry}", grid: "cdiv(N, 256)", block: 256, args: [x, y, {{i64: N}}]}}
""")
    return str(tmp_path)


@pytest.mark.parametrize("entry", ["doubled", "scaled<2>"])
@pytest.mark.parametrize("compiler", ["auto", "nvcc"])
def test_cxx_linkage_kernels_are_found_by_the_name_in_the_source(tmp_path, entry, compiler):
    v = _run(_family(tmp_path, entry, compiler))["v"]
    assert v.status == "ok", v.message
    assert v.compiler.startswith("nvrtc " if compiler == "auto" else "nvcc ")


@pytest.mark.parametrize("compiler", ["auto", "nvcc"])
def test_an_entry_typo_lists_the_kernels_the_source_has(tmp_path, compiler):
    v = _run(_family(tmp_path, "doubeld", compiler))["v"]
    assert v.status == "error"
    assert "entry 'doubeld' is not a kernel in k.cu; its kernels:" in v.message
    assert "doubled" in v.message
    if compiler == "auto":  # NVRTC lists the source's kernels; nvcc the cubin's (instantiated)
        assert "scaled" in v.message
