"""What a profiled kernel is called: its name reduced to what any demangler writes alike
(name_key, so that pass 1's launches and pass 2's meet), its function's name, and the
short name no other of the program's kernels shares (the variant's name in a profile's
result). Names in, names out: no launch is counted here."""

from __future__ import annotations

import functools
import re
from collections import Counter as Tally
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rooflint.judge.kernel_times import Identity, KernelTime

# Words two demanglers place differently or only one writes (ncu: "lambda instance 1",
# "(T1 *, ...)"; the C++ runtime's: "lambda #1", "(float const*, ...)").
DEMANGLER_WORDS = {"const", "volatile", "void", "unsigned", "signed", "struct", "class",
                   "instance", "anonymous", "namespace", "unnamed"}


@functools.cache
def name_key(name: str) -> str:
    """A demangled kernel name reduced to what any demangler writes alike, so that pass 1's
    names (PyTorch's profiler, from the C++ runtime's demangler) and pass 2's (Nsight
    Compute's own) meet: the parameter list, namespaces, integer suffixes (``32u``), casts
    of enum constants (``(NormType)1``), the parameters of the function a lambda is defined
    in and the words in DEMANGLER_WORDS are dropped,
    ``false``/``true`` read as 0/1; what is left are the function's and its template
    arguments' own names and numbers, in order. Cached: a trace asks it of every launch
    (thousands), under a few dozen names of up to a thousand characters."""
    head = _without_enclosing_parameters(without_parameters(name))
    head = re.sub(r"\((?:[A-Za-z_][\w:]*)\)(?=-?\d)", "", head)         # (NormType)1 -> 1
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
    return name_key(kernel).split(" ", 1)[0]


def short_name(kernel: str) -> str:
    """A demangled signature, shortened to what tells it apart: the function's name, and
    for a template the first named argument
    (``vectorized_elementwise_kernel<GeluCUDAKernelImpl>``)."""
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
