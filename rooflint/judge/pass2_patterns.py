"""What pass 2 asks Nsight Compute for: one regular expression on the mangled name of each
chosen kernel, its function's name and the template words that tell it from pass 1's
other kernels of that function; and, for a launcher's ranks, the GPUs to profile them on."""

from __future__ import annotations

import re

from rooflint.formats.ranks import RankInfo
from rooflint.judge.kernel_names import DEMANGLER_WORDS, function_name, name_key, without_parameters
from rooflint.judge.kernel_times import Identity, KernelTime

# Where only every rank holds every chosen kernel, pass 2 profiles the fewest ranks that
# hold this share of their GPU time (profiled_devices).
RANKS_HOLD = 0.95
# The most template words a pass-2 pattern names: enough to tell PyTorch's functors and
# their element types apart.
WORDS_PER_PATTERN = 4
# Type names a mangled name writes as one letter (float: f), never spelled out.
_BUILTIN_TYPES = {"float", "double", "int", "long", "short", "char", "bool", "wchar_t",
                  "char8_t", "char16_t", "char32_t", "__int128", "__float128"}
# Words of a template argument list that say nothing of the kernel, or that one demangler
# writes and the other or the mangled name not.
_NOT_TELLING = DEMANGLER_WORDS | _BUILTIN_TYPES | {"operator", "lambda", "false", "true"}
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
    return selection_of(kernel_patterns(chosen, timed))


def selection_of(patterns: dict[Identity, str]) -> list[str]:
    """Nsight Compute's selection of kernel_patterns' kernels: each pattern once, in order."""
    return sorted(set(patterns.values()))


def kernel_patterns(chosen: list[KernelTime], timed: list[KernelTime]) -> dict[Identity, str]:
    """Each chosen kernel's pattern (mangled_patterns'), by its identity: the rotation's
    engine ranges the first launch of each at its shape (measure/rotation.py)."""
    by_function: dict[str, set[str]] = {}
    for k in timed:
        by_function.setdefault(function_name(k.kernel), set()).add(k.kernel)
    patterns = {}
    for k in chosen:
        function = function_name(k.kernel)
        if _IDENTIFIER.fullmatch(k.kernel):
            patterns[k.identity] = f"^{re.escape(k.kernel)}$"
            continue
        others = [template_words(n) for n in by_function.get(function, ())
                  if name_key(n) != name_key(k.kernel)]
        words = _telling_words(template_words(k.kernel), others)
        patterns[k.identity] = ".*".join(f"{len(w)}{re.escape(w)}" for w in (function, *words))
    return patterns


def template_words(kernel: str) -> list[str]:
    """The names among a kernel's own template arguments, in order, once each, as the
    mangled name spells them: none inside parentheses, brackets or braces (parameter lists,
    lambdas, casts), no namespaces, no built-in types, no placeholders (ncu's ``T1``)."""
    head = without_parameters(kernel)
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


def profiled_devices(ranks: list[tuple[RankInfo, set[Identity]]],
                     chosen: dict[Identity, float]) -> list[RankInfo] | None:
    """The ranks whose GPUs pass 2 profiles, where a launcher's ranks (``ranks``: each with
    the identities of its own kernels) ran the program: the fewest whose kernels hold every
    ``chosen`` kernel (each with its GPU time), the lowest-numbered first (one, for a
    data-parallel job, whose ranks run the same kernels; the counters of a kernel at one
    launch shape serve every rank). The others run unprofiled: a sharded job (FSDP2, two
    H200s) whose every rank was profiled had not ended pass 2 after 115 s, and ended it in
    about 40 s profiled on rank 0's GPU alone. Where only every rank holds them all, the
    fewest that hold RANKS_HOLD of their time: ranks that autotune on their own can pick
    another launch shape for a kernel (nanoGPT compiled, two H200s: one Triton kernel at
    two block sizes, pass 2 about 155 s on every GPU), which then goes without counters.
    None where the GPUs do not tell the ranks apart (a device not known, two ranks on one
    device number: a launcher that gives each rank its own CUDA_VISIBLE_DEVICES) or every
    rank is needed: every rank is profiled."""
    devices = [rank.device for rank, _ in ranks]
    if len(ranks) < 2 or None in devices or len(set(devices)) < len(devices):
        return None
    total = sum(chosen.values())
    wanted, taken, held, enough = set(chosen), [], 0.0, None
    while wanted:
        best = max(ranks, key=lambda r: sum(chosen[i] for i in r[1] & wanted))  # first of ties
        if not best[1] & wanted:
            break
        taken.append(best[0])
        held += sum(chosen[i] for i in best[1] & wanted)
        wanted -= best[1]
        if enough is None and held >= RANKS_HOLD * total:
            enough = list(taken)
    for found in (taken, enough):
        if found and len(found) < len(ranks):
            return found
    return None
