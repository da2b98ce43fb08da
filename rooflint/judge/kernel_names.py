"""What a profiled kernel is called: its name reduced to what any demangler writes alike
(name_key, so that pass 1's launches and pass 2's meet), its function's name, its short
name and what it does where the name tells. Names in, names out: no launch is counted
here (distinct_names.py tells a program's kernels apart)."""

from __future__ import annotations

import functools
import re

# Words two demanglers place differently or only one writes (ncu: "lambda instance 1",
# "(T1 *, ...)"; the C++ runtime's: "lambda #1", "(float const*, ...)").
DEMANGLER_WORDS = {"const", "volatile", "void", "unsigned", "signed", "struct", "class",
                   "instance", "anonymous", "namespace", "unnamed"}


@functools.cache
def name_key(name: str) -> str:
    """A demangled kernel name reduced to what any demangler writes alike, so that pass 1's
    names (PyTorch's profiler, from the C++ runtime's demangler) and pass 2's (Nsight
    Compute's own) meet: the parameter list, namespaces, integer suffixes (``32u``), casts
    of constants (``(NormType)1``; ``(unsigned long)1``, as ncu_report demangles), the
    parameters of the function a lambda is defined in and the words in DEMANGLER_WORDS
    are dropped,
    ``false``/``true`` read as 0/1; what is left are the function's and its template
    arguments' own names and numbers, in order. Cached: a trace asks it of every launch
    (thousands), under a few dozen names of up to a thousand characters."""
    head = _without_enclosing_parameters(without_parameters(name))
    head = re.sub(r"\([A-Za-z_][\w:]*(?: [A-Za-z_][\w:]*)*\)(?=-?\d)", "", head)  # (int)4 -> 4
    words = re.findall(r"[A-Za-z_]\w*(?:::)?|\d+", head)
    kept = [{"false": "0", "true": "1"}.get(w, w) for w in words
            if not w.endswith("::") and w not in DEMANGLER_WORDS
            and not re.fullmatch(r"u|ul|ull|l|ll", w)]
    return " ".join(kept)


# A parameter list followed by ``::`` (``const::``): that of the function a lambda or a
# local class is defined in, which Nsight Compute writes with the template's placeholders
# (``(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]``) where the C++
# runtime spells every type out. Liger-Kernel's RMSNorm benchmark lost a quarter of its
# GPU time's counters to it (H100).
_ENCLOSING_PARAMETERS_END = re.compile(r"\)(?:\s*const)?::")


def _without_enclosing_parameters(name: str) -> str:
    """``f<T>(int, T1)::[lambda() (instance 1)]`` -> ``f<T>::[lambda() (instance 1)]``."""
    while found := _ENCLOSING_PARAMETERS_END.search(name):
        end, depth = found.start(), 0
        for start in range(end, -1, -1):
            depth += {")": 1, "(": -1}.get(name[start], 0)
            if depth == 0:
                break
        name = name[:start].rstrip() + "::" + name[found.end():]
    return name


def without_parameters(name: str) -> str:
    """``void k<T>(float*, int)`` -> ``void k<T>``: the last top-level parenthesis group."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i]
    return name


def function_name(kernel: str) -> str:
    """The kernel's function, without namespaces, template arguments or parameters."""
    return mangled_names(kernel)[0] or name_key(kernel).split(" ", 1)[0]


# An Itanium-mangled name (``_ZN17cutlass__5x_cudnn6KernelI...``) that PyTorch's profiler
# left as it found it: the C++ runtime's demangler gives up on some (cuDNN's CUTLASS
# convolutions, H200: 5 % of DCGAN's GPU time), which Nsight Compute's demangles.
_MANGLED = re.compile(r"_Z[A-Za-z0-9_]+")
_LENGTH = re.compile(r"\d+")        # a source name's length, the name after it
# What may stand where a nested name's source names are read: a substitution of a prefix
# seen before (``S_``, ``S1G_``) or of std's (``St``), and cv- or ref-qualifiers.
_SUBSTITUTION = re.compile(r"S[0-9A-Z]*_|S[tabsiod]")
_QUALIFIERS = re.compile(r"[rVKRO]*")


@functools.cache
def mangled_names(kernel: str) -> tuple[str | None, str | None]:
    """A mangled kernel name's function (``Kernel``) and the last name of its first
    template argument (``ImplicitGemmConvolution``), read off the name's start, where
    each name is spelled once after its length; (None, None) for a name that is not
    mangled or does not start as these read."""
    if not _MANGLED.fullmatch(kernel):
        return None, None
    start = 3 if kernel.startswith("_ZL") else 2
    function, at = _last_name(kernel, start)
    if function is None or not kernel.startswith("I", at):
        return function, None
    return function, _last_name(kernel, at + 1)[0]


def _last_name(mangled: str, at: int) -> tuple[str | None, int]:
    """The last source name of the (nested) name at ``at``, and where its template
    arguments or its end begin."""
    nested = mangled.startswith("N", at)
    if nested:
        at = _QUALIFIERS.match(mangled, at + 1).end()
    last = None
    while at < len(mangled):
        if length := _LENGTH.match(mangled, at):
            at, size = length.end(), int(length.group())
            last, at = mangled[at:at + size], at + size
        elif substitution := _SUBSTITUTION.match(mangled, at):
            at = substitution.end()
        else:
            break
        if not nested and last is not None:
            break
    return last, at


def short_name(kernel: str) -> str:
    """A demangled signature, shortened to what tells it apart: the function's name, and
    for a template the first named argument
    (``vectorized_elementwise_kernel<GeluCUDAKernelImpl>``); a mangled one likewise, as
    far as mangled_names reads it."""
    function, argument = mangled_names(kernel)
    if function:
        return f"{function}<{argument}>" if argument else function
    head = re.sub(r"<unnamed>::|\(anonymous namespace\)::", "", kernel)
    head = re.sub(r"^(void|auto)\s+", "", head.split("(")[0]).strip()
    base, _, arguments = head.partition("<")
    function = base.split("::")[-1] or base
    named = [n.split("::")[-1] for n in re.findall(r"[A-Za-z_][\w:]*", arguments)
             if not re.fullmatch(r"(c10::)?(BFloat16|Half|float|double|int|long|char|bool|"
                                 r"unsigned|const|std::array|signed|short)", n)]
    return f"{function}<{named[0]}>" if named else function


# What a library's kernel does, from its name: (pattern, words), the first match wins,
# the specific before the generic (a backward before its forward). Only the names of
# PyTorch's and cuDNN's kernels are read (LIBRARY_NAME): a program's own kernel, and a
# Triton kernel torch.compile named after the operators it fused, keep their own names.
# ``vectorized_elementwise_kernel<GeluCUDAKernelImpl>`` told an expert what it ran only
# after reading its template; ``unrolled_elementwise…a>@804864`` was the logits' up-cast.
DOES = (
    (r"flash_bprop|sdpa\w*bprop|fmha\w*(bwd|backward)|flash_bwd|compute_dot_do_o"
     r"|convert_dq_to", "attention backward"),
    (r"sdpa|fmha|flash", "attention"),
    (r"GammaBetaBackward", "LayerNorm backward (weights)"),
    (r"layer_norm_grad_input|LayerNormBackward", "LayerNorm backward (input)"),
    (r"RowwiseMoments", "norm statistics"),
    (r"layer_norm|LayerNormForward", "LayerNorm"),
    (r"batch_norm_backward_reduce", "BatchNorm backward (weights)"),
    (r"batch_norm_backward|cudnn::bn_bw", "BatchNorm backward (input)"),
    (r"batch_norm_collect_statistics", "BatchNorm statistics"),
    (r"batch_norm|cudnn::bn_fw", "BatchNorm"),
    (r"GeluBackward", "GELU backward"),
    (r"Gelu", "GELU"),
    (r"silu_backward", "SiLU backward"),
    (r"silu", "SiLU"),
    (r"tanh_backward", "tanh backward"),
    (r"tanh", "tanh"),
    (r"threshold_kernel", "ReLU backward (threshold)"),
    (r"LogSoftMaxBackward", "log-softmax backward"),
    (r"LogSoftMaxForward", "log-softmax"),
    (r"SoftMaxBackward|softmax_warp_backward", "softmax backward"),
    (r"SoftMaxForward|softmax_warp_forward", "softmax"),
    (r"nll_loss_backward", "NLL loss backward"),
    (r"nll_loss", "NLL loss"),
    (r"mse_kernel", "MSE loss"),
    (r"FusedOptimizer", "fused optimizer step"),
    (r"LpNormFunctor", "gradient norm (foreach)"),
    (r"multi_tensor_apply", "foreach update"),
    (r"FillFunctor", "fill"),
    (r"CatArrayBatchedCopy", "concatenate"),
    (r"embedding_backward|embedding_dense_backward", "embedding backward"),
    (r"indexSelect|index_select|embedding", "embedding lookup"),
    (r"normal_and_transform|normal_kernel", "random normal"),
    (r"uniform_and_transform", "random uniform"),
    (r"bernoulli|fused_dropout", "dropout mask"),
    (r"sum_functor", "sum"),
    (r"MeanOps", "mean"),
    (r"CUDAFunctor(OnSelf)?_add", "add"),
    (r"MulFunctor", "multiply"),
    (r"DivFunctor|div_true", "divide"),
    (r"pow_tensor", "power"),
    (r"clamp", "clamp (ReLU)"),
    (r"AbsFunctor", "abs"),
    (r"nchwToNhwc", "layout NCHW→NHWC"),
    (r"nhwcToNchw", "layout NHWC→NCHW"),
    (r"dgrad|Conv2dDgrad", "convolution backward (input)"),     # cuDNN's, its CUTLASS kernels'
    (r"wgrad|Conv2dWgrad", "convolution backward (weights)"),
    (r"fprop|implicit_convolve|convolve_sgemm|winograd|implicit_?gemm|ImplicitGemmConvolution",
     "convolution"),
)
LIBRARY_NAME = re.compile(r"\bat::|cudnn|xmma_(fprop|dgrad|wgrad)|softmax_warp_")
# Dtypes by the names kernels and the profiler write, as a person writes them.
DTYPE_WORDS = {"float": "fp32", "c10::BFloat16": "bf16", "BFloat16": "bf16", "c10::Half": "fp16",
               "Half": "fp16", "double": "fp64", "long int": "int64", "long": "int64",
               "int": "int32", "bool": "bool", "signed char": "int8", "unsigned char": "uint8"}
# PyTorch's casts specialised by destination read fp32 (bfloat16_copy_kernel_cuda: fp32 to
# bf16); its generic copy names the destination in its lambda's parameter, and casts on
# load (LoadWithCast, or a kernel that is not _nocast) where the source differs.
NAMED_CASTS = {"bfloat16_copy_kernel_cuda": "bf16", "float16_copy_kernel_cuda": "fp16",
               "float8_copy_kernel_cuda": "fp8"}


def what_it_does(kernel: str, cast: tuple[str, str] | None = None) -> str | None:
    """A library kernel's work in a few words (``GELU``, ``LayerNorm backward
    (weights)``, ``cast bf16→fp32``); None for a kernel whose name tells no more than
    itself (the program's own, Triton's, cuBLAS's tiles). ``cast`` is the (source,
    destination) dtypes the profiler's trace recorded for its copies, when it did."""
    if not LIBRARY_NAME.search(kernel):
        return None
    if "copy_kernel" in kernel:
        return _copy_words(kernel, cast)
    return next((words for pattern, words in DOES if re.search(pattern, kernel)), None)


def _copy_words(kernel: str, cast: tuple[str, str] | None) -> str:
    """``cast bf16→fp32``, ``cast to fp32`` (the source unknown), or ``copy fp32``."""
    if cast:
        source, destination = (DTYPE_WORDS.get(t, t) for t in cast)
        return f"cast {source}→{destination}" if source != destination else f"copy {source}"
    named = next((d for name, d in NAMED_CASTS.items() if name in kernel), None)
    if named:
        return f"cast fp32→{named}"
    destination = next((DTYPE_WORDS[t] for t in re.findall(r"lambda\(([\w: ]+)\)", kernel)
                        if t in DTYPE_WORDS), "tensor")
    casting = "LoadWithCast" in kernel or "_nocast" not in kernel and "unrolled" in kernel
    return f"cast to {destination}" if casting else f"copy {destination}"
