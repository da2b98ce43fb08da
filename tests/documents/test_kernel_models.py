"""The optional kernel-model file of `rooflint profile --model`: what a user's counts give
the profiled kernels, on the H200 logs of examples/apps/transformer_block.py, and the one
line each kind of mistake in the file gets."""

from __future__ import annotations

import pytest

from rooflint.judge import kernel_times
from rooflint.engine import program as app
from rooflint.formats import kernel_models
from rooflint.common.errors import RooflintError
from rooflint.formats.gpus import find_spec
from rooflint.formats.settings import Settings

from edges import REPO
from test_profile import H200_PASS1, H200_PASS2

EXAMPLE = REPO / "examples" / "apps" / "transformer_block.models.yaml"


@pytest.fixture
def modelled(specs):
    kernels = kernel_times.kernel_times(H200_PASS1)
    counters = app.counters_by_identity(kernels, H200_PASS2)
    result = app.profile_result("transformer_block.py", "/work", kernels, kernels, counters,
                                find_spec("h200", specs), app.device_from(H200_PASS1, "x"),
                                None, Settings(), kernel_models.load(EXAMPLE))
    return {v.name: v for v in result.families[0].variants}


def test_a_modelled_kernel_gets_its_algorithmic_intensity(modelled):
    norm = modelled["LayerNorm"]
    assert norm.point.algorithmic_known
    assert norm.point.algorithmic_ai == pytest.approx(8 / 4)        # 8 BSD FLOPs / 4 BSD bytes
    assert norm.flops["model"] == 8 * 8 * 1024 * 2048
    add = modelled["add"]
    assert add.point.algorithmic_ai == pytest.approx(1 / 6)


def test_a_kernel_no_pattern_matches_has_no_algorithmic_intensity(modelled):
    gemm = modelled["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"]
    assert not gemm.point.algorithmic_known and "model" not in gemm.flops


def test_the_first_matching_pattern_wins_and_short_names_match(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("kernels:\n  - {match: 'TNT@1536$', flops: 1, bytes: 10}\n"
                    "  - {match: nvjet, flops: 2, bytes: 10}\n")
    models = kernel_models.load(path)
    assert kernel_models.model_for(("nvjet_long_demangled", "nvjet_TNT@1536"), models).flops == 1
    assert kernel_models.model_for(("nvjet_long_demangled", "nvjet_TNT@88"), models).flops == 2
    assert kernel_models.model_for(("gelu",), models) is None


@pytest.mark.parametrize("text, fragments", [
    ("kernels:\n  - {match: x, flop: 1, bytes: 2}\n",
     ["kernels[0].flop", "did you mean 'kernels[0].flops'"]),
    ("kernels:\n  - {match: x, flops: 1}\n", ["'kernels[0].bytes' is missing"]),
    ("kernels:\n  - {match: 'gemm(', flops: 1, bytes: 2}\n",
     ["kernels[0].match", "not a regular expression"]),
    ("values: {B: 8}\nkernels:\n  - {match: x, flops: 2 * B * C, bytes: 2}\n",
     ["kernels[0].flops", "C"]),
    ("values: {2B: 8}\nkernels:\n  - {match: x, flops: 1, bytes: 2}\n",
     ["values.2B", "identifier"]),
    ("kernels:\n  - {match: x, flops: 1, bytes: 0}\n", ["kernels[0]", "bytes must be positive"]),
    ("kernel:\n  - {match: x, flops: 1, bytes: 2}\n",
     ["unknown key 'kernel'", "did you mean 'kernels'"]),
    ("kernels: []\n", ["'kernels' must be a list"]),
    ("values: {B: 8}\n", ["'kernels' must be a list"]),
    ("- 1\n", ["expected a mapping"]),
])
def test_a_mistake_in_the_file_is_named(tmp_path, text, fragments):
    path = tmp_path / "models.yaml"
    path.write_text(text)
    with pytest.raises(RooflintError) as caught:
        kernel_models.load(path)
    message = str(caught.value)
    assert str(path) in message and "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_a_missing_model_file_is_named_before_anything_runs(tmp_path):
    """The user's mistake is reported first, even on a machine without ncu or a GPU."""
    from edges import assert_one_line_error, rooflint
    missing = tmp_path / "models.yaml"
    outcome = rooflint("profile", "--model", str(missing), "--", "true", timeout=30)
    assert_one_line_error(outcome, 2, str(missing), "No such file")
