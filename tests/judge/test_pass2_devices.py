"""Which GPUs pass 2 profiles a launcher's ranks on (judge/pass2_patterns.profiled_devices):
the fewest ranks whose kernels hold every chosen kernel, or every rank where the GPUs do not
tell the ranks apart."""

from __future__ import annotations

import itertools

from rooflint.formats.ranks import RankInfo
from rooflint.judge.pass2_patterns import profiled_devices

GEMM, COPY, ADAM, GATHER = (("gemm", "(1,1,1)", "(128,1,1)"), ("copy", "(9,1,1)", "(64,1,1)"),
                            ("adam", "(3,1,1)", "(512,1,1)"), ("fill", "(2,1,1)", "(32,1,1)"))


def _ranks(*kernels: set, devices: tuple | None = None) -> list[tuple[RankInfo, set]]:
    devices = devices or tuple(range(len(kernels)))
    return [(RankInfo(process=100 + i, rank=i, device=d), k)
            for i, (d, k) in enumerate(zip(devices, kernels))]


def test_a_data_parallel_jobs_ranks_are_profiled_on_the_first_ranks_gpu():
    ranks = _ranks({GEMM, COPY}, {GEMM, COPY}, {GEMM, COPY}, {GEMM, COPY})
    assert [r.rank for r in profiled_devices(ranks, {GEMM, COPY})] == [0]


def test_a_kernel_only_another_rank_runs_brings_that_ranks_gpu_in():
    """Rank 2 alone runs the optimizer's kernel (a pipeline's last stage): ranks 0 and 2."""
    ranks = _ranks({GEMM, COPY}, {GEMM}, {GEMM, ADAM})
    assert [r.rank for r in profiled_devices(ranks, {GEMM, COPY, ADAM})] == [0, 2]
    assert [r.rank for r in profiled_devices(ranks, {ADAM})] == [2]


def test_every_rank_is_profiled_where_every_rank_is_needed_or_the_gpus_do_not_tell_them_apart():
    assert profiled_devices(_ranks({GEMM}, {COPY}), {GEMM, COPY}) is None
    # each rank given its own CUDA_VISIBLE_DEVICES: every one on its device 0
    assert profiled_devices(_ranks({GEMM}, {GEMM}, devices=(0, 0)), {GEMM}) is None
    assert profiled_devices(_ranks({GEMM}, {GEMM}, devices=(0, None)), {GEMM}) is None
    assert profiled_devices(_ranks({GEMM}), {GEMM}) is None


def test_the_ranks_taken_hold_every_chosen_kernel_any_of_them_ran():
    """Over every assignment of four kernels to three ranks and every choice among them."""
    kernels = [GEMM, COPY, ADAM, GATHER]
    subsets = [set(c) for n in range(len(kernels) + 1) for c in itertools.combinations(kernels, n)]
    for mine in itertools.product(subsets, repeat=3):
        ranks = _ranks(*mine)
        for chosen in subsets:
            taken = profiled_devices(ranks, chosen)
            if taken is None:
                continue
            assert 0 < len(taken) < len(ranks)
            held = set().union(*(k for r, k in ranks if r in taken))
            assert chosen & set().union(*mine) <= held


def test_the_plan_names_the_ranks_profiled_and_what_the_others_run():
    from rooflint.output.profile_words import profiled_ranks_words
    rank = [RankInfo(process=100 + i, rank=i, device=i) for i in range(4)]
    assert profiled_ranks_words(rank[:1], 2) == \
        ", on rank 0's GPU only (the other rank runs the same kernels unprofiled)"
    assert profiled_ranks_words([rank[0], rank[2]], 4) == (
        ", on the GPUs of rank 0 and rank 2 only (the other 2 ranks run kernels of theirs "
        "unprofiled)")
    assert profiled_ranks_words(None, 4) == ""
