"""One view of a job from its ranks' documents (issue 49, items 2 and 3): each rank's kernel
time beside its collectives, the same kernel's time on every rank side by side, the
straggler, the rank the others wait for, and the collectives on the interconnect's roof
(judge/collectives.py).

The ranks of a data-parallel job meet at every collective, so their steps take the same
wall time whichever is slow. The rank that comes late to them is the one whose collectives
wait least: every other rank's collective kernels wait for it, and that wait is their
exposed time (formats/trace_timing.py's Communication). Its own kernels are not always why:
on two H200s a DDP step's rank 0 came late every step while its kernels took 11 % less GPU
time than rank 1's, whose GEMMs ran beside its own waiting collectives (a waiting NCCL
kernel holds SMs) and so took longer; a late rank whose kernels take no longer than the
others' is delayed on the host (Python, launches, data). Where the job's collectives ran on
the host (gloo) or not at all, no kernel waits, and the straggler is the rank whose own
kernels take the longest. Either way the kernels named are those whose time on it
exceeds their time on the other ranks the most.

Where every rank's steps were found (formats/trace_timing.py: ProfilerStep#N, or the rank's
own kernels), the ranks are compared a step, over their steps after the first: the first
holds the job's start-up, whose wait (DDP's first all-reduce for the slowest rank to come
up: 109 ms of the two H200s' job's 193 ms exposed) would otherwise be judged as a
straggler's, not the 6.3 ms a step rank 1 waited for rank 0 every step after it.

The documents are each a rank's own profile (formats/ranks.py): written together by one
profile of a launcher's job, or one a node by profiles that ran on several machines, and
merged here, so a job of any size is read the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from statistics import median

from rooflint.common.errors import RooflintError
from rooflint.formats.ranks import RankInfo
from rooflint.formats.results import RunResult
from rooflint.judge.collectives import Placement, placement

# A rank whose kernels take this much longer than the median of the other ranks' is a
# straggler, and so is one the others' collectives wait for this share of the ranks' kernel
# time: two runs of one rank's step differ by a percent or two (the profiles of one program
# on one H200, docs/history.md), so 5 % is a rank that is slower, not noise.
STRAGGLER_MARGIN = 0.05
STRAGGLER_KERNELS = 3       # the kernels named as what makes a straggler slower


@dataclass
class RankTime:
    """A rank's GPU time, a step's where the job's are (Job.steps), else over the profiled
    region: its own kernels, and its collectives with the part no other kernel of it
    overlapped."""

    rank: RankInfo
    compute_s: float
    collective_s: float
    exposed_s: float


@dataclass
class KernelAcross:
    """A chosen kernel's GPU time on each rank (None: not among that rank's chosen kernels)."""

    name: str                       # the variant's name in every rank's document
    seconds: list[float | None]

    @property
    def spread(self) -> float | None:
        """The slowest rank's time over the fastest's, less one; None on fewer than two."""
        times = [s for s in self.seconds if s is not None]
        return max(times) / min(times) - 1 if len(times) > 1 and min(times) > 0 else None


@dataclass
class Straggler:
    rank: RankInfo
    excess: float                       # its kernels' time over the others' median, less one
    extra_s: float                      # that excess in seconds (as RankTime's: a step's or not)
    kernels: list[tuple[str, float]]    # the kernels it spent the most extra time in, over the
    #                                     whole run (each kernel's time is its profile's)
    waited_s: float                     # how much longer the others' collectives were exposed

    @property
    def by_its_kernels(self) -> bool:
        """Its own kernels make it late (else the host does: it came late to collectives
        with kernels that take no longer than the others')."""
        return self.excess >= STRAGGLER_MARGIN


@dataclass
class Job:
    ranks: list[RankTime]
    kernels: list[KernelAcross]         # the most GPU time over all ranks first
    straggler: Straggler | None
    results: list[RunResult]            # the ranks' documents, in rank order
    # the steps each rank's figures are a step of (the mean over the ranks, their first
    # step included: the figures are over the ones after it); 0: over the whole region
    steps: int = 0
    # the collectives the ranks' documents matched to NCCL's calls, on the interconnect's
    # roof (judge/collectives.py); None where none holds any
    collectives: Placement | None = None


def job_of(results: list[RunResult], names: list[str]) -> Job:
    """The job the ranks' documents ``results`` (read from ``names``) make: each must be a
    rank's own profile, each rank once."""
    for result, name in zip(results, names):
        if result.rank is None:
            raise RooflintError(f"{name}: not a rank's document (a profile of a program "
                                f"whose kernels ran in several processes writes one for "
                                f"each rank beside its --json)")
    other = next((i for i, r in enumerate(results) if _command(r) != _command(results[0])), None)
    if other is not None:
        raise RooflintError(f"{names[0]} and {names[other]} are ranks of different programs "
                            f"({_command(results[0])!r}, {_command(results[other])!r}): give "
                            f"the rank documents of one job")
    ordered = sorted(results, key=lambda r: _order(r.rank))
    keys = [_key(r.rank) for r in ordered]
    repeated = next((r.rank for r, key in zip(ordered, keys) if keys.count(key) > 1), None)
    if repeated is not None:
        raise RooflintError(f"{_where(repeated)} is in more than one of the documents")
    steps = _steps(ordered)
    ranks = [_rank_time(r, bool(steps)) for r in ordered]
    kernels = _kernels_across(ordered)
    return Job(ranks, kernels, _straggler(ranks, kernels), ordered, steps,
               placement([r.collectives for r in ordered if r.collectives]))


def _steps(results: list[RunResult]) -> int:
    """The ranks' steps where every rank's were found (two or more), else 0."""
    found = [r.program.communication.steps if r.program and r.program.communication else 0
             for r in results]
    return round(median(found)) if found and min(found) >= 2 else 0


def is_job(results: list[RunResult]) -> bool:
    """Whether ``results`` are two or more rank documents of one job: each a rank's, each
    rank once, all of one program (two profiles' rank 0, or ranks of two programs, are
    compared, not merged)."""
    keys = [_key(r.rank) for r in results if r.rank is not None]
    return len(results) > 1 and len(keys) == len(results) and len(set(keys)) == len(keys) \
        and len({_command(r) for r in results}) == 1


def _command(result: RunResult) -> str:
    """The command a rank's document was profiled under: one job's ranks share it (a
    launcher's, or on each node the same ``python train.py``)."""
    return " ".join(result.settings.command or [])


def _order(rank: RankInfo | None) -> tuple:
    assert rank is not None
    return rank.rank is None, rank.rank or 0, rank.host, rank.process


def _key(rank: RankInfo | None) -> tuple:
    """What tells ranks apart: the launcher's number, else the process on its host."""
    assert rank is not None
    return (rank.rank,) if rank.rank is not None else (rank.host, rank.process)


def _where(rank: RankInfo) -> str:
    return f"{rank.label} on {rank.host}" if rank.host else rank.label


def _rank_time(result: RunResult, a_step: bool) -> RankTime:
    """The rank's times, a step's where ``a_step`` (every rank's steps known)."""
    assert result.rank is not None
    communication = result.program.communication if result.program else None
    if a_step and communication:
        return RankTime(result.rank, communication.step_kernels_s,
                        communication.step_collective_s, communication.step_exposed_s)
    collective = communication.collective_s if communication else 0.0
    exposed = communication.exposed_s if communication else 0.0
    total = result.settings.gpu_time_s or 0.0
    return RankTime(result.rank, max(total - collective, 0.0), collective, exposed)


def _kernels_across(results: list[RunResult]) -> list[KernelAcross]:
    """Every chosen kernel of any rank, with its time on each: one kernel is one name at
    one launch shape, whatever name its rank's document gave it (a name tells apart the
    shapes of one function among that rank's chosen kernels, which differ between ranks)."""
    names: dict[tuple[str, str, str], str] = {}
    times: dict[tuple[str, str, str], list[float | None]] = {}
    for i, result in enumerate(results):
        for variant in result.families[0].variants:
            share = variant.share
            if share is None:
                continue
            key = (share.kernel, share.grid, share.block) if share.grid else (variant.name, "", "")
            names.setdefault(key, variant.name)
            times.setdefault(key, [None] * len(results))[i] = share.total_s
    taken = Counter(names.values())
    across = [KernelAcross(names[key] if taken[names[key]] == 1 else f"{names[key]} {key[1]}",
                           seconds) for key, seconds in times.items()]
    return sorted(across, key=lambda k: -sum(s or 0.0 for s in k.seconds))


def _straggler(ranks: list[RankTime], kernels: list[KernelAcross]) -> Straggler | None:
    """The rank the others wait for (see the top); None with fewer than two ranks or none
    that late."""
    if len(ranks) < 2:
        return None
    if any(r.collective_s for r in ranks):
        late = min(range(len(ranks)), key=lambda i: ranks[i].exposed_s)
        waited = median(r.exposed_s for i, r in enumerate(ranks) if i != late) \
            - ranks[late].exposed_s
        if waited < STRAGGLER_MARGIN * median(r.compute_s for r in ranks):
            return None
        return _slower(late, ranks, kernels, waited)
    slowest = max(range(len(ranks)), key=lambda i: ranks[i].compute_s)
    straggler = _slower(slowest, ranks, kernels, 0.0)
    return straggler if straggler and straggler.by_its_kernels else None


def _slower(i: int, ranks: list[RankTime], kernels: list[KernelAcross],
            waited_s: float) -> Straggler | None:
    """Rank ``i`` against the others: its kernels' time over their median, and the kernels
    it spends the most extra time in."""
    usual = median(r.compute_s for j, r in enumerate(ranks) if j != i)
    if usual <= 0:
        return None
    extra = [(k.name, k.seconds[i] - median(s or 0.0 for j, s in enumerate(k.seconds) if j != i))
             for k in kernels if k.seconds[i] is not None]
    named = sorted((e for e in extra if e[1] > 0), key=lambda e: -e[1])[:STRAGGLER_KERNELS]
    return Straggler(ranks[i].rank, ranks[i].compute_s / usual - 1,
                     ranks[i].compute_s - usual, named, max(waited_s, 0.0))
