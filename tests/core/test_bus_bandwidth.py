"""Bus bandwidth as nccl-tests defines it (doc/PERFORMANCE.md; its src/*.cu GetBw), by hand:
a 1 GB operation (S) in 10 ms is an algbw of 100 GB/s, and the factor of each collective
over 2, 4 and 8 ranks makes the bus bandwidth."""

import pytest

from rooflint.analysis.collectives import Collective, bus_bandwidth, operation_bytes

S, T = 1_000_000_000, 0.01           # bytes, seconds: algbw 100 GB/s
FLOAT32 = 4


@pytest.mark.parametrize("ranks, all_reduce, all_gather", [
    (2, 100e9, 50e9),         # 2(n-1)/n = 1,    (n-1)/n = 1/2
    (4, 150e9, 75e9),         # 3/2,             3/4
    (8, 175e9, 87.5e9),       # 7/4,             7/8
])
def test_the_factors_of_each_collective_at_2_4_and_8_ranks(ranks, all_reduce, all_gather):
    whole = S // FLOAT32                       # NCCL's count of an all-reduce: every element
    per_rank = S // FLOAT32 // ranks           # of an all-gather, reduce-scatter, all-to-all
    assert bus_bandwidth(Collective.ALL_REDUCE, whole, FLOAT32, ranks, T) == \
        pytest.approx(all_reduce)
    for collective in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER, Collective.ALL_TO_ALL):
        assert operation_bytes(collective, per_rank, FLOAT32, ranks) == S
        assert bus_bandwidth(collective, per_rank, FLOAT32, ranks, T) == \
            pytest.approx(all_gather)
    for rooted in (Collective.BROADCAST, Collective.REDUCE):
        assert bus_bandwidth(rooted, whole, FLOAT32, ranks, T) == pytest.approx(100e9)


def test_nccls_count_is_per_rank_only_where_nccl_says_so():
    """An all-gather of sendcount 1 over 2 ranks moves 2 elements; an all-reduce of count
    35,037,696 float32 (the DDP fixture's first bucket) moves 140 MB whatever the ranks."""
    assert operation_bytes(Collective.ALL_GATHER, 1, 8, 2) == 16
    assert operation_bytes(Collective.ALL_REDUCE, 35_037_696, FLOAT32, 8) == 140_150_784
    assert operation_bytes(Collective.BROADCAST, 140, 8, 2) == 1120


def test_only_a_broadcasts_and_a_reduces_ranks_do_not_all_send():
    assert {c for c in Collective if not c.every_rank_sends} == {Collective.BROADCAST,
                                                                  Collective.REDUCE}
