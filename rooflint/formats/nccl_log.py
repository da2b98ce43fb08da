"""NCCL's own log of the collectives a process called: the sizes the kernels' records lack.

With ``NCCL_DEBUG=INFO`` and ``NCCL_DEBUG_SUBSYS=COLL``, NCCL writes one line per call as it
is enqueued (src/enqueue.cc, ncclEnqueueCheck), after the host:pid:tid and device prefix
of every line of its log::

    vm:890:890 [0] NCCL INFO AllReduce: opCount 3 sendbuff 0x7f.. recvbuff 0x7f..
        count 6562560 datatype 7 op 0 root 0 comm 0x55.. [nranks=2] stream 0x55..

(one line; the format has been the same from NCCL 2.7 to 2.30; opCount is hexadecimal
and, since NCCL counts it as plans reach its proxy, not per call, it is not read). The
count is NCCL's: per rank for all-gather (sendcount), reduce-scatter (recvcount) and
all-to-all (per peer). Every other line of the log (its initialisation, the topology, a
timestamp NCCL_DEBUG_TIMESTAMP_LEVELS adds before the prefix, a line cut short) is not a
call, and is passed over.

Each call is launched as one kernel named for its collective (``ncclDevKernel_AllReduce_
Sum_f32_RING_LL``; ``ncclKernel_...`` before NCCL 2.19, ``ncclSymkDevKernel_...`` with
symmetric memory), except where calls were grouped (ncclGroupStart/End: several calls, one
kernel, named for the first) and the point-to-point ones (send, receive, and the
all-to-all, gather and scatter NCCL makes of them), whose kernel is SendRecv.

Pure: a log's text in, its calls out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rooflint.analysis.collectives import Collective

# NCCL's ncclDataType_t (nccl.h): its number -> its name and element size in bytes.
DATATYPES = {0: ("int8", 1), 1: ("uint8", 1), 2: ("int32", 4), 3: ("uint32", 4),
             4: ("int64", 8), 5: ("uint64", 8), 6: ("float16", 2), 7: ("float32", 4),
             8: ("float64", 8), 9: ("bfloat16", 2), 10: ("fp8e4m3", 1), 11: ("fp8e5m2", 1)}
ELEMENT_BYTES = dict(DATATYPES.values())

# NCCL's name for a call -> the word its kernel is named for.
KERNEL_OF = {"AllReduce": "AllReduce", "AllGather": "AllGather",
             "ReduceScatter": "ReduceScatter", "Broadcast": "Broadcast", "Reduce": "Reduce",
             **{p2p: "SendRecv" for p2p in ("Send", "Recv", "AlltoAll", "Gather", "Scatter")}}
COLLECTIVE_OF = {"AllReduce": Collective.ALL_REDUCE, "AllGather": Collective.ALL_GATHER,
                 "ReduceScatter": Collective.REDUCE_SCATTER, "AlltoAll": Collective.ALL_TO_ALL,
                 "Broadcast": Collective.BROADCAST, "Reduce": Collective.REDUCE}
SEND_RECV = "SendRecv"

CALL = re.compile(
    r"(?P<host>[^\s:]+):(?P<pid>\d+):\d+ \[\d+\] NCCL INFO (?P<operation>[A-Za-z]+): "
    r"opCount [0-9a-fA-F]+ sendbuff \S+ recvbuff \S+ count (?P<count>\d+) "
    r"datatype (?P<datatype>\d+) op -?\d+ root -?\d+ comm (?P<comm>\S+) "
    r"\[nranks=(?P<ranks>\d+)\] stream \S+")
# ncclDevKernel_AllReduce_Sum_f32_RING_LL(...), ncclKernel_AllReduce_RING_LL_Sum_float(...),
# ncclSymkDevKernel_AllReduce_..., ncclDevKernel_SendRecv(...), ncclDevKernel_Generic(...)
KERNEL_NAME = re.compile(r"^nccl(?:Symk)?(?:Dev)?Kernel_([A-Za-z]+)")


@dataclass(frozen=True)
class NcclCall:
    """One call NCCL logged: who made it, which, how many elements of which type, on which
    communicator of how many ranks."""

    process: int            # the pid of the process that called it
    operation: str          # NCCL's name: AllReduce, AllGather, Send, ...
    count: int              # NCCL's count (per rank for all-gather, reduce-scatter, ...)
    datatype: int           # NCCL's ncclDataType_t
    ranks: int              # the communicator's
    comm: str               # the communicator, as this process's address of it

    @property
    def kernel(self) -> str:
        """The word its kernel is named for (KERNEL_OF)."""
        return KERNEL_OF[self.operation]

    @property
    def collective(self) -> Collective | None:
        """The collective it is, None for a point-to-point call."""
        return COLLECTIVE_OF.get(self.operation)

    @property
    def launches(self) -> bool:
        """Whether NCCL launches a kernel for it: not for an empty call, nor on a
        communicator of one rank (a copy of its own)."""
        return self.count > 0 and self.ranks > 1


def nccl_calls(text: str) -> list[NcclCall]:
    """The calls a log (NCCL_DEBUG_FILE's) holds, in the order they were made; every line
    that is no call of a collective or point-to-point operation passed over."""
    calls = []
    for line in text.splitlines():
        found = CALL.search(line)
        if found and found["operation"] in KERNEL_OF:
            calls.append(NcclCall(process=int(found["pid"]), operation=found["operation"],
                                  count=int(found["count"]), datatype=int(found["datatype"]),
                                  ranks=int(found["ranks"]), comm=found["comm"]))
    return calls


def kernel_word(name: str) -> str | None:
    """The collective an NCCL kernel's name names (``AllReduce``, ``SendRecv``, ``Generic``),
    as KERNEL_OF's words (AllGatherV's is AllGather's); None for a name that is no NCCL
    kernel's."""
    found = KERNEL_NAME.match(name)
    if not found:
        return None
    word = found[1]
    return "AllGather" if word == "AllGatherV" else word
