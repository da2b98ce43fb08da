"""A profiled program's kernels rolled up into the changes its user can make, each with the
time it could save (issue 47): the program's answer, built on the per-kernel verdicts.

Kernels are grouped by what the user can change: the operator family that launched them
(an operator and its backward together: ``native_layer_norm`` and
``native_layer_norm_backward`` are one family, and a backward kernel's line is its forward
operator's, so forward and backward share their source lines) and their library. A fix
that takes its lines (the LM head's loss) first claims the element-wise kernels launched
from the lines its operators ran at (the logits' up-cast beside the loss), and a fix that
takes its functions those launched from lines in them (a Llama's RMSNorm, ten element-wise
kernels in ``LlamaRMSNorm.forward``; the logits' up-cast in ``ForCausalLMLoss``); never a
compiled program's Triton kernels, fused already. Each group is
matched against the catalog (analysis/program_fixes.py); a group no entry matches gets the
reason why none does. Groups of one fix add up into one :class:`ProgramFixResult`.

How a saving is estimated, by the entry's :class:`Saving`:

- fusion: the group's time less the time its remaining compulsory bytes take at the DRAM
  roof. Nobody counted a profiled kernel's compulsory bytes, so the remaining bytes are
  approximated, for the forward kernels and for the backward kernels apart (autograd runs
  them as two passes, which no fusion merges), by the DRAM bytes of that pass's largest
  kernel (by time), all its launches: the fused kernel must still move at least what the
  largest step of the chain moved. A largest kernel without counters keeps its whole time.
- removal: the kernels go (casts the program need not make): their whole time.
- roof distance: each kernel's own upside (judge/upside.py, capped there), summed; a kernel
  without counters adds nothing.
- raise the roof: kernels at their roof (evidence.AT_ROOF) save half their time under a roof
  twice as high (fp8's tensor roof over bf16's); kernels below it save nothing from it.
- none: nothing is estimated.

A job's communication fixes are not for kernels: NCCL's kernels are timed from the trace,
never profiled. What they act on is the exposed collective time of the rank that waits
least, a step's times the steps (formats/trace_timing.Communication): the last rank to
arrive waits only for the transfer, so that is the interconnect's time on the job's
critical path; the others' exposed time beyond it is their wait for that rank, which the
job view's straggler line names, and no communication setting saves. Where the ranks take
turns being late, the rank that waits least waits too, so it is taken at most at the
collectives' own time (each call the shortest of its ranks' kernels): an FSDP2 job on two
H200s, its steps bound by their hosts, exposed 22.9 ms a step on the rank that waits
least, where its calls took 0.84 ms; its two fixes, offered at 17.6 and 4.4 ms a step on
each rank on the whole exposed time, bought 5.5 and 1.7 ms
(benchmarks/results/h200x2/fsdp-fixes.json).
A fix that names its collectives acts on their share of the collectives' time. Of it:

- exposed: all of it, overlapped with compute (prefetching a sharded model's all-gathers),
  at most the ranks' compute over the region: communication hidden behind kernels can be no
  longer than they are;
- exposed below the roof: its collectives' time below the interconnect's roof, the roof
  for their kind (`rooflint calibrate`) over the bus bandwidth they reached, weighted by
  their time (larger buckets bring a call nearer its roof);
- once-a-step work, once a batch: all but one in ACCUMULATION of what a step does once
  whatever its batch: the host's time outside the forward and backward passes on the rank
  that waits least (the optimizer's step, clipping, zeroing, a logging synchronisation:
  Communication.step_host_once_s), or, where longer, the gradients' reductions exposed
  (all-reduces and reduce-scatters: a sharded model's all-gathers run for every
  micro-step) and the optimizer's kernels. A host-bound step saves the first (nanoGPT's
  DDP job: the host's 5.3 ms a step, where its exposed all-reduces were 0.21 ms; 5.4 ms a
  micro-step bought), a GPU-bound one the second.

Every rank saves it, so a job's saving is the ranks' (its GPU time is every rank's).
Gradients all-reduced in bf16 are not offered: on two H200s over NVLink DDP's
bf16_compress_hook made a step 11 ms slower (docs/history.md), where half the bytes
promised 3.6 ms less.

Where an entry names its collectives (``collectives``), the job's placed collectives
(judge/collectives.py: NCCL's log read) must hold more than half their time in those it
names (accumulation's need only be there); without them only the entries that name none,
and accumulation, are given.

Savings are over the profiled region, as the shares are; the summary says them a step
where the profile found its steps (output/program_summary.py). A kernel fix's share is of
the region's GPU time; every fix's saving, a kernel's or the job's communication's, is a
share of that time and the job's exposed communication together (spent_s), so that the
percentages of one list compare as the savings do. One fix is for the program's
time, not for kernels: CUDA graphs, where the steps' GPU waited on the host's launches
(:func:`launch_bound_fixes`), with no saving claimed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace

from rooflint.analysis import caller_moves as library_moves
from rooflint.analysis.evidence import AT_ROOF
from rooflint.analysis.program_fixes import (ACCUMULATION, COMMUNICATION, FIXES_BY_ID,
                                             PROGRAM_FIXES, Kind, ProgramFix, Saving, fix_for,
                                             kind_of)
from rooflint.formats.results import FixLine, ProgramFixResult, RunResult, VariantResult
from rooflint.formats.trace_events import Origin
from rooflint.formats.trace_timing import Communication
from rooflint.judge.collectives import PlacedCollective, Placement, placement

NO_FIX = "none"
NO_LINE = "no source line"
RAISED_ROOF = 2.0           # fp8's tensor roof over bf16's
CLAIMABLE = (Kind.ELEMENT_WISE, Kind.CASTS, Kind.REDUCTIONS)   # what a line's fix can take
HEAD_REACH = 3              # lines above a claimed line where the GEMM feeding it may be
LAUNCH_BOUND = 0.1          # of the steps' wall time idle on the host's launches: graphs


@dataclass(frozen=True)
class KernelGroup:
    """Kernels the user changes together: one operator family and library, or the kernels a
    fix that takes its lines claimed (``claimed_by``)."""

    family: str
    library: str | None
    variants: tuple[VariantResult, ...]
    claimed_by: ProgramFix | None = None

    @property
    def operators(self) -> list[str]:
        return sorted({name for v in self.variants for o in origins(v)
                       for name in (o.operator, o.backward_of) if name})

    @property
    def total_s(self) -> float:
        return sum(v.share.total_s for v in self.variants if v.share)

    @property
    def at_roof(self) -> bool:
        """Most of its time in kernels at their nearest roof."""
        at = sum(v.share.total_s for v in self.variants if v.share and is_at_roof(v))
        return at > self.total_s / 2


def origins(v: VariantResult) -> list[Origin]:
    return v.share.origins if v.share else []


def is_at_roof(v: VariantResult) -> bool:
    return bool(v.share and (v.share.best_fraction or 0.0) >= AT_ROOF)


def operator_family(origin: Origin | None) -> str:
    """An operator's family, its backward with it: ``aten::native_layer_norm_backward`` and
    ``aten::native_layer_norm`` are ``layer_norm``; ``no operator`` where none launched it."""
    name = (origin.operator or origin.backward_of or "") if origin else ""
    name = re.sub(r"^aten::|^native_", "", name).strip("_")
    name = re.sub(r"^(native|cudnn)_", "", name)
    return re.sub(r"_(backward|forward)(_data|_input|_weight)?$", "", name) or "no operator"


def main_origin(v: VariantResult) -> Origin | None:
    """The origin with the most launches (the list is ordered so already)."""
    return max(origins(v), key=lambda o: o.launches, default=None)


def kernel_kind(v: VariantResult) -> Kind:
    return kind_of(v.share.kernel if v.share else v.name, v.share.library if v.share else None)


def claimed_lines(variants: list[VariantResult]) -> dict[str, ProgramFix]:
    """The source lines a fix that takes its lines claims: those its own operators (or,
    compiled, its kernels' names) ran at."""
    claims: dict[str, ProgramFix] = {}
    for fix in (f for f in PROGRAM_FIXES if f.takes_its_lines):
        for v in variants:
            if fix.matches(grouped_operators(v), [v.share.kernel], None):
                claims.update({o.line: fix for o in origins(v) if o.line})
    return claims


def head_claim(line: str | None, claims: dict[str, ProgramFix]) -> ProgramFix | None:
    """The fix that claims the GEMM launched at ``line`` as the head that feeds it (the LM
    head's GEMM, which a fused linear cross-entropy computes in its place): one in a
    function its ``head`` names, or one just above (HEAD_REACH lines) a line it claims, in
    the same function."""
    if not line or " in " not in line:
        return None
    where, function = line.rsplit(" in ", 1)
    for fix in {id(f): f for f in claims.values() if f.head}.values():
        if re.search(fix.head, function):
            return fix
    file, _, number = where.rpartition(":")
    if not number.isdigit():
        return None
    return next((claims[other] for other in claims if claims[other].head
                 and other.endswith(f" in {function}") and _line_number(other, file)
                 in range(int(number) + 1, int(number) + 1 + HEAD_REACH)), None)


def _line_number(line: str, file: str) -> int:
    """``train_step.py:53 in Model.forward`` -> 53 where its file is ``file``; else -1."""
    where = line.rsplit(" in ", 1)[0]
    other, _, number = where.rpartition(":")
    return int(number) if other == file and number.isdigit() else -1


def function_claim(line: str | None) -> ProgramFix | None:
    """The fix that claims the kernels of a source line by the function it is in (``in
    LlamaRMSNorm.forward``: a fused normalisation), if any."""
    function = line.rsplit(" in ", 1)[-1] if line and " in " in line else None
    return next((f for f in PROGRAM_FIXES if function and f.functions
                 and re.search(f.functions, function)), None)


def is_eager(v: VariantResult) -> bool:
    """Not a compiled program's Triton kernel: fused already, whatever its line."""
    return v.share is not None and v.share.library != library_moves.INDUCTOR


def grouped_operators(v: VariantResult) -> list[str]:
    return [name for o in origins(v) for name in (o.operator, o.backward_of) if name]


def groups_of(variants: list[VariantResult]) -> list[KernelGroup]:
    """A profile's kernels by what the user can change (the module's docstring)."""
    claims = claimed_lines(variants)
    members: dict[tuple, list[VariantResult]] = defaultdict(list)
    for v in variants:
        line = (main_origin(v) or Origin(None, None)).line
        fix = function_claim(line) or claims.get(line or "")
        head = head_claim(line, claims) if kernel_kind(v) is Kind.GEMM else None
        if head is not None:
            members[(head.id, None, head.id)].append(v)
        elif fix and kernel_kind(v) in CLAIMABLE and is_eager(v):
            members[(fix.id, None, fix.id)].append(v)
        else:
            members[(operator_family(main_origin(v)), v.share.library, None)].append(v)
    return [KernelGroup(family, library, tuple(vs), FIXES_BY_ID.get(claimed or ""))
            for (family, library, claimed), vs in members.items()]


def group_fix(group: KernelGroup) -> ProgramFix | None:
    """The catalog's fix for a group: the one that claimed it, else the first that matches."""
    return group.claimed_by or fix_for(group.operators, [v.share.kernel for v in group.variants],
                                       group.library, group.at_roof)


def saving(fix: ProgramFix, group: KernelGroup) -> float:
    """The time a fix could save on a group, as the module's docstring says, of its kernels
    in which the change is not made already (ProgramFix.made)."""
    group = replace(group, variants=tuple(v for v in group.variants if not made(fix, v)))
    if not group.variants:
        return 0.0
    if fix.saving is Saving.FUSION:
        return max(0.0, group.total_s - remaining_s(group))
    if fix.saving is Saving.REMOVAL:
        return group.total_s
    if fix.saving is Saving.ROOF_DISTANCE:
        return sum(v.share.upside_s or 0.0 for v in group.variants)
    if fix.saving is Saving.RAISE_ROOF:
        return sum(v.share.total_s for v in group.variants if is_at_roof(v)) * (1 - 1 / RAISED_ROOF)
    return 0.0


def made(fix: ProgramFix, v: VariantResult) -> bool:
    """Whether the fix's change is made already in a kernel (ProgramFix.made)."""
    return fix.made_in(str(v.precision), v.share.kernel)


def remaining_s(group: KernelGroup) -> float:
    """The time the fused kernels still take: forward and backward fuse apart (autograd
    runs them as two passes), each pass's fused kernel at least its largest kernel's DRAM
    bytes (all its launches) at the DRAM roof, or that kernel's whole time where it has no
    counters."""
    passes = ([v for v in group.variants if is_backward(v) is backward] for backward in (False,
                                                                                     True))
    return sum(largest_remaining_s(variants) for variants in passes if variants)


def is_backward(v: VariantResult) -> bool:
    """Launched by autograd's backward (its main origin has an autograd node)."""
    origin = main_origin(v)
    return bool(origin and origin.backward_of)


def largest_remaining_s(variants: list[VariantResult]) -> float:
    """A pass's remaining time: its GEMMs whole (a fusion does not take away their FLOPs:
    a fused linear cross-entropy still computes the LM head), and its largest other
    kernel's bytes at the DRAM roof."""
    gemms = [v for v in variants if kernel_kind(v) is Kind.GEMM]
    rest = [v for v in variants if kernel_kind(v) is not Kind.GEMM]
    return sum(v.share.total_s for v in gemms) + (largest_moved_s(rest) if rest else 0.0)


def largest_moved_s(variants: list[VariantResult]) -> float:
    largest = max(variants, key=lambda v: v.share.total_s)
    moved = largest.dram_bytes.get("ncu")
    if moved is None or largest.roofs is None:
        return largest.share.total_s
    return min(largest.share.total_s, moved * largest.share.launches / largest.roofs.dram_bandwidth)


def line_shares(variants: list[VariantResult], region_s: float) -> list[FixLine]:
    """The kernels' GPU time by the source line that launched it (a kernel's time split over
    its origins by their launches), the most first."""
    shares: dict[str, float] = defaultdict(float)
    for v in variants:
        launches = sum(o.launches for o in origins(v)) or 1
        for o in origins(v) or [Origin(None, None, launches=1)]:
            shares[o.line or NO_LINE] += v.share.total_s * o.launches / launches / region_s
    return [FixLine(line, share) for line, share in sorted(shares.items(), key=lambda x: -x[1])]


def no_fix(group: KernelGroup) -> ProgramFix:
    """The stated reason a group gets no fix: no catalog entry is for its kernels."""
    return ProgramFix(NO_FIX, None, f"no program fix in the catalog for "
                      f"{group.library or 'the program'}'s {group.family} kernels", Saving.NONE)


def roll_up(result: RunResult, collectives: Placement | None = None) -> list[ProgramFixResult]:
    """A profile's program fixes, the most saving first, the job's communication fixes among
    them (``collectives``: its placed collectives, where NCCL's log was read); none for a
    result that is not a profile's."""
    variants = [v for f in result.families for v in f.variants if v.share]
    region = result.settings.gpu_time_s or sum(v.share.total_s for v in variants)
    if not (variants and region):
        return []
    by_fix: dict[str, list[tuple[ProgramFix, KernelGroup]]] = defaultdict(list)
    for group in groups_of(variants):
        fix = group_fix(group) or no_fix(group)
        by_fix[fix.id + (fix.why if fix.id == NO_FIX else "")].append((fix, group))
    found = result.program.communication if result.program else None
    fixes = [fix_result(pairs, region, spent_s(found, region)) for pairs in by_fix.values()]
    if found:
        optimizer = sum(v.share.total_s for v in variants if kernel_kind(v) is Kind.OPTIMIZER)
        fixes += communication_fixes(found, collectives, region, optimizer)
    return sorted(fixes, key=lambda f: (-f.saving_s, -f.share)) + launch_bound_fixes(result)


def spent_s(found: Communication | None, region_s: float) -> float:
    """What every fix's saving is a share of: the region's GPU time (every rank's) and, in a
    job, the exposed communication on its critical path (every rank's; ``found``), which a
    communication fix saves and no kernel's time holds. One measure for all of them, so
    that their percentages compare as their savings do (nanoGPT under torchrun had read
    9.43 ms at 33.5 % beside 2.98 ms at 19.2 %). Where the host's once-a-step time is
    longer than those waits (host_once_s), it is what the steps spend beside their GPU
    time, and what accumulation saves from: four ranks of an FSDP2 job, whose host took
    13.5 ms a step outside forward and backward where 1.31 ms was exposed, had read
    accumulation's 11 ms a step as 160.5 % (of the GPU time and the waits)."""
    if not found:
        return region_s
    exposed = exposed_on_the_critical_path(found) * found.ranks
    return region_s + max(exposed, host_once_s(found), 0.0)


def exposed_on_the_critical_path(found: Communication) -> float:
    """The exposed time of the rank that waits least over the region: a step's times the
    steps where they are known (the first step's start-up wait is no collective's), else
    the region's."""
    return (found.step_least_exposed_s * found.steps if found.steps >= 2
            else found.least_exposed_s)


def communication_fixes(found: Communication, collectives: Placement | None,
                        region_s: float, optimizer_s: float) -> list[ProgramFixResult]:
    """The catalog's communication fixes that are for this job (the module's docstring;
    ``region_s``: every rank's GPU time over the region, collectives at their calls' own
    time (Communication.counted_s);
    ``optimizer_s``: the optimizer's kernels' time over the region). A fix's shares (of
    what it acts on and of what it saves) are of that GPU time and the exposed time
    together: what it saves is mostly waiting, which the GPU time does not hold (nanoGPT
    compiled under torchrun: 19.4 ms a step saved, 155 % of its GPU time, 51 % of both)."""
    exposed = exposed_on_the_critical_path(found)
    if exposed <= 0:
        return []
    spent = spent_s(found, region_s)
    transferred = min(exposed, found.counted_s) * found.ranks
    fixes = []
    for fix in (f for f in PROGRAM_FIXES if f.saving in COMMUNICATION):
        named = named_collectives(fix, collectives)
        share = acted_share(fix, named, collectives)
        if share is None:
            continue
        subject = transferred * share
        saved = subject * communication_factor(fix, named)
        if fix.saving is Saving.EXPOSED:
            saved = min(saved, max(region_s - found.counted_s * found.ranks, 0.0))
        if fix.saving is Saving.EXPOSED_ONCE:
            subject = max(subject + optimizer_s, host_once_s(found))
            saved = subject * (1.0 - 1.0 / ACCUMULATION)
        if saved > 0:
            fixes.append(ProgramFixResult(
                id=fix.id, action=fix.action, why=fix.why, estimate=fix.saving.value,
                kernels=[], lines=[], share=subject / spent, saving_s=saved,
                saving_share=saved / spent, changes_precision=fix.changes_precision))
    return fixes


def host_once_s(found: Communication) -> float:
    """The host's time outside the forward and backward passes of the rank that waits
    least, over the region, every rank's (each rank spends it): a step's times the steps."""
    return found.step_host_once_s * found.steps * found.ranks if found.steps >= 2 else 0.0


def acted_share(fix: ProgramFix, named: list[PlacedCollective], collectives: Placement | None
                ) -> float | None:
    """The share of the job's collective time a fix acts on: its ``named`` collectives' (every
    one where it names none); None where it is not for this job: it names some, and they
    hold no more than half the job's collective time, or its collectives are unknown.
    Accumulation is for any job, and acts on its gradients' reductions alone (a sharded
    model's all-gathers run again for every micro-step): all its collectives where they
    are unknown."""
    if fix.collectives is None:
        return 1.0
    total = sum(c.seconds for c in collectives.collectives) if collectives else 0.0
    if not total:
        return 1.0 if fix.saving is Saving.EXPOSED_ONCE else None
    share = sum(c.seconds for c in named) / total
    return share if fix.saving is Saving.EXPOSED_ONCE or share > 0.5 else None


def named_collectives(fix: ProgramFix, collectives: Placement | None) -> list[PlacedCollective]:
    """The job's placed collectives a fix names (every one where it names none)."""
    placed = collectives.collectives if collectives else []
    return [c for c in placed if fix.collectives is None
            or re.search(fix.collectives, f"{c.collective} {c.datatype}")]


def communication_factor(fix: ProgramFix, named: list[PlacedCollective]) -> float:
    """The share of the time a fix acts on that it saves (the module's docstring), from the
    collectives it names."""
    if fix.saving is not Saving.EXPOSED_BELOW_ROOF:
        return 1.0
    placed = [c for c in named if c.of_roof is not None]
    if not placed:
        return 0.0
    of_roof = sum(c.seconds * (c.of_roof or 0.0) for c in placed) / sum(c.seconds for c in placed)
    return max(0.0, 1.0 - of_roof)


def launch_bound_fixes(result: RunResult) -> list[ProgramFixResult]:
    """CUDA graphs, where the steps' GPU waited on the host's launches LAUNCH_BOUND of their
    time or more; no saving estimated: the trace was timed under the profiler, which slows
    the host (a training step took 27.5 ms a step there, 7.4 ms alone), so only a plain
    step's time says how much a graph would save."""
    program = result.program
    if program is None or not program.wall_s or program.idle.launch_s < LAUNCH_BOUND * \
            program.wall_s:
        return []
    fix = FIXES_BY_ID["cuda_graphs"]
    return [ProgramFixResult(id=fix.id, action=fix.action, why=fix.why,
                             estimate=fix.saving.value, kernels=[], lines=[], share=0.0,
                             saving_s=0.0, saving_share=0.0)]


def fix_result(pairs: list[tuple[ProgramFix, KernelGroup]], region_s: float,
               spent: float) -> ProgramFixResult:
    """One fix's groups added up into the document's record: its kernels' shares of the
    region's GPU time, its saving's of ``spent`` (spent_s)."""
    fix = pairs[0][0]
    variants = [v for _, g in pairs for v in g.variants]
    saved = sum(saving(f, g) for f, g in pairs)
    return ProgramFixResult(
        id=fix.id, action=fix.action, why=fix.why, estimate=fix.saving.value,
        kernels=[v.name for v in variants], lines=line_shares(variants, region_s),
        share=sum(v.share.total_s for v in variants) / region_s, saving_s=saved,
        saving_share=saved / spent, changes_precision=fix.changes_precision,
        made=sum(made(fix, v) for v in variants))


@dataclass(frozen=True)
class CompileEstimate:
    """What torch.compile would save a program that is not compiled: the fixes it makes at
    once (the catalog's ``by_compile``), by their ids, and their savings as compile makes
    them, summed."""

    fixes: list[str]
    saving_s: float


def compile_saving(fix: ProgramFixResult, variants: dict[str, VariantResult]) -> float:
    """What torch.compile saves of a fix it makes: the fix's own estimate where that is a
    fusion's; else (casts it does not remove, only fuses into their neighbours: autocast's
    casts of fp32 weights stay) a fusion's estimate over the fix's kernels."""
    entry = FIXES_BY_ID[fix.id]
    if entry.saving is Saving.FUSION:
        return fix.saving_s
    group = KernelGroup(fix.id, None, tuple(variants[n] for n in fix.kernels if n in variants))
    return saving(replace(entry, saving=Saving.FUSION), group) if group.variants else 0.0


def is_compiled(result: RunResult) -> bool:
    """A profile of a compiled program: some of its kernels are TorchInductor's."""
    return any(v.share and v.share.library == library_moves.INDUCTOR
               for f in result.families for v in f.variants)


def compile_estimate(result: RunResult, fixes: list[ProgramFixResult]) -> CompileEstimate | None:
    """torch.compile's saving for a program not compiled already (no kernel of Inductor's)
    where it makes two fixes or more; None otherwise."""
    if is_compiled(result):
        return None
    variants = {v.name: v for f in result.families for v in f.variants if v.share}
    made = [f for f in fixes if f.id in FIXES_BY_ID and FIXES_BY_ID[f.id].by_compile]
    if len(made) < 2:
        return None
    return CompileEstimate([f.id for f in made], sum(compile_saving(f, variants) for f in made))


def fixes_of(result: RunResult) -> list[ProgramFixResult]:
    """The fixes a result holds, or, for a profile written before results held them,
    rolled up from its kernels."""
    return result.fixes or roll_up(result, placement([result.collectives])
                                   if result.collectives else None)
