"""Collectives on the interconnect's roof: the bytes a collective moves and the bus
bandwidth it reached, as nccl-tests defines them (doc/PERFORMANCE.md), so that a
collective of a program and the ones `rooflint calibrate` times are on one scale.

Pure: counts, sizes and times in, rates out.
"""

from __future__ import annotations

from rooflint.common.sense import Vocabulary


class Collective(Vocabulary):
    """The collectives placed on the interconnect's roof, by nccl-tests' names."""

    ALL_REDUCE = "all-reduce"
    ALL_GATHER = "all-gather"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_TO_ALL = "all-to-all"
    BROADCAST = "broadcast"
    REDUCE = "reduce"

    @property
    def every_rank_sends(self) -> bool:
        """Whether each rank sends its share of the data itself, so that even the rank
        that came last (whose kernel waited least) spends the whole transfer of its share
        in its kernel. A broadcast's receivers and a reduce's root send nothing: one that
        arrives late finds the data already in NCCL's buffers, and its kernel times less
        than the transfer."""
        return self not in (Collective.BROADCAST, Collective.REDUCE)


# The collectives whose NCCL count is per rank, so that the whole operation (nccl-tests'
# S) is count x ranks elements: all-gather's sendcount, reduce-scatter's recvcount,
# all-to-all's count per peer.
_COUNT_PER_RANK = (Collective.ALL_GATHER, Collective.REDUCE_SCATTER, Collective.ALL_TO_ALL)


def operation_bytes(collective: Collective, count: int, element_bytes: int,
                    ranks: int) -> int:
    """nccl-tests' S, the size of the operation in bytes, from NCCL's ``count`` (its
    argument to ncclAllReduce, ncclAllGather, ...): count x element size, times the ranks
    where NCCL's count is per rank (all-gather, reduce-scatter, all-to-all)."""
    return count * element_bytes * (ranks if collective in _COUNT_PER_RANK else 1)


def bus_bandwidth(collective: Collective, count: int, element_bytes: int, ranks: int,
                  seconds: float) -> float:
    """The bus bandwidth (bytes/s) of one call of ``collective`` over ``ranks`` ranks that
    took ``seconds``, as nccl-tests defines it (doc/PERFORMANCE.md, "Bus bandwidth"):
    algbw = S / t, with S from operation_bytes, and busbw = algbw x a factor that makes it
    the speed of the hardware bottleneck whatever the number of ranks n: 2(n-1)/n for
    all-reduce (each element crosses 2(n-1) links of n), (n-1)/n for all-gather,
    reduce-scatter and all-to-all, 1 for broadcast and reduce (all data leaves or
    reaches the root). It compares with the interconnect's peak, and with the busbw
    `rooflint calibrate` measured, at any number of ranks."""
    n = ranks
    factor = {Collective.ALL_REDUCE: 2 * (n - 1) / n, Collective.ALL_GATHER: (n - 1) / n,
              Collective.REDUCE_SCATTER: (n - 1) / n, Collective.ALL_TO_ALL: (n - 1) / n,
              Collective.BROADCAST: 1.0, Collective.REDUCE: 1.0}[collective]
    return operation_bytes(collective, count, element_bytes, ranks) / seconds * factor
