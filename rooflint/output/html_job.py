"""A job's section of `rooflint report RANK.json ...` (issue 49, item 2): what `show` prints
for a job's rank documents (output/rank_view.py gives both their words and cells, so the
page and the screen never disagree): the ranks, the straggler, the collectives on the
interconnect's roof and every kernel's time on each rank, its tables sortable."""

from __future__ import annotations

from rooflint.judge.ranks import Job
from rooflint.output.html_page import Html, table, tag
from rooflint.output.rank_view import (COLLECTIVE_COLUMNS, RANK_COLUMNS, collective_cells,
                                       collective_notes, collectives_heading, kernel_columns,
                                       kernel_rows, kernels_heading, rank_cells, ranks_heading,
                                       straggler_line)


def job_section(job: Job) -> Html:
    """The job as one section, every collective and kernel in it."""
    parts = [tag("h2", "the job"), tag("p", ranks_heading(job)),
             table(RANK_COLUMNS, [rank_cells(r) for r in job.ranks], numeric=RANK_COLUMNS[2:]),
             tag("p", straggler_line(job.straggler, len(job.ranks), bool(job.steps)))]
    placement = job.collectives
    if placement:
        shown = placement.collectives
        if shown:
            parts += [tag("p", collectives_heading(len(shown), len(shown))),
                      table(COLLECTIVE_COLUMNS, [collective_cells(c) for c in shown],
                            numeric=COLLECTIVE_COLUMNS[1:], explorable=True)]
        parts += [tag("p", line, class_="muted") for line in collective_notes(placement, shown)]
    columns = kernel_columns(job)
    parts += [tag("p", kernels_heading(len(job.kernels), len(job.kernels))),
              table(columns, kernel_rows(job.kernels), numeric=columns[1:], explorable=True)]
    return tag("section", parts, id="job")
