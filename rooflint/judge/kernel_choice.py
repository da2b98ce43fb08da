"""Which of a program's kernels pass 2 profiles: those that cover ``coverage`` of its GPU
time, or the ``top`` N, each with its siblings at the function's other launch shapes, and
what profiling them costs."""

from __future__ import annotations

from dataclasses import dataclass

from rooflint.formats.settings import DEFAULT_COVERAGE
from rooflint.formats.trace_events import Launch
from rooflint.judge.kernel_libraries import is_collective
from rooflint.judge.kernel_names import function_name, name_key
from rooflint.judge.kernel_times import Identity, KernelTime

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
    their functions that pass 1's ``launches`` hold after the first ``skip`` (_first_shapes),
    the trials of cuDNN's benchmark among them (Nsight Compute selects by name); one a
    kernel at least. A ResNet-50 step's 93 chosen kernels (H200): 155 shapes, 160 launches
    profiled, without the skip; DCGAN, where the skip had to end before its last, smaller
    batch brought the benchmark back (autotuning.launches_to_skip): 77 kernels, 152
    launches, 43 s where 0.3 s a kernel had said 23 s."""
    return max(len(_first_shapes(profiled, launches, skip)), len(profiled))


def _first_shapes(profiled: list[KernelTime], launches: list[Launch], skip: int) -> list[Launch]:
    """The first launch of each shape of the ``profiled`` kernels' functions after the
    first ``skip`` of ``launches``, in launch order: what pass 2 profiles, one launch each."""
    functions = {name_key(k.kernel) for k in profiled}
    seen: set[Identity] = set()
    first = []
    for x in launches[skip:]:
        shape = (name_key(x.name), x.grid, x.block)
        if shape[0] in functions and shape not in seen:
            seen.add(shape)
            first.append(x)
    return first


# Pass 2 ends its program once its launches are profiled only where it would run this long
# after the last of them under Nsight Compute (EarlyEnd.under_ncu_s): the end costs its
# report's reading (0.4-0.5 s), and ending it sooner saves nothing worth the risk.
EARLY_END_AFTER_S = 2.0
# What Nsight Compute adds to each launch pass 2 does not profile, its selection checked
# against the launch: the ResNet-50 step's 11 steps after its last profiled launch took
# 2.9 s under pass 2's selection and metrics (252 ms a step of about 430 launches) against
# 20 ms a step plain (H200, 2026-11-30; a loop of 140,000 launches under one short filter
# paid 0.2 ms each).
NCU_LAUNCH_S = 0.5e-3


@dataclass(frozen=True)
class EarlyEnd:
    """Where pass 2 can end its program: once it has profiled launches of these functions,
    in this order (each the first of its launch shape, as Nsight Compute profiles them),
    the last of them the last chosen kernel's first launch; pass 1's program ran
    ``after_s`` longer (its last launch's start) and launched ``launches_after`` more."""

    functions: tuple[str, ...]
    after_s: float
    launches_after: int = 0

    @property
    def under_ncu_s(self) -> float:
        """About how long pass 2's program would run on: pass 1's time and Nsight
        Compute's on each later launch (NCU_LAUNCH_S)."""
        return self.after_s + self.launches_after * NCU_LAUNCH_S


def early_end(profiled: list[KernelTime], launches: list[Launch], skip: int = 0
              ) -> EarlyEnd | None:
    """Where pass 2 can end its program (EarlyEnd), from pass 1's ``launches`` in launch
    order: after the launch that profiles the last of the ``profiled`` kernels' shapes to
    come, where the program would run on EARLY_END_AFTER_S or more after it under Nsight
    Compute (EarlyEnd.under_ncu_s); None where every launch matters to the end (a last
    batch's kernels, an evaluation's at its own shapes), under a CUDA graph (whose launches
    Nsight Compute counts otherwise), or with no launches (Nsight Compute timed pass 1)."""
    if not launches or any(x.graph for x in launches):
        return None
    wanted = {k.identity for k in profiled}
    first = _first_shapes(profiled, launches, skip)
    for i, x in enumerate(first):
        wanted.discard((name_key(x.name), x.grid, x.block))
        if not wanted:
            end = EarlyEnd(tuple(function_name(y.name) for y in first[:i + 1]),
                           (launches[-1].start_us - x.start_us) * 1e-6,
                           sum(1 for y in launches if y.start_us > x.start_us))
            return end if end.under_ncu_s >= EARLY_END_AFTER_S else None
    return None
