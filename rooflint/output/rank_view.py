"""What `profile` of a job of several ranks and `show RANK.json ...` print for the job
(judge/ranks.py): each rank's kernel time beside its collectives, the straggler with the
kernels that make it slower, and the top kernels' time on every rank side by side."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rooflint.analysis.evidence import pct
from rooflint.common.units import counted, format_time
from rooflint.judge.ranks import STRAGGLER_MARGIN, Job, KernelAcross, RankTime, Straggler
from rooflint.output.depth import Depth
from rooflint.output.profile_view import TOP_KERNELS
from rooflint.output.terminal import HEAD_RULE, shortened_names

RANK_COLUMNS = ("rank", "host", "GPU", "kernels", "collectives", "exposed")


def render_job(console: Console, job: Job, depth: Depth) -> None:
    """The ranks and the straggler; at the default depth the top kernels across ranks, at
    DETAIL every kernel."""
    console.print(Text(f"{counted(len(job.ranks), 'rank')}: GPU time of each rank's own "
                       f"kernels and of its collectives (exposed: no other kernel of the "
                       f"rank ran beside them)"))
    console.print(_ranks_table(job.ranks))
    console.print(Text(straggler_line(job.straggler, len(job.ranks))))
    if depth is Depth.SUMMARY:
        return
    kernels = job.kernels if depth is Depth.DETAIL else job.kernels[:TOP_KERNELS]
    which = "all" if len(kernels) == len(job.kernels) else f"top {len(kernels)} of"
    console.print(Text(f"{which} {counted(len(job.kernels), 'profiled kernel')} by GPU time "
                       f"over the ranks, on each rank"))
    console.print(_kernels_table(kernels, job.ranks))


def straggler_line(straggler: Straggler | None, ranks: int) -> str:
    """The rank the others wait for, by how much, and whether its kernels or its host make
    it late; or that none is."""
    if ranks < 2:
        return "one rank: no other to compare it with"
    if straggler is None:
        return (f"no straggler: no rank's kernels take {pct(STRAGGLER_MARGIN)} longer than "
                f"the other ranks' median, nor do the others' collectives wait that long "
                f"for one")
    waited = (f"the other ranks' collectives wait {format_time(straggler.waited_s)} more for "
              f"it, exposed; " if straggler.waited_s else "")
    if not straggler.by_its_kernels:
        return (f"straggler: {straggler.rank.label}: {waited}its own kernels take no longer "
                f"({_signed(straggler.excess)} of the others' median), so what makes it late "
                f"is on the host (Python, launches, data loading), not its GPU work")
    kernels = ", ".join(f"{shortened_names([name])[name]} (+{format_time(extra)})"
                        for name, extra in straggler.kernels)
    return (f"straggler: {straggler.rank.label}: {waited}its kernels take "
            f"{pct(straggler.excess)} longer than the other ranks' median "
            f"(+{format_time(straggler.extra_s)})"
            + (f", the most in {kernels}" if kernels else ""))


def _signed(fraction: float) -> str:
    return ("+" if fraction >= 0 else "-") + pct(abs(fraction))


def _ranks_table(ranks: list[RankTime]) -> Table:
    table = _table(RANK_COLUMNS, left=2)
    for r in ranks:
        exposed = (f"{format_time(r.exposed_s)} ({pct(r.exposed_s / r.collective_s)})"
                   if r.collective_s else "-")
        table.add_row(r.rank.label, r.rank.host or "-",
                      "-" if r.rank.device is None else str(r.rank.device),
                      format_time(r.compute_s),
                      format_time(r.collective_s) if r.collective_s else "-", exposed)
    return table


def _kernels_table(kernels: list[KernelAcross], ranks: list[RankTime]) -> Table:
    table = _table(("kernel", *(r.rank.label for r in ranks), "spread"), left=1)
    names = shortened_names(k.name for k in kernels)
    for k in kernels:
        table.add_row(names[k.name], *("-" if s is None else format_time(s) for s in k.seconds),
                      "-" if k.spread is None else pct(k.spread))
    return table


def _table(columns: tuple[str, ...], left: int) -> Table:
    """A table in the profile's style, its first ``left`` columns left-aligned."""
    table = Table(box=HEAD_RULE, show_edge=False, pad_edge=False, collapse_padding=True)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < left else "right", no_wrap=True)
    return table
