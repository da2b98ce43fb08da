"""The library move catalog: every library kernel's verdict leads with a move its caller
can make; a kernel the user wrote keeps the kernel-level moves."""

from __future__ import annotations

import itertools

import pytest

from rooflint.judge import kernel_libraries, kernel_times
from rooflint.judge import upside
from rooflint.engine import program as app
from rooflint.analysis import caller_moves as catalog
from rooflint.analysis.diagnose import Move, Verdict
from rooflint.output.terminal import lead_phrase

FLAGS = ("launch_overhead", "grid_under_one_wave", "bandwidth_bound", "compute_bound",
         "chain_bound", "l2_bound", "l1_bound", "register_spills", "extra_traffic",
         "partial_wave", catalog.FORWARD_UPCAST, catalog.MAX_AUTOTUNED)


def test_every_library_rooflint_names_is_in_the_catalog():
    named = {words for _, words in (*kernel_libraries.LIBRARIES,
                                    *kernel_libraries.PYTORCH_KERNELS,
                                    *kernel_libraries.OPERATOR_LIBRARIES)}
    assert named | {catalog.OPERATOR} == set(catalog.EVERY_LIBRARY)


@pytest.mark.parametrize("library", catalog.EVERY_LIBRARY)
def test_every_library_kernel_gets_a_caller_move_whatever_its_evidence(library):
    """Over every combination of the flags the catalog's moves look at."""
    for n in range(len(FLAGS) + 1):
        for chosen in itertools.combinations(FLAGS, n):
            found = catalog.caller_moves(library, {flag: "" for flag in chosen})
            assert found, (library, chosen)
            assert all(library in m.libraries for m in found)


def test_a_kernel_the_user_wrote_gets_no_caller_move():
    assert catalog.caller_moves(None, {"launch_overhead": ""}) == []
    assert kernel_libraries.library("softmax_rows") is None        # a user's own Triton kernel
    assert kernel_libraries.library("my_kernel<float>(float*)") is None


@pytest.mark.parametrize("kernel, library", [
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", catalog.GEMM),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma", catalog.ATTENTION),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda"
     "(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >", catalog.CAST),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "std::array<char*, 1ul> >", catalog.FILL),
    ("void at::native::multi_tensor_apply_kernel<at::native::FusedOptimizerTensorListMetadata"
     "<4>, at::native::FusedAdamMathFunctor<float, 4, 1, 0> >", catalog.OPTIMIZER),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl>",
     catalog.GELU),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float>", catalog.SOFTMAX),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
     catalog.ELEMENTWISE),
    ("triton_poi_fused_gelu_view_2", catalog.INDUCTOR),
    # torch.cat (nanoGPT's split in backward) was told to keep the weights in bf16
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::"
     "(anonymous namespace)::OpaqueType<2u>, unsigned int, 3, 128, 1>", catalog.ELEMENTWISE),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", catalog.NCCL),
    # a JAX training loop's (H100, 2026-11-26): XLA's Triton GEMMs were read as cuBLAS's
    ("gemm_fusion_dot_general_12", catalog.XLA_GEMM),
    ("loop_add_subtract_fusion_5", catalog.XLA_FUSION),
    ("input_reduce_select_fusion_1", catalog.XLA_FUSION),
    ("fusion_86", catalog.XLA_FUSION),
    ("wrapped_broadcast", catalog.XLA_FUSION),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
     "segment_k_off_kernel__5x_cublas", catalog.GEMM),        # cuBLAS, called by XLA
])
def test_library_kernels_are_named_by_who_wrote_them(kernel, library):
    assert kernel_libraries.library(kernel) == library


ADAM = ("void at::native::multi_tensor_apply_kernel<at::native::FusedOptimizerTensorListMetadata"
        "<4>, at::native::FusedAdamMathFunctor<float, 4, 1, 0> >")
FOREACH = ("void at::native::multi_tensor_apply_kernel<at::native::TensorListMetadata<1>, "
           "at::native::LpNormFunctor<float, 2, float, float>, float*, int>")


@pytest.mark.parametrize("kernel, operator, library", [
    # nanoGPT's step (H100, 2026-11-26): AdamW(fused=True) was told "the fused optimizer",
    # and gradient clipping's norm and scale, which share its kernel's name, too
    (ADAM, "aten::_fused_adamw_", catalog.FUSED_OPTIMIZER),
    (FOREACH, "aten::_foreach_norm", catalog.FOREACH),
    (FOREACH, None, catalog.OPTIMIZER),                       # no trace: by name
    # a helper of cuDNN's attention backward, named by none of LIBRARIES' patterns, got a
    # kernel-level move (coalesce its stores) as if the program had written it
    ("void compute_dot_do_o_specialized<true>(...)", "aten::_cudnn_attention_backward",
     catalog.ATTENTION),
    ("void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<...>", "aten::sort",
     catalog.OPERATOR),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", "aten::addmm", catalog.GEMM),
    ("softmax_rows", None, None),                             # the program's own Triton kernel
    # SGEMM_CUDA's runner (H100, 2026-11-26): its own kernels read as cuBLAS's, and were
    # told to shape their GEMMs for cuBLAS's tiles instead of their bank conflicts
    ("void sgemm2DBlocktiling<128, 128, 8, 8, 8>(int, int, int, float, const float *, "
     "const float *, float, float *)", None, None),
    ("sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>", None, None),
    ("gemm_kernel", None, None),
    # Triton's layer-norm tutorial's kernel and a user's own flash attention
    ("_layer_norm_fwd_fused", None, None),
    ("flash_attention_fwd_kernel", None, None),
    # PyTorch's by its namespace, with no trace to name the operator (ncu's pass 1)
    ("void at::vectorized_elementwise_kernel<4, at::FillFunctor<float>, std::array<char *, "
     "1>>(int, T2, T3)", None, catalog.FILL),
    ("void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at::cuda::cub::...>", None,
     catalog.OPERATOR),
    ("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*)", None,
     catalog.ATTENTION),
    ("fused_rope", "mylib::rope", None),                      # the program's own custom op
    # cuBLAS's legacy SGEMM names no library (attorch's regression example, H100): a
    # matrix product launched it; the bias copy addmm launches first stays PyTorch's
    ("void sgemm_largek_lds64<true, false, 5, 5, 4, 4, 4, 34>(float*, float const*, "
     "float const*, int, int, int, int, int, int, float const*, float const*, float, float, "
     "int, int, int*, int*)", "aten::addmm", catalog.GEMM),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
     "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()"
     "() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, "
     "...)", "aten::addmm", catalog.CAST),
    ("sgemm_largek_lds64", "aten::add", catalog.OPERATOR),
])
def test_the_launching_operator_names_who_wrote_a_kernel_its_name_does_not(kernel, operator,
                                                                            library):
    assert kernel_libraries.library(kernel, operator) == library


@pytest.mark.parametrize("library", catalog.XLA)
def test_xla_kernels_are_not_told_to_capture_a_cuda_graph_with_pytorch(library):
    """XLA captures its own launches; "torch.compile(mode="reduce-overhead")" means nothing
    to a JAX program."""
    moves = catalog.caller_moves(library, {"launch_overhead": "", "grid_under_one_wave": ""})
    assert moves and all("torch" not in m.action for m in moves)


def test_a_fused_optimizer_is_not_told_to_fuse_and_clipping_is_not_told_it_is_an_optimizer():
    fused = [m.id for m in catalog.caller_moves(catalog.FUSED_OPTIMIZER, {"bandwidth_bound": ""})]
    clipping = [m.id for m in catalog.caller_moves(catalog.FOREACH, {"bandwidth_bound": ""})]
    assert "fused_optimizer" not in fused and fused == ["optimizer_state_bytes"]
    assert clipping == ["one_pass_over_gradients"]
    assert all(m.changes_precision for m in catalog.caller_moves(catalog.FUSED_OPTIMIZER, {}))


def verdict_with(move_id: str, flags: dict[str, str]) -> Verdict:
    kernel_move = Move(move_id, "up", "remove register spills", "spills", "up", 1.5, "evidence")
    return Verdict(bound="chain", summary="", moves=[kernel_move], evidence=flags)


def test_the_caller_moves_lead_and_the_kernel_level_cause_stays_beside_them():
    verdict = catalog.with_caller_moves(verdict_with("fix_spills", {"chain_bound": ""}),
                                        catalog.ATTENTION)
    assert verdict.moves[0].id == "attention_backend"
    assert verdict.moves[0].gain_from == catalog.CALLER
    assert "remove register spills" in verdict.moves[0].reason        # the cause: why
    assert verdict.moves[-1].id == "fix_spills"                        # still there, after
    assert upside.best_move(verdict).id == "fix_spills"                   # upside: the kernel's


def test_a_library_gemm_in_a_partial_wave_is_told_the_shape_that_fills_whole_waves():
    """The tail effect of a kernel nobody outside NVIDIA can retile: its caller sizes the
    work so the waves come out whole; the kernel-level move (a grid of whole waves) stays."""
    verdict = catalog.with_caller_moves(
        verdict_with("whole_waves", {"partial_wave": "1.5 waves", "compute_bound": ""}),
        catalog.GEMM)
    ids = [m.id for m in verdict.moves]
    assert ids[0] == "whole_waves_shape" and ids[-1] == "whole_waves"
    assert "whole_waves_shape" not in [m.id for m in catalog.caller_moves(catalog.GEMM, {})]


def test_a_precision_trade_comes_after_the_moves_that_keep_precision():
    verdict = catalog.with_caller_moves(verdict_with("fp8_tensor_cores", {}), catalog.GEMM)
    ids = [m.id for m in verdict.moves]
    assert ids.index("gemm_shapes") < ids.index("gemm_fp8")


def test_every_library_kernel_of_a_recorded_profile_leads_with_a_caller_move(specs):
    from test_profile import FIXTURES, H200_PASS1, H200_PASS2
    from rooflint.formats import calibration as calibrations
    from rooflint.formats.gpus import find_spec
    from rooflint.formats.settings import Settings
    kernels = kernel_times.kernel_times(H200_PASS1)
    result = app.profile_result(
        "transformer_block.py", ".", kernels, kernels,
        app.counters_by_identity(kernels, H200_PASS2), find_spec("h200", specs),
        app.device_from(H200_PASS1, "x"),
        calibrations.load(FIXTURES / "h200-calibration-2026-11-22.json"), Settings())
    for v in result.families[0].variants:
        assert v.share.library and v.verdict.moves[0].gain_from == catalog.CALLER, v.name


@pytest.mark.parametrize("library", catalog.REDUCING)
def test_a_reduction_under_one_wave_is_not_promised_a_fuller_gpu_from_a_larger_batch(library):
    """nanoGPT's GammaBetaBackward (24 blocks: 768 features / 32) and a bias gradient's sum
    (6 blocks) sum over the batch: a larger batch does not add blocks."""
    found = [m.id for m in catalog.caller_moves(library, {"grid_under_one_wave": ""})]
    assert found[0] == "split_reduction" and "larger_batch" not in found
    assert kernel_libraries.library(
        "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, "
        "float, 32u, 32u, 64u, false, true>(long, long, float const*, float const*, float "
        "const*, float const*, float*, float*)") == catalog.NORM_GRADIENT


def test_a_forward_upcast_is_told_to_fuse_the_cast_not_to_keep_weights_in_bf16():
    """nanoGPT's logits, cast from bf16 to fp32 for the loss (H100: 1.27 ms a step, 6 % of
    the GPU time), were told to keep the weights in bf16; a weight cast narrows."""
    upcast = [m.id for m in catalog.caller_moves(catalog.CAST, {catalog.FORWARD_UPCAST: ""})]
    weights = [m.id for m in catalog.caller_moves(catalog.CAST, {})]
    assert upcast[0] == "fuse_upcast" and "bf16_weights" not in upcast
    assert weights[0] == "bf16_weights" and "fuse_upcast" not in weights


def test_a_template_max_autotune_chose_is_not_told_to_use_max_autotune():
    """A small MLP under torch.compile(mode="max-autotune-no-cudagraphs") (H100): its GEMM
    template, triton_tem_fused_addmm_gelu_t_0, was told to "tune Inductor's kernels with
    torch.compile(mode="max-autotune")", the mode that had chosen it."""
    template = kernel_times.KernelTime("triton_tem_fused_addmm_gelu_t_0", "(1024, 1, 1)",
                                          [60e-6])
    pointwise = kernel_times.KernelTime("triton_poi_fused_gelu_1", "(8192, 1, 1)", [25e-6])
    chosen = [m.id for m in catalog.caller_moves(catalog.INDUCTOR,
                                                 kernel_libraries.caller_flags(template))]
    assert chosen == ["shape_for_template"]
    assert "autotune_compile" in [m.id for m in catalog.caller_moves(
        catalog.INDUCTOR, kernel_libraries.caller_flags(pointwise))]


@pytest.mark.parametrize("move", catalog.CALLER_MOVES, ids=lambda m: m.id)
def test_every_caller_moves_lead_phrase_is_what_it_asks_for_in_a_few_words(move):
    """The table's note prints an action up to its first colon or parenthesis: the split
    reduction's first wording printed "...; a sum over the batch;"."""
    lead = lead_phrase(move.action)
    assert len(lead) <= 70 and ";" not in lead, lead
