"""Who wrote a profiled kernel (a library, PyTorch, or the program itself), from its name
and the PyTorch operator that launched it, and what the trace tells of its launches that
its caller's moves ask about: a library kernel's verdict leads with the moves its caller
can make (analysis/caller_moves.py, which names each library)."""

from __future__ import annotations

import re

from rooflint.analysis import caller_moves as library_moves
from rooflint.formats.trace_events import ATEN, COLLECTIVE
from rooflint.judge.kernel_times import KernelTime

# Who wrote a kernel, from the PyTorch operator that launched it, where the operator says
# more than the kernel's name: (pattern, plain words). multi_tensor_apply_kernel runs the
# fused optimizers and every foreach operator (gradient clipping's norm and scale among
# them); cuDNN's attention launches helper kernels of other names.
OPERATOR_LIBRARIES = (
    (r"^aten::_fused_(adamw?|sgd|adagrad)_", library_moves.FUSED_OPTIMIZER),
    (r"^aten::_foreach_", library_moves.FOREACH),
    (r"^aten::.*(attention|sdpa|flash)", library_moves.ATTENTION),
)
# ATen's matrix products run cuBLAS (or cuBLASLt): a kernel one launches outside PyTorch's
# namespace is cuBLAS's, whatever it is called (its legacy SGEMM, `sgemm_largek_lds64`,
# names no library and had read as a PyTorch operator's: attorch's regression example).
GEMM_OPERATOR = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear"
                           r"|_addmm_activation|_scaled_mm|_int_mm)$")
# ATen's convolutions run cuDNN: a kernel one launches outside PyTorch's namespace is
# cuDNN's (its layout transposes, nchwToNhwcKernel, among them), a bias gradient's
# reduction PyTorch's own.
CONVOLUTION_OPERATOR = re.compile(r"^aten::(_?convolution|cudnn_convolution\w*|conv\w*"
                                  r"|_convolution_mode|convolution_backward\w*)$")
# cuDNN's convolution kernels: its own namespace and engines, and the xmma / CUTLASS
# implicit GEMMs it ships, named by pass (fprop forward, dgrad the input's gradient, wgrad
# the weights'). They had read as cuBLAS GEMMs (``sm90_xmma_fprop_implicit_gemm_...``
# matched a GEMM's name): a ConvNet was told to shape its GEMMs for cuBLAS's tiles.
CONVOLUTION_NAMES = (r"cudnn|_(fprop|dgrad|wgrad)_|^(fprop|dgrad|wgrad)_|implicit_?gemm"
                     r"|implicit_convolve|convolve_sgemm|winograd|fft2d_")
# Who wrote a kernel, from its name: (pattern, plain words). First match wins. Only names a
# library writes: a program's own kernel called sgemm, flash_attention or layer_norm is
# its own (SGEMM_CUDA's sgemm2DBlocktiling had read as cuBLAS's, and been told to shape
# its GEMM for cuBLAS's tiles).
LIBRARIES = (
    (r"^(triton_|cutlass_)?gemm_fusion", library_moves.XLA_GEMM),
    (r"^(loop|input)_\w*fusion|^fusion(_\d+)?$|^wrapped_\w+$", library_moves.XLA_FUSION),
    (r"^triton_", library_moves.INDUCTOR),
    (COLLECTIVE.pattern, library_moves.NCCL),
    (r"fmha|flash::|sdpa|cudnn\w*(flash|attention)|compute_dot_do_o|convert_dq_to_16bits",
     library_moves.ATTENTION),
    (r"cudnn::bn_|^bn_(fw|bw)_", library_moves.NORM),      # cuDNN's BatchNorm, not a convolution
    # cuDNN's recurrent cells (an nn.LSTM's elemWiseRNNcell, LSTM_elementWise_bp1), whose
    # parameter types name cuDNN: not convolutions (a word language model's LSTM was told to
    # make its tensors channels_last)
    (r"cudnnRNN|elemWiseRNN|\b(LSTM|GRU)_elementWise", library_moves.RNN),
    (CONVOLUTION_NAMES, library_moves.CONVOLUTION),
    (r"^nvjet_|cutlass::Kernel2?<cutlass_\d+_|^cutlass_\d+_|xmma|cublas"
     r"|^(ampere|volta|turing|maxwell|sm\d+)_\w*gemm", library_moves.GEMM),
    (r"cutlass", library_moves.CUTLASS),
    (r"softmax_warp_(forward|backward)", library_moves.SOFTMAX),  # PyTorch's, outside at::
    (r"cupy_", library_moves.CUPY),
)
# PyTorch's own kernels, by name, for a kernel in its namespace (``at::``, which every
# PyTorch kernel name carries, whichever demangler wrote it) or launched by an ATen
# operator. The specific patterns come before the generic element-wise kernels that wrap
# them.
PYTORCH_NATIVE = re.compile(r"\bat::")
PYTORCH_KERNELS = (
    (r"GammaBeta", library_moves.NORM_GRADIENT),
    (r"layer_norm|layernorm|rms_norm|batch_norm|group_norm|RowwiseMoments", library_moves.NORM),
    (r"Gelu|gelu", library_moves.GELU),
    (r"SoftMax|log_softmax|nll_loss|cross_entropy", library_moves.SOFTMAX),
    (r"multi_tensor_apply|lpnorm", library_moves.OPTIMIZER),
    (r"copy_kernel|direct_copy", library_moves.CAST),
    (r"FillFunctor", library_moves.FILL),
    (r"embedding|indexSelect|index_select", library_moves.EMBEDDING),
    (r"distribution_|normal_kernel", library_moves.RANDOM),
    (r"vectorized_elementwise_kernel|elementwise_kernel|unrolled_elementwise"
     r"|CatArrayBatchedCopy", library_moves.ELEMENTWISE),   # a concatenation copies, casts not
    (r"reduce_kernel", library_moves.REDUCTION),
)


def library(kernel: str, operator: str | None = None) -> str | None:
    """Who wrote a kernel: by the operator that launched it (OPERATOR_LIBRARIES), by a
    library's own name for it (LIBRARIES), cuBLAS or cuDNN for a kernel outside PyTorch's
    namespace that a matrix product or a convolution launched (GEMM_OPERATOR,
    CONVOLUTION_OPERATOR), by PyTorch's (PYTORCH_KERNELS) for a
    kernel in PyTorch's namespace or launched by an ATen operator, else PyTorch's for
    either of those; None for the program's own (its Triton or CUDA kernel, a custom
    operator's)."""
    op = operator or ""
    native = bool(PYTORCH_NATIVE.search(kernel))
    return (_first(OPERATOR_LIBRARIES, op) or _first(LIBRARIES, kernel)
            or (library_moves.GEMM if GEMM_OPERATOR.match(op) and not native else None)
            or (library_moves.CONVOLUTION if CONVOLUTION_OPERATOR.match(op) and not native
                else None)
            or (_first(PYTORCH_KERNELS, kernel) or library_moves.OPERATOR
                if native or op.startswith(ATEN) else None))


def is_collective(kernel: str) -> bool:
    """Whether a kernel is a collective, which waits on its peers (COLLECTIVE)."""
    return bool(COLLECTIVE.search(kernel))


def _first(patterns: tuple[tuple[str, str], ...], text: str) -> str | None:
    return next((words for pattern, words in patterns if re.search(pattern, text)), None)


# TorchInductor names the GEMM templates it generates triton_tem_*; only max-autotune
# chooses a template over the library's GEMM, having timed both.
INDUCTOR_TEMPLATE = re.compile(r"^triton_tem_")


def caller_flags(k: KernelTime) -> dict[str, str]:
    """What the trace and the kernel's name tell of its launches that its caller's moves
    ask about."""
    flags = {}
    if k.upcasts:
        flags[library_moves.FORWARD_UPCAST] = "its forward copies write a wider dtype than " \
            "they read"
    if INDUCTOR_TEMPLATE.match(k.kernel):
        flags[library_moves.MAX_AUTOTUNED] = "a GEMM template max-autotune chose"
    return flags
