"""The program-fix catalog as data (analysis/program_fixes.py): plain words in, a fix out."""

from __future__ import annotations

from rooflint.analysis import caller_moves as library_moves
from rooflint.analysis.program_fixes import Kind, fix_for, kind_of


def test_a_layer_norm_and_its_backward_get_a_fused_normalisation():
    fix = fix_for(["aten::native_layer_norm_backward", "NativeLayerNormBackward0"],
                  ["GammaBetaBackwardCUDAKernelTemplate"], library_moves.NORM_GRADIENT, False)
    assert fix is not None and fix.id == "fused_normalisation"


def test_gemms_at_their_roof_get_only_a_higher_roof():
    at = fix_for(["aten::mm"], ["nvjet_sm90_tst"], library_moves.GEMM, True)
    below = fix_for(["aten::mm"], ["nvjet_sm90_tst"], library_moves.GEMM, False)
    assert (at.id, at.changes_precision, below.id) == ("gemm_fp8", True, "gemm_shapes")


def test_the_program_s_own_kernel_keeps_its_own_moves_whatever_its_name():
    assert fix_for([], ["layernorm_forward_kernel3"], None, False).id == "own_kernel"


def test_a_compiled_kernel_is_fused_already():
    name = "triton_per_fused_native_layer_norm_0"
    fix = fix_for([name], [name],
                  library_moves.INDUCTOR, False)
    assert fix.id == "max_autotune"


def test_kinds_by_library_then_by_name():
    assert kind_of("anything", library_moves.CAST) is Kind.CASTS
    assert kind_of("triton_red_fused_sum_1", library_moves.INDUCTOR) is Kind.REDUCTIONS
    assert kind_of("mystery", None) is Kind.OTHER
