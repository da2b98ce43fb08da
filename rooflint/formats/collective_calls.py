"""A rank's collectives, as its own document holds them (formats/ranks.py): each NCCL
kernel of the rank matched to the call NCCL logged for it (judge/collectives.py), with
what the call was, where it stood among its communicator's calls, and how long the kernel
took on this rank. The same call on every rank stands at the same place on the same
communicator, so the documents of ranks profiled on several machines merge into one
collective's time, placed on the interconnect's roof, which each document carries from
its host's calibration (`show` has no calibration of that host).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from rooflint.analysis.collectives import Collective
from rooflint.common.sense import Count, Seconds, Sense, Size, one_of
from rooflint.formats.calibration import Interconnect
from rooflint.formats.nccl_log import DATATYPES


@dataclass
class CollectiveCalls:
    """The calls of one collective at one size on one communicator, in the order they were
    made, each with its kernel's time on this rank."""

    collective: Annotated[str, one_of(Collective)]
    datatype: Annotated[str, one_of(name for name, _ in DATATYPES.values())]
    count: Size                 # NCCL's (per rank for all-gather, reduce-scatter, all-to-all)
    ranks: Size                 # the communicator's
    comm: Count                 # the rank's communicators, numbered as it first called each
    calls: list[Count]          # each call's place among its communicator's collectives
    seconds: list[Seconds]      # each call's kernel's time on this rank


def _one_time_a_call(c: CollectiveCalls) -> str | None:
    return (None if len(c.calls) == len(c.seconds) else
            f"has {len(c.calls)} calls but {len(c.seconds)} times")


@dataclass
class RankCollectives:
    """The rank's NCCL kernels: those matched to their calls, and how many were not, by why."""

    calls: list[Annotated[CollectiveCalls, Sense(_one_time_a_call)]]
    unplaced: dict[str, Size] = field(default_factory=dict)
    # the roofs of the host's calibration; None where it had none (or one GPU)
    interconnect: Interconnect | None = None
