"""On the GPU machine: python variants measured like CUDA ones, and the softmax_rows family
(CUDA, Triton and PyTorch variants of one operation)."""

from __future__ import annotations

import importlib.util

import pytest

from rooflint.engine.families import RunOptions, run
from rooflint.output.live import Listener

pytestmark = pytest.mark.gpu


def no_warnings(message):
    raise AssertionError(f"unexpected warning: {message}")


QUIET = Listener(warn=no_warnings)

MANIFEST = """\
name: python_kinds
params: {N: 2**22}
precision: fp32
flops: N
bytes: 8*N
reference: doubled
tolerance: 1e-7
buffers:
  x: {dtype: float32, shape: N, role: in}
  y: {dtype: float32, shape: N, role: out}
variants:
  elementwise:
    python: double_elementwise
  torch_on_the_timed_stream:
    python: double_torch
  missing_library:
    python: needs_absent.py:double
  declared:
    python: double_elementwise
    baseline: true
"""

REFERENCE = '''\
import numpy as np

_DOUBLE = None


def doubled(bufs, params):
    return {"y": 2.0 * bufs["x"].astype(np.float64)}


def double_elementwise(xp, bufs, params):
    """A CuPy ElementwiseKernel, launched on CuPy's current stream."""
    global _DOUBLE
    if _DOUBLE is None:
        _DOUBLE = xp.ElementwiseKernel("float32 x", "float32 y", "y = 2.0f * x", "double_it")
    _DOUBLE(bufs["x"], bufs["y"])


def double_torch(xp, bufs, params):
    """Fails unless PyTorch's current stream is the one rooflint times on."""
    import torch
    current = torch.cuda.current_stream().cuda_stream
    timed = xp.cuda.get_current_stream().ptr
    assert current == timed, f"torch launches on {current:#x}, rooflint times {timed:#x}"
    torch.mul(torch.from_dlpack(bufs["x"]), 2.0, out=torch.from_dlpack(bufs["y"]))
'''


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    directory = tmp_path_factory.mktemp("python") / "python_kinds"
    directory.mkdir()
    (directory / "kernel.yaml").write_text(MANIFEST)
    (directory / "reference.py").write_text(REFERENCE)
    (directory / "needs_absent.py").write_text("import rooflint_absent_module\n\n\n"
                                               "def double(xp, bufs, params):\n    pass\n")
    result = run(RunOptions(targets=[str(directory)], variants=[], sizes={}, counters="off"),
                 QUIET)
    return result.families[0]


def test_an_elementwise_kernel_is_measured_as_an_ordinary_variant(kinds):
    rows = {v.name: v for v in kinds.variants}
    v = rows["elementwise"]
    assert v.status == "ok", v.message
    assert v.time.n >= 10 and v.checks[0].rel_l2 == 0 and not v.baseline
    assert v.speed_vs_baseline is not None and kinds.baseline == "declared"


def test_pytorch_launches_on_the_timed_stream(kinds):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed")
    v = {v.name: v for v in kinds.variants}["torch_on_the_timed_stream"]
    assert v.status == "ok", v.message


def test_a_missing_library_skips_the_variant_with_a_note(kinds):
    v = {v.name: v for v in kinds.variants}["missing_library"]
    assert v.status == "skipped"
    assert v.message == ("needs rooflint_absent_module (No module named "
                         "'rooflint_absent_module')")


def test_softmax_rows_runs_every_variant(tmp_path):
    """Each variant passes its check or is skipped with a note naming what is missing;
    those that ran match what their manifest predicts (without counters, a bound that only
    L1's counters show is not held against them)."""
    result = run(RunOptions(targets=["softmax_rows"], variants=[], sizes={}, counters="off",
                            json_path=tmp_path / "softmax.json"), QUIET)
    rows = {v.name: v for v in result.families[0].variants}
    assert list(rows) == ["thread_per_row", "block_per_row", "triton", "torch"]
    for v in rows.values():
        assert v.status in ("ok", "skipped"), f"{v.name}: {v.message}"
        if v.status == "skipped":
            assert v.message.startswith("needs "), v.message
        else:
            assert v.expectation_mismatch is None, f"{v.name}: {v.expectation_mismatch}"
    assert rows["block_per_row"].status == "ok"
    assert [v.name for v in rows.values() if v.baseline] == ["torch"]
