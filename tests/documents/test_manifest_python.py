"""Python variants (issue 12): ``python: FUNCTION`` in reference.py or
``python: module.py:FUNCTION`` beside the manifest, ordinary variants unless declared
the baseline; ``baseline: FUNCTION`` stays the shorthand for a declared one. And the
bundled softmax_rows family, whose Triton kernel is such a variant."""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from rich.console import Console

from edges import REPO, assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.output.depth import Depth
from rooflint.formats.gpus import find_spec
from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest
from rooflint.formats.jobs import Clocks, FamilyJob, Measurement, OutputCheck, TimingJob
from rooflint.output.family_table import render_family
from rooflint.judge.measurement import family_result
from recorded import RECORDED

DEVICE = {"num_sms": 132}

FAMILY = """\
name: kinds
params: {N: 1024}
precision: fp32
flops: N
bytes: 8*N
reference: ref
tolerance: 1e-6
buffers:
  x: {dtype: float32, shape: N, role: in}
  y: {dtype: float32, shape: N, role: out}
variants:
  cuda:
    source: k.cu
    launches:
      - {entry: k, grid: "cdiv(N, 256)", block: 256, args: [x, y, {i32: N}]}
  in_reference:
    python: double_it
  in_module:
    python: triton_k.py:launch
  declared:
    python: double_it
    baseline: true
  shorthand:
    baseline: double_it
"""


def family(tmp_path: Path, text: str = FAMILY) -> Path:
    directory = tmp_path / "kinds"
    directory.mkdir()
    (directory / "k.cu").write_text('extern "C" __global__ void k(const float* x, float* y, '
                                    'int n) {}\n')
    (directory / "reference.py").write_text("def ref(bufs, params):\n    return {}\n")
    (directory / "triton_k.py").write_text("def launch(xp, bufs, params):\n    pass\n")
    (directory / "kernel.yaml").write_text(text)
    return directory


def resolved(target):
    return resolve(load_manifest(target), {}, DEVICE, TimingJob())


def jobs(family_):
    return {v.name: v for v in family_.job.variants}


def test_each_kind_of_variant_resolves(tmp_path, monkeypatch):
    directory = family(tmp_path)
    monkeypatch.chdir(tmp_path.parent)                   # started somewhere else
    found = resolved(directory)
    v = jobs(found)
    assert (v["cuda"].source, v["cuda"].python, v["cuda"].module) == \
        (str(directory / "k.cu"), None, None)
    assert (v["in_reference"].python, v["in_reference"].module) == \
        ("double_it", str(directory / "reference.py"))
    assert (v["in_module"].python, v["in_module"].module) == \
        ("launch", str(directory / "triton_k.py"))
    assert all(not v[name].launches and v[name].source is None
               for name in ("in_reference", "in_module", "declared", "shorthand"))
    assert v["shorthand"] == replace(v["declared"], name="shorthand")


def test_only_declared_baselines_are_baselines(tmp_path):
    found = resolved(family(tmp_path))
    assert {name: m.baseline for name, m in found.models.items()} == {
        "cuda": False, "in_reference": False, "in_module": False, "declared": True,
        "shorthand": True}
    assert {name: v.baseline for name, v in jobs(found).items()} == \
        {name: m.baseline for name, m in found.models.items()}
    # A python variant writes what it writes: every output counts as its compulsory writes.
    assert found.models["in_module"].written_bytes == 4 * 1024
    assert found.models["in_module"].launches == 0


def test_a_cuda_variant_may_be_the_declared_baseline(tmp_path):
    text = FAMILY.replace("  in_reference:", "    baseline: true\n  in_reference:", 1)
    assert resolved(family(tmp_path, text)).models["cuda"].baseline


def test_python_variants_survive_the_worker_protocol(tmp_path):
    job = resolved(family(tmp_path)).job
    assert FamilyJob.from_json(json.loads(json.dumps(job.to_json()))) == job


REF = "  in_reference:\n    python: double_it\n"
MODULE = "    python: triton_k.py:launch\n"
SHORTHAND = "    baseline: double_it\n"
KINDS = "needs exactly one of 'source'"
# (what the user changed in FAMILY, the fragments the one line must hold)
MISTAKES = [
    ((REF, REF + "    source: k.cu\n"), ["'variants.in_reference'", KINDS]),
    ((REF, REF + "    baseline: double_it\n"), ["'variants.in_reference'", KINDS]),
    ((REF, "  in_reference:\n    description: nothing to run\n"),
     ["'variants.in_reference'", KINDS]),
    ((REF, "  in_reference:\n    baseline: true\n"), ["'variants.in_reference'", KINDS]),
    ((MODULE, "    python: missing.py:launch\n"),
     ["'variants.in_module.python' names missing.py, which does not exist"]),
    ((MODULE, "    python: 'triton_k.py:'\n"),
     ["'variants.in_module.python' is 'triton_k.py:'", "module.py:FUNCTION"]),
    ((MODULE, "    python: triton_k.txt:launch\n"),
     ["'variants.in_module.python' is 'triton_k.txt:launch'"]),
    ((MODULE, "    python: [launch]\n"), ["'variants.in_module.python' is ['launch']"]),
    ((SHORTHAND, "    baseline: 3\n"),
     ["'variants.shorthand.baseline' is 3", "true, false or a function"]),
    ((SHORTHAND, "    baseline: not a name\n"),
     ["'variants.shorthand.baseline' is 'not a name'"]),
    ((REF, REF + "    launches: []\n"),
     ["'variants.in_reference.launches' is for a 'source' variant"]),
    (("    source: k.cu\n", "    source: 5\n"), ["'variants.cuda.source' is 5", ".cu file"]),
    ((REF, "  in_reference:\n    pyhton: double_it\n"),
     ["'variants.in_reference.pyhton'", "did you mean 'variants.in_reference.python'"]),
]


@pytest.mark.parametrize("change, fragments", MISTAKES,
                         ids=[c[1].strip().replace("\n", " ")[-40:] for c, _ in MISTAKES])
def test_python_variant_mistakes_are_one_line_before_the_gpu(tmp_path, change, fragments):
    directory = family(tmp_path, FAMILY.replace(*change))
    before = snapshot(directory)
    outcome = rooflint("run", str(directory))
    assert_one_line_error(outcome, 2, str(directory / "kernel.yaml"), *fragments)
    assert_intact(before)


def test_bundled_baseline_shorthands_still_load():
    """gemm_fp32, w4a16_gemv and decode_attention say ``baseline: FUNCTION``."""
    for name, baseline in [("gemm_fp32", "cublas"), ("w4a16_gemv", "cublas_fp16"),
                           ("decode_attention", "sdpa")]:
        found = resolved(name)
        assert [n for n, m in found.models.items() if m.baseline] == [baseline]
        assert jobs(found)[baseline].python == baseline


# -- the softmax_rows family ---------------------------------------------------------------

SOFTMAX = REPO / "kernels" / "softmax_rows"


def test_softmax_rows_loads_with_cuda_triton_and_torch_variants():
    found = resolved("softmax_rows")
    v = jobs(found)
    assert list(v) == ["thread_per_row", "block_per_row", "triton", "torch"]
    assert (v["triton"].module, v["triton"].python) == \
        (str(SOFTMAX / "softmax_triton.py"), "triton_softmax")
    assert (v["torch"].module, v["torch"].python) == (str(SOFTMAX / "reference.py"),
                                                      "torch_softmax")
    assert [n for n, m in found.models.items() if m.baseline] == ["torch"]
    M, N = 16384, 4096
    assert found.models["triton"].bytes == 8 * M * N and found.models["triton"].flops == 4 * M * N
    [block] = v["block_per_row"].launches
    assert (block.entry, block.grid, block.block) == ("softmax_block<4>", [M], [256])
    assert 4 * 4 * block.block[0] == N               # four float4 per thread cover the row
    [naive] = v["thread_per_row"].launches
    assert naive.grid[0] * naive.block[0] == M


def softmax_reference():
    spec = importlib.util.spec_from_file_location("softmax_reference", SOFTMAX / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.softmax


def test_softmax_reference_is_a_stable_row_softmax():
    softmax = softmax_reference()
    x = np.array([[0.0, np.log(3.0)], [-100.0, 100.0]], dtype=np.float32)
    out = softmax({"x": x}, {})["out"]
    assert out[0] == pytest.approx([0.25, 0.75])
    assert out[1] == pytest.approx([np.exp(-200.0), 1.0])   # e^100 overflows fp32, not here
    rows = np.random.default_rng(1).uniform(-100, 100, (8, 64)).astype(np.float32)
    out = softmax({"x": rows}, {})["out"]
    assert np.allclose(out.sum(axis=1), 1.0) and (out > 0).all()
    assert np.allclose(softmax({"x": rows + np.float32(7)}, {})["out"], out)   # shift-invariant


def measured(name: str, median_s: float) -> Measurement:
    samples = [median_s * (1 + 0.005 * k) for k in (-1, -0.5, 0, 0.5, 1)]
    return Measurement(name, "ok", "", [OutputCheck("out", 1e-7, 1e-7, 1e-7, 0)], samples,
                       Clocks(sm_mhz=[1980.0], mem_mhz=[3201.0]))


def test_a_python_variant_is_reported_like_a_cuda_one(specs):
    """Only the declared baseline is marked; the Triton row is a variant with its speed
    against torch, as the CUDA rows are. (Times are what an H200 should roughly give;
    the lead commits the measured ones.)"""
    found = resolved("softmax_rows")
    result = family_result(found, [measured("thread_per_row", 2.5e-3),
                                   measured("block_per_row", 125e-6),
                                   measured("triton", 130e-6), measured("torch", 140e-6)],
                           {}, find_spec("h200", specs), RECORDED.gpu)
    rows = {v.name: v for v in result.variants}
    assert result.baseline == "torch"
    assert [n for n, v in rows.items() if v.baseline] == ["torch"]
    assert rows["triton"].speed_vs_baseline == pytest.approx(140 / 130)
    assert rows["triton"].source_sha256 is None and rows["triton"].verdict.bound == "bandwidth"
    console = Console(record=True, width=200)
    render_family(console, result, Depth.DETAIL)
    text = console.export_text()
    assert "torch (baseline)" in text and "triton (baseline)" not in text
    assert "triton: 1.08x the speed of the baseline" in " ".join(text.split())


def test_the_readme_python_example_is_the_bundled_one():
    """The manifest guide's Triton example shows softmax_rows' variants as the manifest has them."""
    text = (REPO / "docs" / "manifest.md").read_text()
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "python:" in b]
    shown = yaml.safe_load(block)["variants"]
    bundled = yaml.safe_load((SOFTMAX / "kernel.yaml").read_text())["variants"]
    assert shown and all({k: bundled[name][k] for k in spec} == spec
                         for name, spec in shown.items())
