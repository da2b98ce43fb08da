"""What `profile` of a job of several ranks and `show RANK.json ...` print for the job
(judge/ranks.py): each rank's kernel time beside its collectives, the straggler with the
kernels that make it slower, the collectives on the interconnect's roof
(judge/collectives.py), and the top kernels' time on every rank side by side."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rooflint.analysis.evidence import pct
from rooflint.common.units import counted, format_bytes, format_rate, format_time
from rooflint.judge.collectives import PlacedCollective, Placement, latency_bound
from rooflint.judge.ranks import STRAGGLER_MARGIN, Job, KernelAcross, RankTime, Straggler
from rooflint.output.depth import Depth
from rooflint.output.profile_view import TOP_KERNELS
from rooflint.output.roofs import interconnect_line
from rooflint.output.terminal import HEAD_RULE, shortened_names

RANK_COLUMNS = ("rank", "host", "GPU", "kernels", "collectives", "exposed")
COLLECTIVE_COLUMNS = ("collective", "size", "calls", "a call", "bus bandwidth", "of roof")
NO_INTERCONNECT = "no interconnect calibration: run `rooflint calibrate` on this host"


def render_job(console: Console, job: Job, depth: Depth) -> None:
    """The ranks and the straggler; at the default depth the top kernels across ranks, at
    DETAIL every kernel."""
    console.print(Text(ranks_heading(job)))
    console.print(_table(RANK_COLUMNS, [rank_cells(r) for r in job.ranks], left=2))
    console.print(Text(straggler_line(job.straggler, len(job.ranks), bool(job.steps))))
    if depth is Depth.SUMMARY:
        return
    if job.collectives:
        render_collectives(console, job.collectives, depth)
    kernels = job.kernels if depth is Depth.DETAIL else job.kernels[:TOP_KERNELS]
    console.print(Text(kernels_heading(len(kernels), len(job.kernels))))
    console.print(_table(kernel_columns(job), kernel_rows(kernels), left=1))


def ranks_heading(job: Job) -> str:
    """What the ranks' table holds: a step after the first, or the whole region."""
    basis = (f"a step's GPU time (the mean of the {job.steps - 1} steps after the first)"
             if job.steps else "GPU time")
    return (f"{counted(len(job.ranks), 'rank')}: {basis} of each rank's own kernels and of its "
            f"collectives (exposed: no other kernel of the rank ran beside them)")


def kernels_heading(shown: int, kernels: int) -> str:
    which = "all" if shown == kernels else f"top {shown} of"
    return f"{which} {counted(kernels, 'profiled kernel')} by GPU time over the ranks, on each rank"


def straggler_line(straggler: Straggler | None, ranks: int, a_step: bool) -> str:
    """The rank the others wait for, by how much (a step's where ``a_step``), and whether
    its kernels or its host make it late; or that none is."""
    if ranks < 2:
        return "one rank: no other to compare it with"
    each = " a step" if a_step else ""
    if straggler is None:
        return (f"no straggler: no rank's kernels take {pct(STRAGGLER_MARGIN)} longer than "
                f"the other ranks' median, nor do the others' collectives wait that long "
                f"for one{each}")
    waited = (f"the other ranks' collectives wait {format_time(straggler.waited_s)} more for "
              f"it{each}, exposed; " if straggler.waited_s else "")
    if not straggler.by_its_kernels:
        return (f"straggler: {straggler.rank.label}: {waited}its own kernels take no longer "
                f"({_signed(straggler.excess)} of the others' median), so what makes it late "
                f"is on the host (Python, launches, data loading), not its GPU work")
    kernels = ", ".join(f"{shortened_names([name])[name]} (+{format_time(extra)})"
                        for name, extra in straggler.kernels)
    over = " over the whole run" if a_step else ""
    return (f"straggler: {straggler.rank.label}: {waited}its kernels take "
            f"{pct(straggler.excess)} longer than the other ranks' median "
            f"(+{format_time(straggler.extra_s)}{each})"
            + (f", the most{over} in {kernels}" if kernels else ""))


def render_collectives(console: Console, placement: Placement, depth: Depth) -> None:
    """The job's collectives by time (the top ones, every one at DETAIL), each with its
    bus bandwidth and its share of the interconnect's roof, then the roofs and what was
    not placed."""
    shown = placement.collectives if depth is Depth.DETAIL else \
        placement.collectives[:TOP_KERNELS]
    if shown:
        console.print(Text(collectives_heading(len(shown), len(placement.collectives))))
        console.print(_table(COLLECTIVE_COLUMNS, [collective_cells(c) for c in shown], left=1))
    for line in collective_notes(placement, shown):
        console.print(Text(line))


def collectives_heading(shown: int, collectives: int) -> str:
    which = "" if shown == collectives else f"top {shown} of "
    return (f"{which}{counted(collectives, 'collective')} by time, each call's the shortest of "
            f"its ranks' kernels (the rank that came last waited least); bus bandwidth as "
            f"nccl-tests'")


def collective_cells(c: PlacedCollective) -> list[str]:
    bound = "" if c.collective.every_rank_sends else "<= "
    return [f"{c.collective} {c.datatype}", format_bytes(c.size), str(c.calls),
            format_time(c.seconds / c.calls), bound + format_rate(c.bus_bandwidth, "B/s"),
            "-" if c.of_roof is None else f"{c.of_roof:.0%}"]


def collective_notes(placement: Placement, shown: list[PlacedCollective]) -> list[str]:
    """The roofs the ``shown`` collectives are placed against (or that there are none), why
    a row has none, and the NCCL kernels that were not placed."""
    interconnect = placement.interconnect
    notes = [] if not shown else [NO_INTERCONNECT if interconnect is None else
                                  f"roofs: {interconnect_line(interconnect)} (`rooflint "
                                  f"calibrate`)"]
    if any(not c.collective.every_rank_sends for c in shown):
        notes.append("<=: a broadcast's or reduce's receivers send nothing, so one that came "
                     "late may find the data already moved: an upper bound, not on the roof")
    small = {c.collective for c in shown
             if interconnect and latency_bound(interconnect, c.collective, c.size)}
    if small:
        swept = min(r.size for r in interconnect.sweep if r.collective in small)
        notes.append(f"-: smaller than any size `rooflint calibrate` swept "
                     f"({format_bytes(swept)}): its time is NCCL's latency, not the links' "
                     f"bandwidth")
    if interconnect and any(c.ranks > interconnect.gpus for c in shown):
        notes.append(f"-: over more ranks than the host's {interconnect.gpus} GPUs, across "
                     f"hosts, whose links its calibration did not measure")
    if placement.unplaced:
        parts = [f"{count} {why}" for why, count in placement.unplaced.items()]
        notes.append(f"{counted(sum(placement.unplaced.values()), 'NCCL kernel')} not placed: "
                     + "; ".join(parts))
    return notes


def _signed(fraction: float) -> str:
    return ("+" if fraction >= 0 else "-") + pct(abs(fraction))


def rank_cells(r: RankTime) -> list[str]:
    exposed = (f"{format_time(r.exposed_s)} ({pct(r.exposed_s / r.collective_s)})"
               if r.collective_s else "-")
    return [r.rank.label, r.rank.host or "-",
            "-" if r.rank.device is None else str(r.rank.device), format_time(r.compute_s),
            format_time(r.collective_s) if r.collective_s else "-", exposed]


def kernel_columns(job: Job) -> tuple[str, ...]:
    return ("kernel", *(r.rank.label for r in job.ranks), "spread")


def kernel_rows(kernels: list[KernelAcross]) -> list[list[str]]:
    """A row a kernel: its shortened name, its time on each rank, the spread."""
    names = shortened_names(k.name for k in kernels)
    return [[names[k.name], *("-" if s is None else format_time(s) for s in k.seconds),
             "-" if k.spread is None else pct(k.spread)] for k in kernels]


def _table(columns: tuple[str, ...], rows: list[list[str]], left: int) -> Table:
    """A table in the profile's style, its first ``left`` columns left-aligned."""
    table = Table(box=HEAD_RULE, show_edge=False, pad_edge=False, collapse_padding=True)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < left else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table
