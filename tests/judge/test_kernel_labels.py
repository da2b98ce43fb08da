"""Who wrote a profiled kernel and what it does, on kernel names recorded from real
programs (examples/profile/*.json, H100 and H200) and on cuDNN's convolution kernels as
its engines name them: a ConvNet's convolutions had read "cuBLAS GEMM"."""

from __future__ import annotations

import pytest

from rooflint.analysis import caller_moves as catalog
from rooflint.formats.results import read_result
from rooflint.formats.trace_events import Origin
from rooflint.judge.kernel_libraries import library
from rooflint.judge.distinct_names import unique_names
from rooflint.judge.kernel_names import what_it_does
from rooflint.judge.kernel_times import KernelTime

from edges import REPO

CUDNN_FPROP = ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64"
               "_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn")
CUDNN_DGRAD = ("sm80_xmma_dgrad_implicit_gemm_indexed_wo_smem_bf16bf16_bf16f32_f32_nhwckrsc_nhwc"
               "_tilesize128x16x64_stage4_warpsize4x1x1_g1_tensor16x8x16_kernel")
CUDNN_WGRAD = ("sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64"
               "_warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn")
CUBLAS_CUTLASS = ("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>"
                  "(cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1::Params)")


@pytest.mark.parametrize("kernel, operator, words", [
    (CUDNN_FPROP, "aten::cudnn_convolution", catalog.CONVOLUTION),
    (CUDNN_FPROP, None, catalog.CONVOLUTION),
    (CUDNN_DGRAD, "aten::convolution_backward", catalog.CONVOLUTION),
    (CUDNN_WGRAD, None, catalog.CONVOLUTION),
    ("void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, "
     "false, true, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t"
     "<float>, __nv_bfloat16 const*, __nv_bfloat16*)", None, catalog.CONVOLUTION),
    ("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>"
     "(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned "
     "long long, int, float, float, int, float const*, float const*, bool, int, int)", None,
     catalog.CONVOLUTION),
    # a kernel of any name a convolution launched outside PyTorch's namespace is cuDNN's;
    # its bias gradient's reduction is PyTorch's
    ("cutlass__5x_cudnn_kernel", "aten::cudnn_convolution", catalog.CONVOLUTION),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(x)",
     "aten::convolution_backward", catalog.REDUCTION),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(float)",
     "aten::cudnn_batch_norm", catalog.NORM),
    ("void at::native::batch_norm_collect_statistics_channels_last_kernel<at::native::"
     "(anonymous namespace)::Var, c10::BFloat16, float, 4>(c10::BFloat16 const*)", None,
     catalog.NORM),
    # recorded (the word language model's nn.LSTM, H200): cuDNN's recurrent cells, whose
    # parameter types name cuDNN, are not convolutions; the GEMMs cuDNN runs for them are
    # cuBLAS's
    ("void elemWiseRNNcell<float, float, float, (cudnnRNNMode_t)2, (cudnnRNNBiasMode_t)2>(int,"
     " int, int, int, int, bool, float const*, float*, cudnnRNNClipMode_t, cudnnNanPropagation_t"
     ", float, float)", "aten::_cudnn_rnn", catalog.RNN),
    ("void LSTM_elementWise_bp1<float, float, float>(int, int, float*, float*, int, int, "
     "cudnnRNNClipMode_t, cudnnNanPropagation_t, float, float)", "aten::_cudnn_rnn_backward",
     catalog.RNN),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>(cutlass_80_"
     "tensorop_s1688gemm_64x64_32x6_nn_align4::Params)", "aten::_cudnn_rnn_backward",
     catalog.GEMM),
    # recorded (examples/profile): cuBLAS's GEMMs, whatever they are called
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", "aten::addmm", catalog.GEMM),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x256x32_warpgroupsize2x1x1_execute"
     "_segment_k_off_kernel__5x_cublas", None, catalog.GEMM),
    (CUBLAS_CUTLASS, "aten::mm", catalog.GEMM),
    ("void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, true, 1>"
     "(int, int, long, float*)", "aten::addmm", catalog.GEMM),
    # a CUTLASS template the program or a package instantiated is not cuBLAS's
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
     "int, int>, cutlass::gemm::collective::CollectiveMma<>>>(x)", None, catalog.CUTLASS),
    # recorded: cuDNN's attention stays attention, though cuDNN's and a forward pass's
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1"
     "_cga1x1x1_kernel0_0", "aten::_scaled_dot_product_cudnn_attention", catalog.ATTENTION),
    ("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*, void const*)",
     None, catalog.ATTENTION),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", None,
     catalog.NCCL),
    ("triton_red_fused__to_copy_native_layer_norm_backward_view_2", None, catalog.INDUCTOR),
    # the program's own
    ("softmax_forward_kernel7(float*, float const*, int, int)", None, None),
    ("void sgemm2DBlocktiling<128, 128, 8, 8, 8>(int, int, int, float, float const*)", None,
     None),
    ("my_conv2d_kernel", None, None),
])
def test_each_kernel_is_labelled_by_who_wrote_it(kernel, operator, words):
    assert library(kernel, operator) == words


RECORDED = REPO / "examples" / "profile"


@pytest.mark.parametrize("recorded, cast, words", [
    ("vectorized_elementwise_kernel<GeluCUDAKernelImpl>", None, "GELU"),
    ("vectorized_elementwise_kernel<GeluBackwardCUDAKernelImpl>", None, "GELU backward"),
    ("layer_norm_grad_input_kernel_vectorized<false>", None, "LayerNorm backward (input)"),
    ("GammaBetaBackwardCUDAKernelTemplate<u>", None, "LayerNorm backward (weights)"),
    ("vectorized_layer_norm_kernel<false>", None, "LayerNorm"),
    # the logits' up-cast: the trace's copy says from what
    ("unrolled_elementwise_kernel<direct_copy_kernel_cuda>@6144", ("c10::BFloat16", "float"),
     "cast bf16→fp32"),
    ("unrolled_elementwise_kernel<direct_copy_kernel_cuda>@6144", None, "cast to fp32"),
    ("vectorized_elementwise_kernel<bfloat16_copy_kernel_cuda>@3072", None, "cast fp32→bf16"),
    ("elementwise_kernel<gpu_kernel_impl_nocast>", None, "copy fp32"),
    ("cunn_SoftMaxForwardReg<LogSoftMaxForwardEpilogue>", None, "log-softmax"),
    ("cunn_SoftMaxBackwardSmem<LogSoftMaxBackwardEpilogue>", None, "log-softmax backward"),
    ("multi_tensor_apply_kernel<FusedOptimizerTensorListMetadata>", None,
     "fused optimizer step"),
    ("vectorized_elementwise_kernel<FillFunctor>", None, "fill"),
    ("CatArrayBatchedCopy_vectorized<OpaqueType>", None, "concatenate"),
    ("convert_dq_to_16bits<true>", None, "attention backward"),
    # a program's own kernels and Triton's keep their names
    ("softmax_forward_kernel7@8192", None, None),
    ("triton_poi_fused__to_copy_5@2304", None, None),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", None, None),
])
def test_a_recorded_kernel_is_named_by_what_it_does(recorded, cast, words):
    kernel = next(v.share.kernel for path in sorted(RECORDED.glob("*.json"))
                  for f in read_result(path).families for v in f.variants
                  if v.name == recorded and v.share)
    assert what_it_does(kernel, cast) == words


@pytest.mark.parametrize("kernel, words", [
    (CUDNN_FPROP, "convolution"), (CUDNN_DGRAD, "convolution backward (input)"),
    (CUDNN_WGRAD, "convolution backward (weights)"),
])
def test_cudnn_convolutions_are_named_by_their_pass(kernel, words):
    assert what_it_does(kernel) == words


def test_kernels_sharing_a_name_are_told_apart_by_the_line_that_launched_them():
    """The logits' up-cast and the loss's had read ``…a>@804864`` and ``…a>@6144``."""
    cast = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda"
            "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1}, "
            "at::native::memory::LoadWithCast<1> >(int)")
    kernels = [KernelTime(cast, f"({blocks}, 1, 1)", [1e-6], cast=("c10::BFloat16", "float"),
                          origins=[Origin("aten::copy_", f"train.py:{line} in forward")])
               for blocks, line in ((804864, 80), (6144, 52))]
    assert set(unique_names(kernels).values()) == {"cast bf16→fp32 at train.py:80",
                                                   "cast bf16→fp32 at train.py:52"}


@pytest.mark.parametrize("seed", range(20))
def test_every_shown_name_fits_and_is_its_own_whatever_the_names(seed):
    """Names of 1-400 characters, unicode and escapes, many alike: each is shown in the
    table's width and no two alike (a 150-character cuDNN name that collided had been
    shown whole, leaving a ConvNet's table its kernel column only)."""
    import random
    from rooflint.output.terminal import NAME_WIDTH, shortened_names
    rng = random.Random(seed)
    alphabet = "ab_<>:()[]é→漢\\x1b\\n" + "x" * 10
    stem = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300)))
    names = list(dict.fromkeys(
        stem + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 100))) + stem[-30:]
        for _ in range(rng.randint(2, 12))))
    shown = shortened_names(names)
    assert all(len(text) <= NAME_WIDTH for text in shown.values())
    assert len(set(shown.values())) == len(names)
