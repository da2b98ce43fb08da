"""Which GPUs pass 2 profiles a launcher's ranks on (judge/pass2_patterns.profiled_devices):
the fewest ranks whose kernels hold every chosen kernel, else the fewest that hold
RANKS_HOLD of their time, or every rank where the GPUs do not tell the ranks apart."""

from __future__ import annotations

import itertools

from rooflint.formats.ranks import RankInfo
from rooflint.judge.pass2_patterns import RANKS_HOLD, profiled_devices

GEMM, COPY, ADAM, GATHER = (("gemm", "(1,1,1)", "(128,1,1)"), ("copy", "(9,1,1)", "(64,1,1)"),
                            ("adam", "(3,1,1)", "(512,1,1)"), ("fill", "(2,1,1)", "(32,1,1)"))
SECONDS = {GEMM: 10.0, COPY: 1.0, ADAM: 0.2, GATHER: 0.3}


def _times(*kernels: tuple) -> dict:
    return {k: SECONDS[k] for k in kernels}


def _ranks(*kernels: set, devices: tuple | None = None) -> list[tuple[RankInfo, set]]:
    devices = devices or tuple(range(len(kernels)))
    return [(RankInfo(process=100 + i, rank=i, device=d), k)
            for i, (d, k) in enumerate(zip(devices, kernels))]


def test_a_data_parallel_jobs_ranks_are_profiled_on_the_first_ranks_gpu():
    ranks = _ranks({GEMM, COPY}, {GEMM, COPY}, {GEMM, COPY}, {GEMM, COPY})
    assert [r.rank for r in profiled_devices(ranks, _times(GEMM, COPY))] == [0]


def test_a_kernel_only_another_rank_runs_brings_that_ranks_gpu_in():
    """Rank 2 alone runs the optimizer's kernel (a pipeline's last stage): ranks 0 and 2."""
    ranks = _ranks({GEMM, COPY}, {GEMM}, {GEMM, ADAM})
    assert [r.rank for r in profiled_devices(ranks, _times(GEMM, COPY, ADAM))] == [0, 2]
    assert [r.rank for r in profiled_devices(ranks, _times(ADAM))] == [2]


def test_every_rank_is_profiled_where_every_rank_is_needed_or_the_gpus_do_not_tell_them_apart():
    assert profiled_devices(_ranks({GEMM}, {COPY}), {GEMM: 1.0, COPY: 1.0}) is None
    # each rank given its own CUDA_VISIBLE_DEVICES: every one on its device 0
    assert profiled_devices(_ranks({GEMM}, {GEMM}, devices=(0, 0)), _times(GEMM)) is None
    assert profiled_devices(_ranks({GEMM}, {GEMM}, devices=(0, None)), _times(GEMM)) is None
    assert profiled_devices(_ranks({GEMM}), _times(GEMM)) is None


def test_ranks_autotuned_apart_are_profiled_on_one_gpu_where_it_holds_most_of_the_time():
    """nanoGPT compiled under torchrun: each rank's TorchInductor picked its own block size
    for one Triton kernel, so only both ranks held every chosen kernel, and pass 2 profiled
    both GPUs (about 155 s). One rank holding 95 % of the chosen time is profiled alone;
    the kernel at the other rank's shape goes without counters."""
    tuned = ("triton_poi_fused_gelu_backward_0", "(24576,1,1)", "(128,1,1)")
    other = ("triton_poi_fused_gelu_backward_0", "(49152,1,1)", "(256,1,1)")
    ranks = _ranks({GEMM, COPY, other}, {GEMM, COPY, tuned})
    assert [r.rank for r in profiled_devices(ranks, {GEMM: 9.0, COPY: 0.5, other: 0.25,
                                                     tuned: 0.25})] == [0]
    assert profiled_devices(ranks, {GEMM: 6.0, COPY: 0.5, other: 1.0, tuned: 1.0}) is None


def test_the_ranks_taken_hold_every_chosen_kernel_any_of_them_ran_or_most_of_their_time():
    """Over every assignment of four kernels to three ranks and every choice among them."""
    kernels = [GEMM, COPY, ADAM, GATHER]
    subsets = [set(c) for n in range(len(kernels) + 1) for c in itertools.combinations(kernels, n)]
    for mine in itertools.product(subsets, repeat=3):
        ranks = _ranks(*mine)
        for chosen in subsets:
            taken = profiled_devices(ranks, _times(*chosen))
            if taken is None:
                continue
            assert 0 < len(taken) < len(ranks)
            held = set().union(*(k for r, k in ranks if r in taken))
            assert chosen & set().union(*mine) <= held or \
                sum(SECONDS[k] for k in chosen & held) >= RANKS_HOLD * sum(_times(*chosen).values())


def test_the_plan_names_the_ranks_profiled_and_what_the_others_run():
    from rooflint.output.profile_words import profiled_ranks_words
    rank = [RankInfo(process=100 + i, rank=i, device=i) for i in range(4)]
    assert profiled_ranks_words(rank[:1], 2) == \
        ", on rank 0's GPU only (the other rank runs the same kernels unprofiled)"
    assert profiled_ranks_words([rank[0], rank[2]], 4) == (
        ", on the GPUs of rank 0 and rank 2 only (the other 2 ranks run kernels of theirs "
        "unprofiled)")
    assert profiled_ranks_words(None, 4) == ""


def test_the_plan_says_what_the_ranks_left_unprofiled_ran_alone():
    from rooflint.output.profile_words import profiled_ranks_words
    rank = [RankInfo(process=100 + i, rank=i, device=i) for i in range(4)]
    assert profiled_ranks_words(rank[:1], 2, 1) == (
        ", on rank 0's GPU only (the other rank runs unprofiled, and 1 chosen kernel that "
        "ran only there goes without counters)")
    assert profiled_ranks_words(rank[:2], 4, 3) == (
        ", on the GPUs of rank 0 and rank 1 only (the other 2 ranks run unprofiled, and 3 "
        "chosen kernels that ran only on them go without counters)")
