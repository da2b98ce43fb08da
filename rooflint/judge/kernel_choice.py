"""Which of a program's kernels pass 2 profiles: those that cover ``coverage`` of its GPU
time, or the ``top`` N, each with its siblings at the function's other launch shapes, and
what profiling them costs."""

from __future__ import annotations

from rooflint.formats.settings import DEFAULT_COVERAGE
from rooflint.formats.trace_events import Launch
from rooflint.judge.kernel_libraries import is_collective
from rooflint.judge.kernel_names import name_key
from rooflint.judge.kernel_times import KernelTime

# What pass 2 costs a profiled launch (8 replay passes: the training step's pass 2, its 46
# launches and the program's own run under ncu, took 14.8 s on an H100).
PASS2_S_PER_LAUNCH = 0.3


def choose(kernels: list[KernelTime], coverage: float = DEFAULT_COVERAGE,
           top: int | None = None) -> list[KernelTime]:
    """The kernels pass 2 profiles, the most GPU time first: the ``top`` N, or the first
    that together take ``coverage`` of the time, each with its siblings (the same function
    and template arguments at its other launch shapes: the same name_key).

    Nsight Compute selects launches by name, not by shape (pass2_patterns.mangled_patterns),
    so a kernel chosen alone still costs a profiled launch for every shape of its function,
    and its siblings' counters come with it: they are chosen too, and count towards
    ``coverage``. A profiled launch is the cost (about 0.3 s each, H100): on the training
    step this took 46 kernels (90 % of the GPU time) in 46 launches, where choosing kernels
    one by one had taken 39 (90 %) in 60.

    A collective (NCCL's) is never chosen, and its time is not counted: the trace times it,
    and replayed under Nsight Compute it would wait for peers that are not replaying it
    (ranks whose launches ncu serialises never finish a collective)."""
    kernels = [k for k in kernels if not is_collective(k.kernel)]
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


def pass2_estimate_s(shapes: int) -> float:
    """About how long pass 2's profiled launches take, one per launch shape it profiles
    (profiled_shapes)."""
    return PASS2_S_PER_LAUNCH * shapes


def profiled_shapes(profiled: list[KernelTime], launches: list[Launch], skip: int = 0) -> int:
    """How many launch shapes pass 2 profiles for the ``profiled`` kernels: every shape of
    their functions that pass 1's ``launches`` hold after the first ``skip``, the trials
    of cuDNN's benchmark among them (Nsight Compute selects by name); one a kernel at
    least. A ResNet-50 step's 93 chosen kernels (H200): 155 shapes, 160 launches profiled,
    without the skip; a last batch of another size brings the benchmark back after the
    second step, so no skip (DCGAN: 77 kernels, 152 launches, 43 s where 0.3 s a kernel
    had said 23 s)."""
    functions = {name_key(k.kernel) for k in profiled}
    shapes = {(name_key(x.name), x.grid, x.block) for x in launches[skip:]
              if name_key(x.name) in functions}
    return max(len(shapes), len(profiled))
