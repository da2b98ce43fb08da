"""Collectives on the interconnect's roof (issue 49, item 3): each NCCL kernel of a rank
matched to the call NCCL logged for it, and the job's collectives, merged from its ranks'
documents, each with the bus bandwidth it reached and its share of the roof `rooflint
calibrate` measured for it.

A kernel's record (CUPTI's) holds no size; NCCL's log (formats/nccl_log.py) holds the
calls, in the order each process made them, and each call launches one kernel named for
its collective. So in each process the k-th call that launches an AllReduce kernel is the
k-th ``ncclDevKernel_AllReduce...`` in launch order. Where a process's calls and kernels
of one kind do not pair one-to-one (calls grouped by ncclGroupStart/End: several calls,
one kernel; a call NCCL ran on the copy engines: a call, no kernel), none of its kernels of
that kind is placed: a guess could give a kernel another's size.

A collective's kernel runs from when its rank arrives until the data of the last rank to
arrive has moved, so it holds the wait for the slowest peer: the rank that arrives last
waits least, and the shortest of the ranks' kernel times for one call is the best estimate
of its transfer. One call is the same on every rank: the same place among the calls of
the same communicator (numbered on each rank in the order it first called one). Where not
every rank sends its share (broadcast, reduce: analysis/collectives.every_rank_sends), a
receiver that came late finds data already in NCCL's buffers and its kernel times less
than the transfer: their bus bandwidth is an upper bound, not placed on the roof. The
roofs are the host's (over its N GPUs): a collective over more ranks crosses hosts, where
they do not hold.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from rooflint.analysis.collectives import Collective, bus_bandwidth, operation_bytes
from rooflint.formats.calibration import BusRate, Interconnect
from rooflint.formats.collective_calls import CollectiveCalls, RankCollectives
from rooflint.formats.nccl_log import (DATATYPES, ELEMENT_BYTES, KERNEL_OF, NcclCall,
                                       kernel_word)
from rooflint.formats.trace_events import CALL_TIME, COLLECTIVE, KERNEL

# Why a rank's NCCL kernels were not placed (a rank document's RankCollectives.unplaced).
NOT_READ = "with no size: NCCL's log was not read (the program's own NCCL_DEBUG or NCCL_DEBUG_FILE)"
NO_LOG = "of a process that logged no NCCL call"
UNPAIRED = "whose process's calls and kernels of their kind do not pair one-to-one (grouped calls)"
POINT_TO_POINT = "point-to-point (send and receive)"
UNNAMED = "named for no collective (NCCL's generic kernel)"
UNKNOWN_DATATYPE = "of a datatype rooflint does not know"
UNTIMED = "with no duration recorded"


def collective_kernels(trace: dict[str, Any]) -> list[dict]:
    """The NCCL kernels of ``trace``, in launch order (their correlation ids)."""
    kernels = [e for e in trace.get("traceEvents", []) if isinstance(e, dict)
               and e.get("cat") == KERNEL and COLLECTIVE.search(str(e.get("name", "")))]
    return sorted(kernels, key=lambda e: ((e.get("args") or {}).get("correlation", 0),
                                          e.get("ts", 0.0)))


def with_calls_own_time(trace: dict[str, Any]) -> dict[str, Any]:
    """``trace`` with each collective kernel of a job's ranks marked with its call's own
    time (CALL_TIME), the shortest of the ranks' kernels for that call, which its GPU time
    counts: the rest was a wait for a peer (nanoGPT compiled under torchrun on two H200s: one
    rank's all-reduce waited 5.2 s while the other compiled its evaluation alone, 79 % of
    the job's 6.6 s of GPU time, every other kernel's share read 0 %). Each rank makes the
    same calls in the same order, so a kernel's k-th launch in each process is one call;
    a kernel some process launched more often than another is left as it ran, as is a
    trace of one process."""
    runs: dict[str, dict[Any, list[dict]]] = {}
    for kernel in collective_kernels(trace):
        process = (kernel.get("args") or {}).get("process")
        runs.setdefault(str(kernel.get("name", "")), {}).setdefault(process, []).append(kernel)
    own: dict[int, float] = {}
    for processes in runs.values():
        launched = list(processes.values())
        if len(launched) < 2 or len({len(mine) for mine in launched}) > 1:
            continue
        for call in zip(*launched):
            shortest = min(float(k.get("dur", 0.0)) for k in call)
            own.update((id(k), shortest) for k in call)
    if not own:
        return trace
    return {**trace, "traceEvents": [
        {**e, "args": {**e["args"], CALL_TIME: own[id(e)]}} if id(e) in own else e
        for e in trace.get("traceEvents", [])]}


def rank_collectives(calls: list[NcclCall] | None, kernels: list[dict],
                     interconnect: Interconnect | None) -> RankCollectives | None:
    """One process's NCCL ``kernels`` (collective_kernels) matched to its ``calls`` (None:
    its log was not read), the roofs of ``interconnect`` kept with them; None where it ran
    no NCCL kernel."""
    if not kernels:
        return None
    if not calls:
        return RankCollectives([], {NOT_READ if calls is None else NO_LOG: len(kernels)},
                               interconnect)
    unplaced: Counter = Counter()
    matched = _matched(calls, kernels, unplaced)
    found: dict[tuple, CollectiveCalls] = {}
    for (call, place), kernel in matched:
        seconds = float(kernel.get("dur", 0.0)) * 1e-6
        why = (POINT_TO_POINT if place is None else       # only a collective has a place
               UNKNOWN_DATATYPE if call.datatype not in DATATYPES else
               UNTIMED if seconds <= 0 else None)
        if why:
            unplaced[why] += 1
            continue
        datatype = DATATYPES[call.datatype][0]
        key = (call.collective, datatype, call.count, call.ranks, place[0])
        mine = found.setdefault(key, CollectiveCalls(call.collective, datatype, call.count,
                                                     call.ranks, place[0], [], []))
        mine.calls.append(place[1])
        mine.seconds.append(seconds)
    return RankCollectives(list(found.values()), dict(unplaced), interconnect)


Place = tuple[int, int]        # a call's communicator and its place among that one's calls


def _matched(calls: list[NcclCall], kernels: list[dict], unplaced: Counter
             ) -> list[tuple[tuple[NcclCall, Place | None], dict]]:
    """The calls (with their places) paired with the kernels, kind by kind where they pair
    one-to-one; the kernels of any other kind counted into ``unplaced``."""
    places = _places(calls)
    launching: dict[str, list[tuple[NcclCall, Place | None]]] = {}
    for i, call in enumerate(calls):
        if call.launches:
            launching.setdefault(call.kernel, []).append((call, places.get(i)))
    by_kind: dict[str | None, list[dict]] = {}
    for kernel in kernels:
        by_kind.setdefault(kernel_word(str(kernel["name"])), []).append(kernel)
    matched = []
    for kind, mine in by_kind.items():
        theirs = launching.get(kind, []) if kind else []
        if kind not in KERNEL_OF.values():
            unplaced[UNNAMED] += len(mine)
        elif len(theirs) != len(mine):
            unplaced[UNPAIRED] += len(mine)
        else:
            matched += zip(theirs, mine)
    return matched


def _places(calls: list[NcclCall]) -> dict[int, Place]:
    """Each collective call's place (by its index in ``calls``): its communicator, numbered
    as the process first called a collective on each, and how many collectives it had
    been called before. Point-to-point calls have none: the ranks do not all make them."""
    comms: dict[str, int] = {}
    made: Counter = Counter()
    places = {}
    for i, call in enumerate(calls):
        if call.collective is None:
            continue
        comm = comms.setdefault(call.comm, len(comms))
        places[i] = (comm, made[comm])
        made[comm] += 1
    return places


@dataclass
class PlacedCollective:
    """The job's calls of one collective at one size: how long they took (each call the
    shortest of its ranks' kernels), and the roof they are placed against, where one holds."""

    collective: Collective
    datatype: str
    count: int
    ranks: int
    calls: int
    seconds: float
    roof: BusRate | None

    @property
    def size(self) -> int:
        return operation_bytes(self.collective, self.count, ELEMENT_BYTES[self.datatype],
                               self.ranks)

    @property
    def bus_bandwidth(self) -> float:
        return bus_bandwidth(self.collective, self.count, ELEMENT_BYTES[self.datatype],
                             self.ranks, self.seconds / self.calls)

    @property
    def of_roof(self) -> float | None:
        return self.bus_bandwidth / self.roof.value if self.roof else None


@dataclass
class Placement:
    """The job's collectives, the most time first; its ranks' NCCL kernels not placed, by
    why; the roofs (the first rank's host's calibration), None where none was calibrated."""

    collectives: list[PlacedCollective]
    unplaced: dict[str, int]
    interconnect: Interconnect | None


def placement(ranks: list[RankCollectives]) -> Placement | None:
    """The job's collectives from its ranks' (in any order); None where none holds any."""
    if not ranks:
        return None
    shortest: dict[tuple, float] = {}
    for rank in ranks:
        for c in rank.calls:
            for place, seconds in zip(c.calls, c.seconds):
                key = (c.collective, c.datatype, c.count, c.ranks, c.comm, place)
                shortest[key] = min(seconds, shortest.get(key, seconds))
    calls: Counter = Counter()
    times: Counter = Counter()
    for key, seconds in shortest.items():
        calls[key[:4]] += 1
        times[key[:4]] += seconds
    interconnect = next((r.interconnect for r in ranks if r.interconnect), None)
    placed = []
    for (collective, datatype, count, n), made in calls.items():
        size = operation_bytes(Collective(collective), count, ELEMENT_BYTES[datatype], n)
        placed.append(PlacedCollective(Collective(collective), datatype, count, n, made,
                                       times[collective, datatype, count, n],
                                       _roof(interconnect, Collective(collective), n, size)))
    unplaced: Counter = Counter()
    for rank in ranks:
        unplaced.update(rank.unplaced)
    return Placement(sorted(placed, key=lambda p: -p.seconds), dict(unplaced), interconnect)


def _roof(interconnect: Interconnect | None, collective: Collective, ranks: int, size: int
          ) -> BusRate | None:
    """The roof a collective of ``size`` bytes over ``ranks`` is placed against: its own,
    where every rank sends its share, the ranks fit the calibrated host and the size is
    one the calibration swept (below its smallest, latency_bound)."""
    if interconnect is None or not collective.every_rank_sends or ranks > interconnect.gpus \
            or latency_bound(interconnect, collective, size):
        return None
    return interconnect.roof(collective)


def latency_bound(interconnect: Interconnect, collective: Collective, size: int) -> bool:
    """Whether a call of ``size`` bytes is smaller than any the calibration swept of its
    collective: its time is NCCL's latency, not the links' bandwidth (a DDP job's 4-byte
    all-reduce read 0 % of the roof reached at 1 GiB)."""
    swept = [r.size for r in interconnect.sweep if r.collective == collective]
    return bool(swept) and size < min(swept)
