"""What the caller of a library kernel can change, as data: the moves of `rooflint profile`
for the kernels its user did not write.

Nobody outside NVIDIA can change the registers of cuDNN's attention backward, but the
program that calls it can choose another attention backend, fuse what surrounds it, keep
its weights in bf16, replay its step as a CUDA graph. Each move here names the libraries
it applies to (the plain words judge/kernel_libraries.py gives them), the evidence flags
that must hold (``requires``, from evidence.py) and the text to print. The kernel-level
verdict stays beside it: the cause says why, the caller's move says what to do.

The first move of a library whose flags hold is its kernel's top move. Every library has
a move with no flags, so every library kernel gets one (tests/core/test_caller_moves.py checks
this over every library and every verdict).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from rooflint.analysis.diagnose import Move, Verdict
from rooflint.analysis.evidence import AT_ROOF_FLAG, Evidence
from rooflint.analysis.moves import ruled_out

# The libraries by the words judge/kernel_libraries.py gives them.
GEMM = "cuBLAS GEMM"
CONVOLUTION = "cuDNN convolution"
RNN = "cuDNN recurrent cell (LSTM, GRU)"
CUTLASS = "CUTLASS kernel"      # a CUTLASS template the program or a package instantiated
ATTENTION = "attention (cuDNN / flash)"
NORM = "normalisation (PyTorch)"
NORM_GRADIENT = "normalisation's weight gradient (PyTorch)"
GELU = "GELU (PyTorch element-wise)"
SOFTMAX = "softmax / loss (PyTorch)"
ELEMENTWISE = "PyTorch element-wise"
CAST = "cast or copy (PyTorch)"
FILL = "fill (PyTorch)"
REDUCTION = "PyTorch reduction"
RANDOM = "random numbers (PyTorch)"
OPTIMIZER = "optimizer (PyTorch)"
FUSED_OPTIMIZER = "fused optimizer (PyTorch)"
FOREACH = "foreach (PyTorch)"
EMBEDDING = "embedding (PyTorch)"
INDUCTOR = "Triton (torch.compile)"
NCCL = "NCCL collective"
CUPY = "CuPy kernel"
XLA_FUSION = "XLA fusion (JAX)"
XLA_GEMM = "XLA GEMM fusion (JAX)"
OPERATOR = "PyTorch operator"   # an ATen operator's kernel no other words fit

ELEMENT_WISE = (NORM, NORM_GRADIENT, GELU, SOFTMAX, ELEMENTWISE, CAST, FILL, REDUCTION,
                EMBEDDING)
# Kernels whose blocks may span what they sum, not the batch: a weight or bias gradient
# is a sum over the batch, and its grid stays the features' whatever the batch.
REDUCING = (NORM_GRADIENT, REDUCTION)
# what the program can capture in a CUDA graph
CAPTURABLE = (GEMM, CONVOLUTION, RNN, CUTLASS, ATTENTION, *ELEMENT_WISE, RANDOM, OPTIMIZER,
              FUSED_OPTIMIZER, FOREACH, INDUCTOR, NCCL, CUPY, OPERATOR)
XLA = (XLA_FUSION, XLA_GEMM)     # XLA captures its own launches in CUDA graphs already
EVERY_LIBRARY = (*CAPTURABLE, *XLA)


# Flags of the profiler's trace or the kernel's name, not of the counters
# (judge/kernel_libraries.caller_flags).
FORWARD_UPCAST = "forward_upcast"
MAX_AUTOTUNED = "max_autotuned"     # a GEMM template Inductor's max-autotune chose

CALLER = "caller"     # a verdict Move's gain_from for these: no estimate of their own


@dataclass(frozen=True)
class CallerMove:
    id: str
    direction: str                      # on the roofline, as moves.MoveRule's
    libraries: tuple[str, ...]
    action: str
    requires: tuple[str, ...] = ()      # evidence flags that must all hold
    unless: tuple[str, ...] = ()        # evidence flags that must all be absent
    changes_precision: bool = False     # trades accuracy: the user must judge it

    def applies(self, library: str, flags: dict[str, str]) -> bool:
        """Its library's, its flags holding; never a move up for a kernel at its roof
        (evidence.AT_ROOF_FLAG): a cuBLAS GEMM at 102 % of its roof is not reshaped."""
        return (library in self.libraries and all(f in flags for f in self.requires)
                and not any(f in flags for f in self.unless)
                and not (self.direction == "up" and AT_ROOF_FLAG in flags))


CALLER_MOVES: tuple[CallerMove, ...] = (
    CallerMove("cuda_graphs", "up", CAPTURABLE, "replay the step as a CUDA graph "
               "(torch.compile(mode=\"reduce-overhead\"), torch.cuda.graphs): its launches "
               "cost more than its work", requires=("launch_overhead",)),
    CallerMove("split_reduction", "up", REDUCING, "a reduction split across blocks "
               "(torch.compile writes one): a sum over the batch, as a weight or bias gradient, "
               "keeps its grid whatever the batch, so a larger batch lengthens each block "
               "instead of filling the GPU", requires=("grid_under_one_wave",)),
    CallerMove("larger_batch", "up", (GEMM, CONVOLUTION, RNN, CUTLASS, ATTENTION, INDUCTOR,
                                      OPERATOR, *XLA,
                                      *(x for x in ELEMENT_WISE if x not in REDUCING)),
               "a larger batch, "
               "or fewer and larger calls: this launch leaves SMs idle",
               requires=("grid_under_one_wave",)),
    CallerMove("fuse_upcast", "right", (CAST,), "fuse the cast into the operator that reads it "
               "(torch.compile; a fused or chunked cross-entropy that reads the bf16 logits): "
               "autocast runs that operator in fp32, so a wider copy of its input is written "
               "and read once more every step", requires=(FORWARD_UPCAST,)),
    CallerMove("bf16_weights", "right", (CAST,), "keep the weights in bf16 so autocast stops "
               "casting them every step (model.to(torch.bfloat16) with fp32 master weights in the "
               "optimizer), or torch.compile to fold the casts into their consumers",
               unless=(FORWARD_UPCAST,)),
    CallerMove("fuse_with_compile", "right", ELEMENT_WISE, "fuse the element-wise chain around "
               "it with torch.compile: one kernel reads and writes the tensor once instead of once "
               "per operator"),
    CallerMove("set_to_none", "right", (FILL,), "no fills to overwrite: "
               "optimizer.zero_grad(set_to_none=True), and no torch.zeros you then overwrite"),
    CallerMove("whole_waves_shape", "up", (GEMM, CONVOLUTION, CUTLASS, ATTENTION, INDUCTOR,
                                           XLA_GEMM),
               "size the batch or sequence so the kernel's tiles fill whole waves: its last "
               "wave runs part-empty while the other SMs wait", requires=("partial_wave",)),
    CallerMove("gemm_shapes", "up", (GEMM,), "shape the GEMM for cuBLAS's tiles: dimensions "
               "(batch x sequence, hidden, vocabulary) padded to multiples of 128, bf16 "
               "operands, and a batch large enough for a whole number of waves"),
    CallerMove("gemm_tf32", "raise-the-roof", (GEMM,), "TF32 tensor cores for the FP32 "
               "matmuls: torch.set_float32_matmul_precision(\"high\") (PyTorch), CUPY_TF32=1 "
               "(CuPy), CUBLAS_TF32_TENSOR_OP_MATH (cuBLAS): a 10-bit mantissa in, FP32 "
               "accumulation, where the accuracy allows", requires=("fp32_data",),
               changes_precision=True),
    CallerMove("gemm_fp8", "raise-the-roof", (GEMM,), "fp8 GEMMs (torch._scaled_mm, "
               "Transformer Engine) where the accuracy allows: twice the bf16 tensor roof",
               changes_precision=True),
    CallerMove("conv_layout", "up", (CONVOLUTION,), "channels_last tensors in bf16 "
               "(model.to(memory_format=torch.channels_last), autocast) and channel counts "
               "that are multiples of 8, so cuDNN picks its tensor-core kernels without "
               "transposing; torch.backends.cudnn.benchmark=True to time its algorithms once"),
    CallerMove("rnn_cells", "up", (RNN,), "a larger batch, or bf16 under autocast, for the "
               "recurrent layers (nn.LSTM, nn.GRU): cuDNN runs their cells one time step at a "
               "time, a small kernel each, whose cost is its launch and latency, not its "
               "bytes; fewer, wider steps amortise it"),
    CallerMove("conv_fp8", "raise-the-roof", (CONVOLUTION,), "fp8 convolutions (Transformer "
               "Engine, TensorRT) where the accuracy allows: twice the bf16 tensor roof",
               changes_precision=True),
    CallerMove("cutlass_tile", "up", (CUTLASS,), "another tile, cluster or schedule for "
               "the CUTLASS template (the CUTLASS profiler times them all), or cuBLAS for a "
               "plain GEMM: the kernel is an instance of CUTLASS's "
               "template, its parameters the caller's choice"),
    CallerMove("attention_backend", "up", (ATTENTION,), "try the other SDPA backends "
               "(torch.nn.attention.sdpa_kernel: FLASH_ATTENTION, CUDNN_ATTENTION, "
               "EFFICIENT_ATTENTION) and a head size that is a multiple of 64"),
    CallerMove("fused_optimizer", "up", (OPTIMIZER,), "the fused optimizer (AdamW(fused=True)), or "
               "foreach; fewer, larger parameter tensors"),
    CallerMove("one_pass_over_gradients", "up", (FOREACH,), "one pass over the gradients instead "
               "of one per foreach operator: the fused optimizer (AdamW(fused=True)) for a "
               "foreach update, and gradient clipping compiled with the step (torch.compile) "
               "rather than a norm and a scale of their own"),
    CallerMove("optimizer_state_bytes", "right", (FUSED_OPTIMIZER,), "fewer optimizer bytes per "
               "parameter: the optimizer is fused already; its state in bf16, or an 8-bit "
               "optimizer (bitsandbytes' AdamW8bit), where the accuracy allows",
               changes_precision=True),
    CallerMove("fewer_draws", "right", (RANDOM,), "draw random numbers once per step in one call "
               "(or inside a fused kernel: dropout under torch.compile)"),
    CallerMove("autotune_compile", "up", (INDUCTOR,), "tune Inductor's kernels with "
               "torch.compile(mode=\"max-autotune\"): a kernel the tuner cannot help is a "
               "candidate for a hand-written one", unless=(MAX_AUTOTUNED,)),
    CallerMove("shape_for_template", "up", (INDUCTOR,), "shape the GEMM for the template "
               "max-autotune chose: it timed this one fastest of its choices already, so "
               "dimensions padded to multiples of 128 and a batch that fills whole waves; "
               "a template the tuner cannot bring nearer its roof is a candidate for a "
               "hand-written kernel", requires=(MAX_AUTOTUNED,)),
    CallerMove("overlap_collective", "up", (NCCL,), "overlap the collective with compute (DDP's "
               "bucket size, FSDP's prefetch) and make fewer, larger ones"),
    CallerMove("compile_operator", "right", (OPERATOR,), "torch.compile, or another operator "
               "to the same result: the kernel is PyTorch's, not the program's; torch.compile "
               "writes its own kernel for many operators and fuses it with its neighbours"),
    CallerMove("jit_whole_step", "right", (XLA_FUSION,), "jit the whole step (forward, "
               "backward and update in one jax.jit) and keep activations in bf16: the kernel "
               "is XLA's, fused from the program's jnp code, and XLA fuses only inside one jit"),
    CallerMove("xla_dot_shapes", "up", (XLA_GEMM,), "shape the dot for the tensor cores: bf16 "
               "operands (fp32 accumulation through preferred_element_type) and dimensions "
               "padded to multiples of 128, from which XLA's autotuner picks the tile"),
    CallerMove("fuse_cupy", "right", (CUPY,), "fuse the element-wise chain into one kernel "
               "(cupy.fuse, an ElementwiseKernel) so the array crosses memory once"),
)


def caller_moves(library: str | None, flags: dict[str, str]) -> list[CallerMove]:
    """The moves a library kernel's caller can make, the most specific first; none for a
    kernel its user wrote (no library)."""
    if library is None:
        return []
    return [m for m in CALLER_MOVES if m.applies(library, flags)]


def with_caller_moves(verdict: Verdict, library: str | None,
                      trace_flags: Mapping[str, str] = MappingProxyType({})) -> Verdict:
    """``verdict`` with its caller's moves first (precision trades after the others), chosen
    on its evidence and on what the profiler's trace knows of the kernel's launches
    (``trace_flags``): the kernel-level moves stay after them, and each caller move's
    reason names the kernel-level cause it answers."""
    flags = {**verdict.evidence, **trace_flags}
    not_these = ruled_out(Evidence(verdict.bound, flags))
    found = sorted((m for m in caller_moves(library, flags) if m.id not in not_these),
                   key=lambda m: m.changes_precision)
    if not found:
        return verdict
    return replace(verdict, moves=[_answering(m, library, verdict.moves) for m in found]
                   + verdict.moves)


def _answering(move: CallerMove, library: str, kernel_moves: list[Move]) -> Move:
    """The caller's move, its reason the first kernel-level move in the same direction
    (a reshape answers a move up, fp8 GEMMs the kernel's fp8 move), so the title and the
    reason are one move; with none, only that the kernel is not the program's code."""
    cause = next((k for k in kernel_moves if k.direction == move.direction), None)
    why = (f"{library}: not the program's code; in the kernel: {cause.action}" if cause
           else f"{library}: not the program's code")
    return Move(move.id, move.direction, move.action, why, cause.expect if cause else "",
                gain_from=CALLER)
