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


def _job(least_a_step: float, placed: list | None):
    """The recorded eager step as one rank of a two-rank job of 11 steps whose rank that
    waits least has ``least_a_step`` exposed a step, its collectives ``placed``."""
    from rooflint.formats.trace_timing import Communication, ProgramTiming
    from rooflint.judge.collectives import Placement
    result = read_result(TRAIN_EAGER[1])
    result.program = ProgramTiming(wall_s=0.1, busy_s=0.05, communication=Communication(
        collective_s=2e-3, exposed_s=1e-3, ranks=2, steps=11, step_collective_s=1.5e-4,
        step_exposed_s=1e-4, step_kernels_s=1e-3, least_exposed_s=5e-4,
        step_least_exposed_s=least_a_step))
    return result, (Placement(placed, {}, None) if placed is not None else None)


def _placed(collective: str, datatype: str, of_roof: float | None, seconds: float = 1e-3):
    """Ten calls of 64 MiB over two ranks at ``of_roof`` of their roof (None: no roof)."""
    from rooflint.analysis.collectives import Collective
    from rooflint.formats.calibration import BusRate
    from rooflint.judge.collectives import PlacedCollective
    c = PlacedCollective(Collective(collective), datatype, 16 << 20, 2, 10, seconds, None)
    if of_roof is not None:
        c.roof = BusRate(collective, c.size, c.bus_bandwidth / of_roof)
    return c


def test_communication_fixes_save_shares_of_the_late_ranks_exposed_time_a_step():
    """By hand: 0.1 ms exposed a step on the rank that waits least, 11 steps, 2 ranks: 2.2 ms
    over the job. Accumulating 4 micro-steps saves 3/4 of it and of the optimizer's kernels;
    larger buckets the collectives' distance to their roof (at 70 %: 30 %, weighted by
    time: 60 % at 2 ms and 90 % at 1 ms make 70 %); the all-gathers' prefetch only where
    all-gathers hold most of the collectives' time, all of it up to the compute it hides
    behind; none on a job that waited on nothing."""
    from rooflint.analysis.program_fixes import Kind
    from rooflint.judge.program_fixes import kernel_kind
    exposed = 1e-4 * 11 * 2
    result, placement = _job(1e-4, [_placed("all-reduce", "float32", 0.6, 2e-3),
                                    _placed("all-reduce", "float32", 0.9, 1e-3),
                                    _placed("broadcast", "float32", None, 1e-4)])
    optimizer = sum(v.share.total_s for f in result.families for v in f.variants
                    if v.share and kernel_kind(v) is Kind.OPTIMIZER)
    assert optimizer > 0
    fixes = {f.id: f for f in roll_up(result, placement)}
    assert fixes["accumulate_gradients"].saving_s == pytest.approx(0.75 * (exposed + optimizer))
    assert fixes["larger_buckets"].saving_s == pytest.approx(0.3 * exposed)
    assert "overlap_collectives" not in fixes
    # each acts on the exposed time (accumulation on the optimizer's kernels' too), its
    # share of the GPU time and the exposed time together
    spent = result.settings.gpu_time_s + exposed
    assert fixes["accumulate_gradients"].share == pytest.approx((exposed + optimizer) / spent)
    assert fixes["larger_buckets"].share == pytest.approx(exposed / spent)
    for fix in (fixes["accumulate_gradients"], fixes["larger_buckets"]):
        assert fix.kernels == [] and fix.saving_share == pytest.approx(fix.saving_s / spent)
    # and every other fix of the list, a kernel's, saves a share of that same time: the
    # list's percentages compare as its savings do (the kernels' shares stay of GPU time)
    kernels = [f for f in fixes.values() if f.kernels and f.saving_s]
    assert len(kernels) >= 3
    for fix in kernels:
        assert fix.saving_share == pytest.approx(fix.saving_s / spent)
        assert fix.share == pytest.approx(
            sum(v.share.total_s for f in result.families for v in f.variants
                if v.name in fix.kernels) / result.settings.gpu_time_s)
    gathered, placement = _job(1e-4, [_placed("all-gather", "bfloat16", 0.5, 3e-3),
                                      _placed("reduce-scatter", "float32", 0.8, 1e-3)])
    fixes = {f.id: f for f in roll_up(gathered, placement)}
    assert fixes["overlap_collectives"].saving_s == pytest.approx(exposed)
    assert fixes["larger_buckets"].saving_s == pytest.approx((1 - 0.575) * exposed)
    # far more exposed than the job's compute (a host-bound job): the prefetch hides at most
    # the compute it overlaps, the region's GPU time less its collectives
    waiting, placement = _job(1.0, [_placed("all-gather", "bfloat16", 0.5, 3e-3)])
    compute = waiting.settings.gpu_time_s - 2e-3 * 2
    fixes = {f.id: f for f in roll_up(waiting, placement)}
    assert fixes["overlap_collectives"].saving_s == pytest.approx(compute)
    assert fixes["accumulate_gradients"].saving_s > compute       # its share of all of it
    assert fixes["overlap_collectives"].estimate == "exposed, at most the compute"
    # what a communication fix saves is mostly waiting: its share is of the GPU time and
    # the exposed time together, never above the whole
    from rooflint.judge.program_fixes import exposed_on_the_critical_path
    exposed = 2 * exposed_on_the_critical_path(waiting.program.communication)
    for fix in (f for f in fixes.values() if not f.kernels):
        assert fix.saving_share == pytest.approx(
            fix.saving_s / (waiting.settings.gpu_time_s + exposed))
        assert fix.saving_share <= fix.share < 1
    unknown, _ = _job(1e-4, None)
    assert [f.id for f in roll_up(unknown) if not f.kernels] == ["accumulate_gradients"]
    idle, placement = _job(0.0, [_placed("all-reduce", "float32", 0.5)])
    assert not [f for f in roll_up(idle, placement) if not f.kernels]


def test_a_recorded_jobs_communication_fixes_and_what_they_bought():
    """The wide DDP job on two H200s (examples/profile/h200x2-profile-ddp-nccl-wide.json):
    its fixes as the committed measurement of what each bought holds them, a step
    (benchmarks/results/h200x2/communication-fixes.json, whose runs were timed on the
    same host right after the profile)."""
    import json
    job = REPO / "examples" / "profile" / "h200x2-profile-ddp-nccl-wide.json"
    measured = json.loads((REPO / "benchmarks" / "results" / "h200x2" /
                           "communication-fixes.json").read_text())
    result = read_result(job)
    ranks = [read_result(job.with_name(f"{job.stem}.rank{r}.json")) for r in (0, 1)]
    from rooflint.judge.collectives import placement
    fixes = {f.id: f for f in roll_up(result, placement([r.collectives for r in ranks]))}
    assert {f.id for f in result.fixes} == set(fixes)
    found = result.program.communication
    for entry in measured["fixes"]:
        if entry["offered"]:
            a_step = fixes[entry["fix"]].saving_s / found.steps / found.ranks
            assert entry["predicted_ms_a_step"] == pytest.approx(a_step * 1e3, abs=0.01)
        else:
            assert entry["fix"] not in fixes


DATA_PARALLEL = {"accumulate_gradients", "larger_buckets"}


@pytest.mark.parametrize("name,expected", [
    ("h200x2-profile-ddp-nccl", DATA_PARALLEL), ("h200x2-profile-ddp-nccl-wide", DATA_PARALLEL),
    ("h200x2-profile-fsdp", DATA_PARALLEL | {"overlap_collectives"})])
def test_a_jobs_ranks_share_its_communication_fixes(name, expected):
    """A rank's document of a job saves what the job saves on that rank: the job's
    least-waiting exposed time (not the rank's own, which holds its wait for its peers),
    so the ranks' communication savings add up to the job's. A sharded job (FSDP2, whose
    all-gathers take the most of its collective time) is told to prefetch them too."""
    job = read_result(REPO / "examples" / "profile" / f"{name}.json")
    ranks = [read_result(REPO / "examples" / "profile" / f"{name}.rank{r}.json") for r in (0, 1)]
    for rank in ranks:
        assert rank.program.communication.step_least_exposed_s == \
            job.program.communication.step_least_exposed_s
    ids = {f.id for f in job.fixes if not f.kernels}
    assert ids == expected
    for fix_id in ids:
        of_job = next(f.saving_s for f in job.fixes if f.id == fix_id)
        assert sum(f.saving_s for r in ranks for f in r.fixes if f.id == fix_id) == \
            pytest.approx(of_job, rel=1e-3)
