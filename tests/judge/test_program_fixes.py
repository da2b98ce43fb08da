"""A profile's kernels rolled up into program fixes (issue 47), on the recorded profiles:
the unfused work and the casts of the eager training step lead, each fix's share is its
kernels' shares summed, every group of every committed profile gets a fix or a reason."""

from __future__ import annotations

import pytest

from edges import REPO
from rooflint.analysis.program_fixes import PROGRAM_FIXES, Kind, kind_of
from rooflint.formats.results import read_result
from rooflint.judge.program_fixes import NO_FIX, group_fix, groups_of, roll_up

PROFILES = sorted((REPO / "examples" / "profile").glob("*.json"))
TRAIN_EAGER = [REPO / "examples" / "profile" / f"{gpu}-profile-train-eager.json"
               for gpu in ("h100", "h200")]


def shares_by_name(result):
    return {v.name: v.share.share for f in result.families for v in f.variants if v.share}


@pytest.mark.parametrize("path", TRAIN_EAGER, ids=lambda p: p.name)
def test_the_eager_step_s_top_fixes_are_its_unfused_work_and_its_casts(path):
    fixes = roll_up(read_result(path))
    top = [f.id for f in fixes[:4]]
    assert {"compile_elementwise", "bf16_parameters"} <= set(top), top
    assert "fused_normalisation" in [f.id for f in fixes[:6]]


@pytest.mark.parametrize("path", TRAIN_EAGER, ids=lambda p: p.name)
def test_a_fix_s_share_is_its_kernels_shares_summed(path):
    result = read_result(path)
    shares = shares_by_name(result)
    fixes = {f.id: f for f in roll_up(result)}
    casts = sum(s for f in result.families for v in f.variants if (s := v.share.share)
                and kind_of(v.share.kernel, v.share.library) is Kind.CASTS
                and not any("53" in (o.line or "") for o in v.share.origins))
    assert fixes["bf16_parameters"].share == pytest.approx(casts)
    for fix in fixes.values():
        assert fix.share == pytest.approx(sum(shares[k] for k in fix.kernels))
        assert sum(line.share for line in fix.lines) == pytest.approx(fix.share)


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_every_group_gets_a_fix_or_a_stated_reason(path):
    result = read_result(path)
    variants = [v for f in result.families for v in f.variants if v.share]
    for group in groups_of(variants):
        fix = group_fix(group)
        assert fix is None or fix.action and fix.why
    fixes = roll_up(result)
    assert all(f.action or (f.id == NO_FIX and f.why) for f in fixes)
    named = [k for f in fixes for k in f.kernels]
    assert sorted(named) == sorted(v.name for v in variants), "each kernel in exactly one fix"


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_no_saving_exceeds_its_kernels_time(path):
    for fix in roll_up(read_result(path)):
        assert 0 <= fix.saving_share <= fix.share + 1e-12


def test_every_catalog_entry_says_what_and_why():
    for fix in PROGRAM_FIXES:
        assert fix.action and fix.why, fix.id
    assert len({f.id for f in PROGRAM_FIXES}) == len(PROGRAM_FIXES)


@pytest.mark.parametrize("exposed", [0.0, 0.4, 1.0])
def test_overlapping_the_collectives_saves_their_exposed_share(exposed):
    """A data-parallel step's all-reduce (the recorded step's largest GEMM renamed to one):
    the overlap fix saves the part of its time that no compute ran beside, as the trace's
    Communication says, nothing where compute covered it all."""
    from dataclasses import replace
    from rooflint.analysis import caller_moves
    from rooflint.formats.trace_timing import Communication, ProgramTiming
    result = read_result(TRAIN_EAGER[1])
    variant = max((v for f in result.families for v in f.variants if v.share),
                  key=lambda v: v.share.total_s)
    variant.share = replace(variant.share, library=caller_moves.NCCL, origins=[],
                            kernel="ncclDevKernel_AllReduce_Sum_bf16_RING_LL("
                                   "ncclDevKernelArgsStorage<4096ul>)")
    result.program = ProgramTiming(wall_s=0.1, busy_s=0.05, communication=Communication(
        collective_s=2e-3, exposed_s=2e-3 * exposed, ranks=2))
    fix = next(f for f in roll_up(result) if f.id == "overlap_collectives")
    assert fix.kernels == [variant.name]
    assert fix.saving_s == pytest.approx(variant.share.total_s * exposed)
