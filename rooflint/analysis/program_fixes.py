"""What the program can change, as data: the fixes `rooflint profile` rolls a program's
kernels up into (judge/program_fixes.py), beside the caller's moves of one kernel
(caller_moves.py).

A user asks what to change in the program, not how each kernel is doing. A fix here
matches a group of kernels (by the PyTorch operators that launched them, their kernel
names, the library words judge/kernel_libraries.py gives them; or, for the element-wise
kernels an unfused module is made of, the function their source line is in: a Llama's
RMSNorm is ten multiplies, adds, casts and sums in ``LlamaRMSNorm.forward``), names the
change in the user's words, says why it helps, and how its saving is estimated
(:class:`Saving`). The
first entry that matches a group is its fix (a compiled program's Triton kernels are fused
already, so only the loss and attention entries come before theirs; the program's own
kernels, whatever their names, get their own moves); a group no entry matches is given the
reason why none does (judge/program_fixes.py; tests/judge/test_program_fixes.py checks every
committed profile). Each kernel is also given its kind of GPU time (:func:`kind_of`), for the
program's summary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from rooflint.analysis import caller_moves as library_moves


class Saving(Enum):
    """How a fix's saving is estimated from its kernels (judge/program_fixes.py does it)."""

    FUSION = "fusion"            # the group's time less its remaining bytes at the DRAM roof
    REMOVAL = "removal"          # the kernels go: their whole time
    ROOF_DISTANCE = "roof distance"   # each kernel's own upside (judge/upside.py), summed
    RAISE_ROOF = "raise the roof"     # kernels at their roof: half their time (a roof 2x higher)
    # the job's communication fixes (judge/program_fixes.communication_fixes), from the
    # exposed time of the rank that waits least (formats/trace_timing.Communication):
    EXPOSED = "exposed, at most the compute"   # overlapped with compute: all of it, up to
    #                                            the compute it can hide behind
    EXPOSED_BELOW_ROOF = "exposed below the roof"   # the collectives at their roof: its share
    #                                                 of their time below the roof
    EXPOSED_ONCE = "once-a-step work, once a batch"   # all but one in ACCUMULATION of the
    #      step's work done once whatever its batch: its host's outside the forward and
    #      backward passes, or its gradients' reductions exposed and its optimizer's kernels
    NONE = "none"                # nothing the program can change is estimated


COMMUNICATION = (Saving.EXPOSED, Saving.EXPOSED_BELOW_ROOF, Saving.EXPOSED_ONCE)
ACCUMULATION = 4      # micro-steps a step the accumulation fix is estimated for


class Roof(Enum):
    """Which kernels an entry takes, by how near their nearest roof they are."""

    ANY = "any"
    AT_ROOF = "at roof"          # evidence.AT_ROOF of the nearest roof or more
    BELOW_ROOF = "below roof"


@dataclass(frozen=True)
class ProgramFix:
    """One change to the program, and the kernels it is for: a group matches when any of its
    operators matches ``operators``, any kernel name ``kernels`` or its library is in
    ``libraries``, and its kernels are as near their roof as ``roof`` asks. ``action`` is
    None for an entry that says why there is no fix (``why``)."""

    id: str
    action: str | None
    why: str
    saving: Saving
    operators: str | None = None      # a pattern over ATen operators and autograd nodes
    kernels: str | None = None        # a pattern over kernel names
    libraries: tuple[str | None, ...] = ()   # None: the program's own kernels
    roof: Roof = Roof.ANY
    takes_its_lines: bool = False     # claims the element-wise kernels of its source lines
    functions: str | None = None      # claims the element-wise kernels of lines in these
    head: str | None = None           # claims the GEMM that feeds it: in these functions, or
    #                                   just above a line it takes, in the same function
    changes_precision: bool = False   # trades accuracy: the user must judge it
    by_compile: bool = False          # torch.compile makes it (compare checks them together)
    program: bool = False             # for the program's time, not a group of kernels
    # A pattern over a kernel's precision and name (``bf16-tensor sm90_xmma_fprop_...``):
    # the kernels in which the change is made already, left out of its saving (a ResNet-50
    # in channels_last and bf16 had been told to make it, for 2.8 ms a step).
    made: str | None = None
    collectives: str | None = None    # a communication fix's: a pattern over the job's placed
    #                                   collectives ("all-reduce float32"), the ones it acts
    #                                   on; where it is given, the fix is for a job whose
    #                                   placed collectives' time is mostly in them (but
    #                                   accumulation's, for any job's gradient reductions)

    def made_in(self, precision: str, kernel: str) -> bool:
        """Whether the change is made already in a kernel of this precision and name."""
        return self.made is not None and re.search(self.made, f"{precision} {kernel}") is not None

    def matches(self, operators: list[str], kernels: list[str], library: str | None) -> bool:
        """Whether a group of kernels, by its operators, names and library, is this fix's."""
        return not self.program and (
            (self.operators is not None and any(re.search(self.operators, o) for o in operators))
            or (self.kernels is not None and any(re.search(self.kernels, k) for k in kernels))
            or library in self.libraries)


FUSED_BY_COMPILE = (library_moves.GELU, library_moves.ELEMENTWISE, library_moves.FILL,
                    library_moves.REDUCTION, library_moves.RANDOM, library_moves.EMBEDDING,
                    library_moves.SOFTMAX, library_moves.OPERATOR)

PROGRAM_FIXES: tuple[ProgramFix, ...] = (
    ProgramFix("autotuning_apart", "measure autotuning apart from the steps (warm up past "
               "cudnn.benchmark's and the autotuners' trials before the timed region)",
               "trial launches are the tuner's work, not the step's", Saving.REMOVAL,
               kernels=r"stream_executor::gpu::|RedzoneAllocatorKernel|xla_fp_comparison"),
    ProgramFix("own_kernel", "the kernel's own moves (its row in the detail below)",
               "the program wrote this kernel: its moves are kernel-level", Saving.ROOF_DISTANCE,
               libraries=(None,)),
    ProgramFix("fused_linear_cross_entropy", "a fused linear cross-entropy (Liger's "
               "LigerFusedLinearCrossEntropyLoss, or torch.compile of the head and loss)",
               "the LM head's logits are written, up-cast, soft-maxed and read again in fp32; "
               "a fused kernel never materialises them", Saving.FUSION,
               operators=r"log_softmax|nll_loss|cross_entropy",
               kernels=r"log_softmax|nll_loss|cross_entropy", takes_its_lines=True,
               functions=r"(?i)loss|cross_?entropy", head=r"ForCausalLM\.forward$",
               by_compile=True),
    ProgramFix("attention_backend", "another SDPA backend (torch.nn.attention.sdpa_kernel) "
               "or a head size that is a multiple of 64",
               "attention kernels are the library's: the caller chooses which and at what shape",
               Saving.ROOF_DISTANCE, operators=r"attention|sdpa|flash",
               libraries=(library_moves.ATTENTION,)),
    ProgramFix("max_autotune", "torch.compile(mode=\"max-autotune\") for the compiled "
               "kernels", "Inductor's default kernels are not tuned to this GPU",
               Saving.ROOF_DISTANCE, libraries=(library_moves.INDUCTOR,)),
    ProgramFix("jit_whole_step", "jit the whole step in one jax.jit", "XLA fuses only inside "
               "one jit", Saving.ROOF_DISTANCE, libraries=(library_moves.XLA_FUSION,)),
    ProgramFix("fused_normalisation", "a fused normalisation (Apex's or Liger's fused "
               "LayerNorm/RMSNorm, BatchNorm folded with its ReLU) or torch.compile",
               "eager normalisation reads and writes the activations in several kernels "
               "(statistics, normalise, weight gradients); one fused pass moves them once",
               Saving.FUSION, operators=r"layer_norm|rms_norm|batch_norm|group_norm|instance_norm",
               kernels=r"layer_norm|layernorm|rms_norm|rmsnorm|batch_norm|batchnorm|GammaBeta",
               libraries=(library_moves.NORM, library_moves.NORM_GRADIENT),
               functions=r"(?i)(rms|layer|batch|group|instance)_?norm", by_compile=True),
    ProgramFix("bf16_parameters", "keep the parameters in bf16 (fp32 master weights in the "
               "optimizer), or torch.compile to fold autocast's casts into their consumers",
               "autocast casts the fp32 weights (and their gradients back) every step: "
               "copies the program need not make", Saving.REMOVAL,
               operators=r"^aten::(copy_|to|_to_copy)$",
               kernels=r"direct_copy|bfloat16_copy|copy_kernel|^triton_\w+_fused__to_copy_\d+$",
               libraries=(library_moves.CAST,), by_compile=True),
    ProgramFix("fused_optimizer", "the fused optimizer (AdamW(fused=True)) or foreach, "
               "fewer and larger parameter tensors",
               "one kernel per parameter tensor and operator reads the optimizer state again "
               "and again", Saving.ROOF_DISTANCE, operators=r"_foreach_|_fused_(adam|sgd)|adam",
               kernels=r"multi_tensor_apply|lpnorm",
               libraries=(library_moves.OPTIMIZER, library_moves.FUSED_OPTIMIZER,
                          library_moves.FOREACH)),
    ProgramFix("convolution_shapes", "shape the convolutions for cuDNN: channels_last, "
               "bf16, channel counts in multiples of 8 (a 3-channel stem's input padded to 4)",
               "cuDNN's convolutions run below their roof at these shapes and layouts",
               Saving.ROOF_DISTANCE,
               operators=r"convolution", kernels=r"conv|implicit_gemm|wgrad|dgrad",
               libraries=(library_moves.CONVOLUTION,),
               # on a half-precision tensor path and not on NCHW tensors, nor a layout
               # transform or the padding of a stem's channels (cuDNN's own kernels for
               # what the program has not changed)
               made=r"^(bf16|fp16|fp8)-tensor (?!.*(?i:nchw|transform|padding))"),
    ProgramFix("gemm_fp8", "fp8 GEMMs (torch._scaled_mm, Transformer Engine) where the "
               "accuracy allows", "the GEMMs are at their roof: only a higher roof saves more",
               Saving.RAISE_ROOF, libraries=(library_moves.GEMM, library_moves.XLA_GEMM,
                                             library_moves.CUTLASS),
               roof=Roof.AT_ROOF, changes_precision=True),
    ProgramFix("gemm_shapes", "shape the GEMMs for the tensor cores: dimensions in "
               "multiples of 128, bf16 operands, a batch that fills whole waves",
               "the GEMMs run below their roof at these shapes", Saving.ROOF_DISTANCE,
               libraries=(library_moves.GEMM, library_moves.XLA_GEMM)),
    ProgramFix("compile_elementwise", "torch.compile the chain (GELU, adds, multiplies, "
               "dropout, reductions): one kernel per chain", "each eager operator reads and "
               "writes the whole tensor; fused, the chain moves it once", Saving.FUSION,
               operators=r"gelu|silu|relu|add|mul|dropout|sum|mean|fill|embedding|softmax",
               libraries=FUSED_BY_COMPILE, by_compile=True),
    ProgramFix("cuda_graphs", "CUDA graphs for the step (torch.compile(mode="
               "\"reduce-overhead\"), torch.cuda.graphs), or fewer, larger kernels",
               "the GPU waits between kernels on the host's launches; a graph launches the "
               "step's kernels at once", Saving.NONE, program=True),
    ProgramFix("accumulate_gradients", f"accumulate the gradients over {ACCUMULATION} "
               f"micro-steps (DDP's no_sync(), FSDP2's set_requires_gradient_sync(False)) "
               f"and all-reduce them once: a {ACCUMULATION}x larger batch a step, which the "
               f"training must allow",
               "the gradients cross the interconnect, and the optimizer steps, once a step "
               "whatever its batch: accumulated, once for several batches",
               Saving.EXPOSED_ONCE, program=True, collectives=r"^(all-reduce|reduce-scatter) "),
    ProgramFix("larger_buckets", "larger gradient buckets (DDP's bucket_cap_mb, 25 MB by "
               "default; a sharded model's fully_shard over groups of layers), fewer and "
               "larger collectives",
               "the collectives run below the interconnect's roof at these sizes: a call's "
               "fixed cost and a ring's start weigh more on a small one",
               Saving.EXPOSED_BELOW_ROOF, program=True,
               collectives=r"^(all-reduce|reduce-scatter|all-gather) "),
    ProgramFix("overlap_collectives", "overlap the all-gathers with compute (FSDP2's "
               "set_modules_to_forward_prefetch and set_modules_to_backward_prefetch, FSDP1's "
               "forward_prefetch, ZeRO-3's prefetch bucket size)",
               "a sharded model's layers wait for their parameters' all-gather: gathered "
               "ahead, beside the layer before", Saving.EXPOSED, program=True,
               collectives=r"^all-gather "),
    ProgramFix("fuse_cupy", "fuse the element-wise chain (cupy.fuse, an ElementwiseKernel)",
               "each CuPy operator is a kernel of its own", Saving.FUSION,
               libraries=(library_moves.CUPY,)),
)


def fix_for(operators: list[str], kernels: list[str], library: str | None,
            at_roof: bool) -> ProgramFix | None:
    """The first fix a group of kernels matches, its kernels at their roof or not; None
    where no entry does (a group the caller names the reason for)."""
    wanted = {Roof.ANY, Roof.AT_ROOF if at_roof else Roof.BELOW_ROOF}
    return next((f for f in PROGRAM_FIXES
                 if f.roof in wanted and f.matches(operators, kernels, library)), None)


FIXES_BY_ID = {f.id: f for f in PROGRAM_FIXES}


class Kind(Enum):
    """The kinds of GPU time the program's summary adds up."""

    GEMM = "GEMM / convolution"
    ATTENTION = "attention"
    RECURRENT = "recurrent cells"
    NORMALISATION = "normalisation"
    ELEMENT_WISE = "element-wise"
    CASTS = "casts and copies"
    REDUCTIONS = "reductions, softmax, loss"
    OPTIMIZER = "optimizer"
    COMMUNICATION = "communication"
    OTHER = "other"


# A kernel's kind by its library's words; the first pattern over its name decides where the
# words do not (a compiled Triton kernel, the program's own).
KIND_OF_LIBRARY = {
    library_moves.GEMM: Kind.GEMM, library_moves.XLA_GEMM: Kind.GEMM,
    library_moves.CONVOLUTION: Kind.GEMM, library_moves.CUTLASS: Kind.GEMM,
    library_moves.ATTENTION: Kind.ATTENTION, library_moves.RNN: Kind.RECURRENT,
    library_moves.NORM: Kind.NORMALISATION, library_moves.NORM_GRADIENT: Kind.NORMALISATION,
    library_moves.GELU: Kind.ELEMENT_WISE, library_moves.ELEMENTWISE: Kind.ELEMENT_WISE,
    library_moves.FILL: Kind.ELEMENT_WISE, library_moves.RANDOM: Kind.ELEMENT_WISE,
    library_moves.EMBEDDING: Kind.ELEMENT_WISE, library_moves.CUPY: Kind.ELEMENT_WISE,
    library_moves.XLA_FUSION: Kind.ELEMENT_WISE,
    library_moves.CAST: Kind.CASTS,
    library_moves.SOFTMAX: Kind.REDUCTIONS, library_moves.REDUCTION: Kind.REDUCTIONS,
    library_moves.OPTIMIZER: Kind.OPTIMIZER, library_moves.FUSED_OPTIMIZER: Kind.OPTIMIZER,
    library_moves.FOREACH: Kind.OPTIMIZER,
    library_moves.NCCL: Kind.COMMUNICATION,
}
KIND_OF_NAME = (
    (r"gemm|_mm_|triton_tem_|conv|wgrad|dgrad", Kind.GEMM),
    (r"attention|attn|fmha|sdpa", Kind.ATTENTION),
    (r"norm", Kind.NORMALISATION),
    (r"softmax|reduce|reduction|red_|per_fused_", Kind.REDUCTIONS),
    (r"adam|sgd|multi_tensor", Kind.OPTIMIZER),
    (r"copy|cast|memcpy", Kind.CASTS),
    (r"nccl|all_?reduce|all_?gather", Kind.COMMUNICATION),
    (r"elementwise|poi_|fused_|triton_", Kind.ELEMENT_WISE),
)


def kind_of(kernel: str, library: str | None) -> Kind:
    """What kind of GPU time a kernel is: by its library's words, else by its name."""
    if library in KIND_OF_LIBRARY:
        return KIND_OF_LIBRARY[library]
    return next((kind for pattern, kind in KIND_OF_NAME
                 if re.search(pattern, kernel, re.IGNORECASE)), Kind.OTHER)
