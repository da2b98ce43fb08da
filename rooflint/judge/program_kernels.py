"""A profiled program's kernels, from its launches: the decisions behind `rooflint profile`.

Pass 1's launches (PyTorch's profiler trace, or Nsight Compute's rows) are grouped into
kernels, one per identity (name_key, grid, block), and ranked by total GPU time; the
chosen ones are those that cover ``coverage`` of it (or the ``top`` N). Pass 2's launches
meet them by identity, never by position, since two runs of one program need not launch
in the same order. Also here: each kernel's short, unique name, the library that wrote it
(its caller's moves, caller_moves.py, lead its verdict), and the shapes a persistent
kernel runs at one launch configuration. Launches as the trace and Nsight Compute's rows
record them (formats/trace_events.py, formats/ncu_log.py) in, kernels out: nothing here
runs a program or a GPU (engine/program.py does, through measure/program.py).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter as Tally
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence, TypeVar

from rooflint.analysis import caller_moves as library_moves
from rooflint.analysis.counters import Counters
from rooflint.analysis.stats import TimeStats
from rooflint.common.units import counted, format_time
from rooflint.formats.ncu_log import BLOCK, DURATION, GRID, KERNEL_NAME as NAME, STREAM
from rooflint.formats.settings import DEFAULT_COVERAGE
from rooflint.formats.trace_events import (ATEN, Launch, Origin, Unrecorded, origins,
                                           tensor_precisions)

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
# Who wrote a kernel, from its name: (pattern, plain words). First match wins. Only names a
# library writes: a program's own kernel called sgemm, flash_attention or layer_norm is
# its own (SGEMM_CUDA's sgemm2DBlocktiling had read as cuBLAS's, and been told to shape
# its GEMM for cuBLAS's tiles).
LIBRARIES = (
    (r"^(triton_|cutlass_)?gemm_fusion", library_moves.XLA_GEMM),
    (r"^(loop|input)_\w*fusion|^fusion(_\d+)?$|^wrapped_\w+$", library_moves.XLA_FUSION),
    (r"^triton_", library_moves.INDUCTOR),
    (r"nccl", library_moves.NCCL),
    (r"^nvjet_|cutlass|xmma|cublas|^(ampere|volta|turing|maxwell|sm\d+)_\w*gemm",
     library_moves.GEMM),
    (r"fmha|flash::|sdpa|cudnn\w*(flash|attention)|compute_dot_do_o|convert_dq_to_16bits",
     library_moves.ATTENTION),
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
    (r"layer_norm|layernorm|rms_norm", library_moves.NORM),
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


# XLA's autotuner (JAX's and TensorFlow's compiler) times candidate kernels while the program
# compiles: stream_executor checks each trial's buffers for overruns with its redzone kernel
# right after it on the same stream, compares the trials' outputs and holds the stream with
# a delay kernel while it times them. Those launches are compile-time work, not the
# program's: in a short program they took more GPU time than its steps (a JAX MLP, 2,986
# launches, 871 of them after the autotuner's last).
# Its kernels by name, with the namespace (PyTorch's profiler) or without (ncu's CSV).
AUTOTUNER_KERNEL = re.compile(r"stream_executor::gpu::|RedzoneAllocatorKernel|xla_fp_comparison"
                              r"|DelayKernel\(.*GpuSemaphoreState|RepeatBufferKernel")
REDZONE_CHECK = "RedzoneAllocatorKernel"


XLA_AUTOTUNER = "XLA's autotuner"


def autotuning(names_and_streams: list[tuple[str, str]]) -> list[bool]:
    """For each launch, in launch order, whether XLA's autotuner made it: one of its own
    kernels, or a trial, the launch its redzone check follows on the same stream."""
    made = [bool(AUTOTUNER_KERNEL.search(name)) for name, _ in names_and_streams]
    following: dict[str, int] = {}            # stream -> the launch before, on it
    for i, (name, stream) in enumerate(names_and_streams):
        if REDZONE_CHECK in name and stream in following:
            made[following[stream]] = True
        following[stream] = i
    return made


@dataclass(frozen=True)
class Autotuning:
    """The launches autotuners made (XLA's, Triton's, TorchInductor's) and a benchmark's
    cache flushes (Triton's do_bench), left out of a program's kernels: benchmarking, not
    the program's work."""

    launches: int = 0
    gpu_s: float = 0.0
    tuners: tuple[str, ...] = ()               # whose, first seen first: "XLA's autotuner"


def autotuners_words(tuners: Sequence[str]) -> str:
    """``XLA's autotuner``, ``Triton's autotuner and Triton's do_bench flushing L2``; a
    result written before others were told apart left out XLA's alone."""
    names = list(tuners or (XLA_AUTOTUNER,))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def unrecorded_words(unrecorded: Sequence[Unrecorded]) -> str:
    """What pass 1 left unrecorded of the repeated calls (trace_events.Unrecorded), said as
    pass 1 ends and under the table."""
    parts = [f"{counted(u.calls, 'call')} of {u.by} past the first {u.recorded} of each run"
             for u in unrecorded]
    return (f"not recorded: {' and '.join(parts)}; their launches and GPU time are "
            f"counted from the recorded calls")


L = TypeVar("L")


def without_autotuning(launches: list[L], name_and_stream: Callable[[L], tuple[str, str]],
                       seconds: Callable[[L], float],
                       tuner: Callable[[L], str | None] = lambda x: None
                       ) -> tuple[list[L], Autotuning]:
    """``launches`` (a trace's Launches or ncu's rows, in launch order) less those an
    autotuner made (XLA's by its kernels; another by ``tuner``: the trace's ranges say
    which launches its benchmarking made), and what those were."""
    xla = autotuning([name_and_stream(x) for x in launches])
    made = [XLA_AUTOTUNER if m else tuner(x) for x, m in zip(launches, xla)]
    tuned = [x for x, m in zip(launches, made) if m]
    return ([x for x, m in zip(launches, made) if not m],
            Autotuning(len(tuned), sum(seconds(x) for x in tuned),
                       tuple(dict.fromkeys(m for m in made if m))))


def trace_without_autotuning(launches: list[Launch]) -> tuple[list[Launch], Autotuning]:
    return without_autotuning(launches, lambda x: (x.name, x.stream), lambda x: x.duration_s,
                              lambda x: x.autotuner)


def rows_without_autotuning(rows: list[dict]) -> tuple[list[dict], Autotuning]:
    return without_autotuning(rows, lambda r: (str(r[NAME]), str(r.get(STREAM, ""))),
                              lambda r: float(r[DURATION]) * 1e-9)


@dataclass
class KernelTime:
    """One kernel at one grid shape in the duration pass: a library kernel launched at two
    sizes (cuBLAS's GEMM for the QKV and the MLP projections) is two of these, each with
    its own time and its own verdict."""

    kernel: str                     # the demangled name
    grid: str                       # "(1056, 1, 1)"
    durations_s: list[float] = field(default_factory=list)
    block: str = ""                 # "(256, 1, 1)"
    origins: list[Origin] = field(default_factory=list)   # from the profiler's trace
    # The tensor-core precisions its launches' operators name (the profiler's trace);
    # None: any (launched outside PyTorch's ATen operators, or timed by ncu).
    tensor_precisions: frozenset[str] | None = None
    # Most launches are forward copies to a wider dtype: the input autocast widens for an
    # operator it runs in fp32 (the loss), never a weight cast (those narrow; in backward,
    # gradients widen on their way back to fp32, weights' and activations' alike).
    upcasts: bool = False
    # Launches of repeated calls past the first ones the trace recorded (a do_bench run's,
    # a DataLoader epoch's: trace_events.SAMPLED_RANGE), and their GPU time, counted from
    # the recorded ones.
    unrecorded_launches: int = 0
    unrecorded_s: float = 0.0

    @property
    def identity(self) -> Identity:
        return name_key(self.kernel), self.grid, self.block

    @property
    def launches(self) -> int:
        return len(self.durations_s) + self.unrecorded_launches

    @property
    def total_s(self) -> float:
        return sum(self.durations_s) + self.unrecorded_s

    @property
    def blocks(self) -> int:
        return math.prod(int(n) for n in re.findall(r"\d+", self.grid)) if self.grid else 0

    @property
    def threads(self) -> int:
        """Threads per block."""
        return math.prod(int(n) for n in re.findall(r"\d+", self.block)) if self.block else 0


# What a launch is, whichever run of the program it came from: its name's key (see
# name_key), the grid and the block. Pass 2's launches are matched to pass 1's kernels by
# it, never by position, since two runs of one program need not launch in the same order.
Identity = tuple[str, str, str]

# Words two demanglers place differently or only one writes (ncu: "lambda instance 1",
# "(T1 *, ...)"; the C++ runtime's: "lambda #1", "(float const*, ...)").
_DEMANGLER_WORDS = {"const", "volatile", "void", "unsigned", "signed", "struct", "class",
                    "instance", "anonymous", "namespace", "unnamed"}


@functools.cache
def name_key(name: str) -> str:
    """A demangled kernel name reduced to what any demangler writes alike, so that pass 1's
    names (PyTorch's profiler, from the C++ runtime's demangler) and pass 2's (Nsight
    Compute's own) meet: the parameter list, namespaces, integer suffixes (``32u``), casts
    of enum constants (``(NormType)1``), the parameters of the function a lambda is defined
    in and the words in _DEMANGLER_WORDS are dropped,
    ``false``/``true`` read as 0/1; what is left are the function's and its template
    arguments' own names and numbers, in order. Cached: a trace asks it of every launch
    (thousands), under a few dozen names of up to a thousand characters."""
    head = _without_enclosing_parameters(_without_parameters(name))
    head = re.sub(r"\((?:[A-Za-z_][\w:]*)\)(?=-?\d)", "", head)         # (NormType)1 -> 1
    words = re.findall(r"[A-Za-z_]\w*(?:::)?|\d+", head)
    kept = [{"false": "0", "true": "1"}.get(w, w) for w in words
            if not w.endswith("::") and w not in _DEMANGLER_WORDS
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


def _without_parameters(name: str) -> str:
    """``void k<T>(float*, int)`` -> ``void k<T>``: the last top-level parenthesis group."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i]
    return name


def identity(row: dict) -> Identity:
    return name_key(str(row[NAME])), str(row.get(GRID, "")), str(row.get(BLOCK, ""))


def kernel_times(rows: list[dict]) -> list[KernelTime]:
    """Every distinct kernel, grid and block with its launch durations, the most GPU time
    first."""
    kernels: dict[Identity, KernelTime] = {}
    for row in rows:
        k = kernels.setdefault(identity(row), KernelTime(str(row[NAME]), str(row.get(GRID, "")),
                                                        block=str(row.get(BLOCK, ""))))
        k.durations_s.append(float(row[DURATION]) * 1e-9)
    return sorted(kernels.values(), key=lambda k: k.total_s, reverse=True)


def kernel_times_from_trace(launches: list[Launch]) -> list[KernelTime]:
    """kernel_times for the launches of PyTorch's profiler trace, each kernel with the
    operators and Python lines its launches came from."""
    groups: dict[Identity, list[Launch]] = {}
    for launch in launches:
        groups.setdefault((name_key(launch.name), launch.grid, launch.block), []).append(launch)
    kernels = [KernelTime(mine[0].name, mine[0].grid, [x.duration_s for x in mine],
                          block=mine[0].block, origins=origins(mine),
                          tensor_precisions=tensor_precisions(mine),
                          upcasts=2 * sum(x.widens and not x.backward_of for x in mine)
                          > len(mine),
                          unrecorded_launches=round(sum(x.weight - 1 for x in mine)),
                          unrecorded_s=sum(x.duration_s * (x.weight - 1) for x in mine))
               for mine in groups.values()]
    return sorted(kernels, key=lambda k: k.total_s, reverse=True)


def selected(launches: list[Launch], nvtx: str | None, kernel: str | None,
             skip: int) -> list[Launch]:
    """The trace's launches that pass the same filters Nsight Compute applies to pass 2:
    inside the range ``nvtx``, a name matching ``kernel``, after the first ``skip``."""
    kept = [x for x in launches if (not nvtx or nvtx in x.ranges)
            and (not kernel or re.search(kernel, x.name))]
    return kept[skip:]


def launches_by_identity(chosen: list[KernelTime], rows: list[dict],
                         timed: list[KernelTime] | None = None) -> dict[Identity, list[dict]]:
    """Each chosen kernel's launches among pass 2's rows, found by identity wherever they
    sit in pass 2's launch order. A name the two demanglers still write apart (a lambda's
    enclosing template: ``T1`` for ``CUDAGeneratorImpl``) is matched on its function's
    name, grid and block when exactly one of pass 2's kernels and none other of pass 1's
    (``timed``) has those."""
    launches: dict[Identity, list[dict]] = {}
    for row in rows:
        launches.setdefault(identity(row), []).append(row)
    known = {k.identity for k in timed or chosen}
    loose: dict[Identity, list[Identity]] = {}
    for key in launches:
        if key not in known:
            loose.setdefault(_loosely(key), []).append(key)
    taken = {_loosely(k.identity) for k in timed or chosen if k.identity in launches}
    found = {}
    for k in chosen:
        mine = launches.get(k.identity)
        if not mine and _loosely(k.identity) not in taken:
            candidates = loose.get(_loosely(k.identity), [])
            mine = launches[candidates[0]] if len(candidates) == 1 else None
        if mine:
            found[k.identity] = mine
    return found


def function_name(kernel: str) -> str:
    """The kernel's function, without namespaces, template arguments or parameters."""
    return name_key(kernel).split(" ", 1)[0]


# The most template words a pass-2 pattern names: enough to tell PyTorch's functors and
# their element types apart.
WORDS_PER_PATTERN = 4
# Type names a mangled name writes as one letter (float: f), never spelled out.
_BUILTIN_TYPES = {"float", "double", "int", "long", "short", "char", "bool", "wchar_t",
                  "char8_t", "char16_t", "char32_t", "__int128", "__float128"}
# Words of a template argument list that say nothing of the kernel, or that one demangler
# writes and the other or the mangled name not.
_NOT_TELLING = _DEMANGLER_WORDS | _BUILTIN_TYPES | {"operator", "lambda", "false", "true"}
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def mangled_patterns(chosen: list[KernelTime], timed: list[KernelTime]) -> list[str]:
    """What pass 2 asks Nsight Compute for: a regular expression on the *mangled* name of
    each chosen kernel, its function's name and the template words that tell it from
    pass 1's other kernels of that function (``timed``), in order.

    Mangled names are the one spelling every tool shares: the demangled names of PyTorch's
    profiler and of ncu differ (``32u`` or ``32``, ``{lambda()#1}`` or ``[lambda() (instance
    1)]``, ``at::`` kept or dropped), and ncu's regular expressions over its demangled
    names lost kernels that matched them (cuBLAS GEMMs, H100 and H200) where these, on the
    same program, lost none. A mangled name spells each name once, after its length
    (``13reduce_kernel``), so a pattern is the function's and its words' names, each after
    its length; an ``extern "C"`` kernel (cuBLAS's, cuDNN's, Triton's) is mangled as itself.
    By function alone, ncu would profile every launch shape of every functor of PyTorch's
    element-wise kernels (the training step's 67 shapes for 39 chosen kernels)."""
    by_function: dict[str, set[str]] = {}
    for k in timed:
        by_function.setdefault(function_name(k.kernel), set()).add(k.kernel)
    patterns = set()
    for k in chosen:
        function = function_name(k.kernel)
        if _IDENTIFIER.fullmatch(k.kernel):
            patterns.add(f"^{re.escape(k.kernel)}$")
            continue
        others = [template_words(n) for n in by_function.get(function, ())
                  if name_key(n) != name_key(k.kernel)]
        words = _telling_words(template_words(k.kernel), others)
        patterns.add(".*".join(f"{len(w)}{re.escape(w)}" for w in (function, *words)))
    return sorted(patterns)


def template_words(kernel: str) -> list[str]:
    """The names among a kernel's own template arguments, in order, once each, as the
    mangled name spells them: none inside parentheses, brackets or braces (parameter lists,
    lambdas, casts), no namespaces, no built-in types, no placeholders (ncu's ``T1``)."""
    head = _without_parameters(kernel)
    opening = re.search(rf"(^|[\s:]){re.escape(function_name(kernel))}<", head)
    if not opening:
        return []
    depth, kept = 0, []
    for char in head[opening.end():]:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(char, 0)
        kept.append(char if depth == 0 and char not in ")]}" else " ")
    words = re.findall(r"(?<!\w)[A-Za-z_]\w*(?:::)?", "".join(kept))
    return list(dict.fromkeys(w for w in words if not w.endswith("::")
                              and w not in _NOT_TELLING and not re.fullmatch(r"T\d+", w)))


def _telling_words(mine: list[str], others: list[list[str]]) -> list[str]:
    """Greedily, the word of ``mine`` (after those taken) that the fewest ``others`` still
    hold in order, while one leaves any out and WORDS_PER_PATTERN are not yet taken."""
    taken: list[str] = []
    while len(taken) < WORDS_PER_PATTERN:
        rivals = [o for o in others if _holds_in_order(o, taken)]
        later = mine[mine.index(taken[-1]) + 1:] if taken else mine
        if not rivals or not later:
            break
        best = min(later, key=lambda w: sum(_holds_in_order(o, [*taken, w]) for o in rivals))
        if all(_holds_in_order(o, [*taken, best]) for o in rivals):
            break
        taken.append(best)
    return taken


def _holds_in_order(words: list[str], wanted: list[str]) -> bool:
    remaining = iter(words)
    return all(w in remaining for w in wanted)


def _loosely(key: Identity) -> Identity:
    """An identity with only the function's name of its name key."""
    name, grid, block = key
    return name.split(" ", 1)[0], grid, block


NO_COUNTERS = "no counters: not among pass 2's profiled launches"


def why_no_counters(k: KernelTime, rows: list[dict]) -> str:
    """The reason a chosen kernel's row has no counters, from what pass 2 did see."""
    shapes = sorted({f"grid {grid}, block {block}" for key, grid, block in map(identity, rows)
                     if key == k.identity[0]})
    if shapes:
        return (f"no counters: pass 2 saw this kernel only at other launch shapes "
                f"({'; '.join(shapes[:3])}), not at grid {k.grid}, block {k.block}")
    twins = sorted({str(row[NAME]) for row in rows if identity(row)[1:] == k.identity[1:]})
    if twins:
        return (f"no counters: at grid {k.grid}, block {k.block} pass 2 profiled only "
                f"{short_name(twins[0])}, a name rooflint does not read as this kernel's")
    return NO_COUNTERS


def per_launch(c: Counters, launches: int) -> Counters:
    """Counters summed over ``launches`` launches, as the mean of one."""
    return replace(c, duration_s=c.duration_s / launches, dram_read=c.dram_read / launches,
                   dram_write=c.dram_write / launches, l2_bytes=c.l2_bytes / launches,
                   l1_bytes=c.l1_bytes / launches, local_bytes=c.local_bytes / launches,
                   flops={p: x / launches for p, x in c.flops.items()})


def choose(kernels: list[KernelTime], coverage: float = DEFAULT_COVERAGE,
           top: int | None = None) -> list[KernelTime]:
    """The kernels pass 2 profiles, the most GPU time first: the ``top`` N, or the first
    that together take ``coverage`` of the time, each with its siblings (the same function
    and template arguments at its other launch shapes: the same name_key).

    Nsight Compute selects launches by name, not by shape (mangled_patterns), so a kernel
    chosen alone still costs a profiled launch for every shape of its function, and its
    siblings' counters come with it: they are chosen too, and count towards ``coverage``.
    A profiled launch is the cost (about 0.3 s each, H100): on the training step this took
    46 kernels (90 % of the GPU time) in 46 launches, where choosing kernels one by one had
    taken 39 (90 %) in 60."""
    family_s: dict[str, float] = {}
    for k in kernels:
        family_s[name_key(k.kernel)] = family_s.get(name_key(k.kernel), 0.0) + k.total_s
    if top is not None:
        families = {name_key(k.kernel) for k in kernels[:top]}
    else:
        families, covered, total = set(), 0.0, sum(family_s.values())
        for family in dict.fromkeys(name_key(k.kernel) for k in kernels):
            if covered >= coverage * total:
                break
            families.add(family)
            covered += family_s[family]
    return [k for k in kernels if name_key(k.kernel) in families]


def library(kernel: str, operator: str | None = None) -> str | None:
    """Who wrote a kernel: by the operator that launched it (OPERATOR_LIBRARIES), by a
    library's own name for it (LIBRARIES), cuBLAS for a kernel outside PyTorch's namespace
    that a matrix product launched (GEMM_OPERATOR), by PyTorch's (PYTORCH_KERNELS) for a
    kernel in PyTorch's namespace or launched by an ATen operator, else PyTorch's for
    either of those; None for the program's own (its Triton or CUDA kernel, a custom
    operator's)."""
    op = operator or ""
    native = bool(PYTORCH_NATIVE.search(kernel))
    return (_first(OPERATOR_LIBRARIES, op) or _first(LIBRARIES, kernel)
            or (library_moves.GEMM if GEMM_OPERATOR.match(op) and not native else None)
            or (_first(PYTORCH_KERNELS, kernel) or library_moves.OPERATOR
                if native or op.startswith(ATEN) else None))


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


def short_name(kernel: str) -> str:
    """A demangled signature, shortened to what tells it apart: the function's name, and
    for a template the first named argument (``vectorized_elementwise_kernel<GeluCUDAKernelImpl>``)."""
    head = re.sub(r"<unnamed>::|\(anonymous namespace\)::", "", kernel)
    head = re.sub(r"^(void|auto)\s+", "", head.split("(")[0]).strip()
    base, _, arguments = head.partition("<")
    function = base.split("::")[-1] or base
    named = [n.split("::")[-1] for n in re.findall(r"[A-Za-z_][\w:]*", arguments)
             if not re.fullmatch(r"(c10::)?(BFloat16|Half|float|double|int|long|char|bool|"
                                 r"unsigned|const|std::array|signed|short)", n)]
    return f"{function}<{named[0]}>" if named else function


def unique_names(kernels: list[KernelTime]) -> dict[Identity, str]:
    """Identity -> a short name no other of the program's kernels shares: the grid's
    block count added where one kernel runs at several grids (``nvjet_..._TNT@1536``), and
    the threads per block where it runs at one block count with several block sizes
    (``softmax_forward_kernel7@8192x256``, a sweep of block sizes), then #2, #3 for
    whatever still collides."""
    grids = Tally(k.kernel for k in kernels)
    block_sizes = Tally((k.kernel, k.blocks) for k in kernels)
    names: dict[Identity, str] = {}
    seen: Tally = Tally()
    for k in kernels:
        name = short_name(k.kernel) + (f"@{k.blocks}" if grids[k.kernel] > 1 else "")
        if block_sizes[k.kernel, k.blocks] > 1:
            name += f"x{k.threads}"
        seen[name] += 1
        names[k.identity] = name if seen[name] == 1 else f"{name}#{seen[name]}"
    return names


# Launch times of one kernel this far apart (the next 15 % longer or more) are different
# shapes of a persistent kernel at one launch configuration, not noise: cuBLAS's GEMM at
# 10 us and 27 us, or 91, 258, 327 and 347 us, on the same grid.
SHAPE_GAP = 1.15


def shape_groups(durations: list[float]) -> list[list[float]]:
    """A kernel's launch durations, sorted, split wherever one is SHAPE_GAP longer than
    the one before."""
    ordered = sorted(durations)
    groups = [ordered[:1]]
    for duration in ordered[1:]:
        if duration >= groups[-1][-1] * SHAPE_GAP:
            groups.append([])
        groups[-1].append(duration)
    return groups


# A kernel whose work changes from call to call at one launch configuration (tensors of
# several sizes, a benchmark's sweep of sizes) spreads its times without noise: launch to
# launch they agree far more closely than over the run. Triton's fused-softmax tutorial's
# kernel, 98 sizes through do_bench at one grid, read "±21% noisy"; for independent noise
# the typical step from one launch to the next is about 0.7 of the IQR.
DRIFT_MIN_LAUNCHES = 8
DRIFT_STEP_SHARE = 0.25


def drifting(time: KernelTime) -> TimeStats | None:
    """The kernel's time, its spread said to be the work changing and not noise, when its
    launches in launch order step far less than they spread (see DRIFT_STEP_SHARE); else
    None."""
    samples = time.durations_s
    stats = TimeStats.of(samples) if samples else None
    if stats is None or len(samples) < DRIFT_MIN_LAUNCHES or not stats.noisy:
        return None
    steps = sorted(abs(b - a) for a, b in zip(samples, samples[1:]))
    step = steps[len(steps) // 2] / stats.median_s
    if step >= DRIFT_STEP_SHARE * stats.spread:
        return None
    return replace(stats, varies=(
        f"its launch times change in runs ({format_time(min(samples))} to "
        f"{format_time(max(samples))}, {100 * step:.1f}% from one launch to the next): its "
        f"work changes from call to call at one launch configuration (tensors of several "
        f"sizes, a sweep of sizes), not noise; its time is the median launch's, its "
        f"counters the profiled launch's own"))


def mixed_shapes(time: KernelTime) -> tuple[TimeStats, str] | None:
    """For a kernel whose launch times spread because it ran several shapes at one launch
    configuration (two or more groups of launches, each of two or more, each tight): the
    time of its most frequent shape, and a note saying so; else None (one shape, or a
    spread no grouping explains, which stays noise)."""
    groups = shape_groups(time.durations_s)
    stats = [TimeStats.of(g) for g in groups]
    if len(groups) < 2 or not TimeStats.of(time.durations_s).noisy or \
            any(len(g) < 2 or s.noisy for g, s in zip(groups, stats)):
        return None
    main = max(range(len(groups)), key=lambda i: len(groups[i]))
    medians = ", ".join(format_time(s.median_s) for s in stats)
    return stats[main], (
        f"{len(groups)} shapes at one launch configuration (a persistent kernel; medians "
        f"{medians}): its times spread by shape, not noise; its time is the most frequent "
        f"shape's ({len(groups[main])} of {len(time.durations_s)} launches), its share "
        f"counts them all, its counters are the profiled launch's own")

