"""Two profiles of a program compared fix by fix (issue 47, item 8), on the recorded pairs:
each fix's time before and after is its documents' kernels' time summed (summed here from
the raw JSON), no after time is lost or counted twice, a fix whose kernels vanish saved
their whole time, and a profile against itself saved nothing."""

from __future__ import annotations

import copy
import json

import pytest

from edges import REPO
from rooflint.formats.results import read_result
from rooflint.judge.fix_comparison import compare_fixes, fix_key, fused_fix, variants_of
from rooflint.judge.program_fixes import NO_FIX, fixes_of, function_claim, main_origin

PROFILE = REPO / "examples" / "profile"
PAIRS = [("h200-profile-train-eager-fixes", "h200-profile-train-compiled"),
         ("h100-profile-nanogpt-eager", "h100-profile-nanogpt-compiled"),
         ("h100-profile-nanogpt-eager", "h100-profile-nanogpt-graphs")]


def raw_times(name: str) -> dict[str, float]:
    """Each kernel's GPU time, read from the document's JSON without rooflint's reader."""
    document = json.loads((PROFILE / f"{name}.json").read_text())
    return {v["name"]: v["share"]["total_s"] for f in document["families"]
            for v in f["variants"] if v.get("share")}


def read(name: str):
    return read_result(PROFILE / f"{name}.json")


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
def test_each_fix_s_time_before_is_its_kernels_time_summed(pair):
    times = raw_times(pair[0])
    program = compare_fixes(read(pair[0]), read(pair[1]))
    assert program.fixes
    for row in program.fixes:
        assert row.before_s == pytest.approx(sum(times[k] for k in row.before_kernels))
        assert sum(line.before_s for line in row.lines) == pytest.approx(row.before_s)
        assert row.measured_s == pytest.approx(row.before_s - row.after_s)


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
def test_a_fix_kept_in_b_is_measured_on_the_same_fix_s_kernels_and_what_it_fused(pair):
    """A fix B still has is measured on its kernels there, plus the compiled kernels whose
    fused operators (or their line's function) are that fix's: nothing else."""
    times = raw_times(pair[1])
    program = compare_fixes(read(pair[0]), read(pair[1]))
    after = {f.id: f for f in fixes_of(read(pair[1]))}
    now = variants_of(read(pair[1]))
    kept = [row for row in program.fixes if row.id in after]
    assert kept
    for row in kept:
        own = set(after[row.id].kernels)
        assert own <= set(row.after_kernels)
        for extra in set(row.after_kernels) - own:
            claim = function_claim(main_origin(now[extra]).line)
            assert row.id in {fused_fix(now[extra]), claim and claim.id}
        assert row.after_s >= sum(times[k] for k in own) - 1e-12
        assert sum(line.after_s for line in row.lines) == pytest.approx(row.after_s)


@pytest.mark.parametrize("pair", PAIRS, ids="-".join)
def test_every_after_kernel_s_time_is_counted_once(pair):
    """The rows' after time, the new time and the kernels no fix is for on either side add
    up to every after kernel's time."""
    before, after = read(pair[0]), read(pair[1])
    program = compare_fixes(before, after)
    before_keys = {fix_key(f) for f in fixes_of(before)}
    times = raw_times(pair[1])
    unfixed_on_both = sum(times[k] for f in fixes_of(after)
                          if f.id == NO_FIX and fix_key(f) in before_keys for k in f.kernels)
    counted = sum(r.after_s for r in program.fixes) + program.new_s + unfixed_on_both
    assert counted == pytest.approx(sum(times.values()))


def test_the_region_s_time_is_each_profile_s():
    program = compare_fixes(read(PAIRS[0][0]), read(PAIRS[0][1]))
    assert program.before_s == pytest.approx(read(PAIRS[0][0]).settings.gpu_time_s)
    assert program.after_s == pytest.approx(read(PAIRS[0][1]).settings.gpu_time_s)


def without_kernels(result, names: set[str]):
    """A copy of a profile with some kernels gone, as if a fix had removed them."""
    after = copy.deepcopy(result)
    for family in after.families:
        family.variants = [v for v in family.variants if v.name not in names]
    after.fixes = []
    return after


def test_a_fix_whose_kernels_vanish_saved_their_whole_time():
    before = read("h200-profile-train-eager")
    fix = next(f for f in fixes_of(before) if f.id == "fused_optimizer")
    program = compare_fixes(before, without_kernels(before, set(fix.kernels)))
    row = next(r for r in program.fixes if r.id == fix.id)
    whole = sum(raw_times("h200-profile-train-eager")[k] for k in fix.kernels)
    assert row.after_s == 0.0
    assert row.measured_s == pytest.approx(whole)
    assert row.ratio == pytest.approx(whole / fix.saving_s)


def test_a_profile_against_itself_saved_nothing():
    result = read("h200-profile-train-eager")
    program = compare_fixes(result, result)
    assert program.fixes and all(row.measured_s == 0.0 for row in program.fixes)
    assert program.new_s == 0.0
    assert all(line.before_s == line.after_s for line in program.lines)


def test_a_result_that_is_no_profile_is_not_compared_by_fix():
    result = read("h200-profile-train-eager")
    empty = without_kernels(result, {v.name for f in result.families for v in f.variants})
    assert compare_fixes(result, empty) is None


@pytest.mark.parametrize("before_step_s, after_step_s, saved_s, follows", [
    (0.0793, 0.0843, 0.0227, False),     # imagenet compiled: slower steps for 22.7 ms saved
    (0.0610, 0.0585, 0.00173, True),     # nanoGPT's window: 2.5 ms shorter for 1.73 ms
    (0.0500, 0.0450, 0.0100, True),      # half the saving: follows
    (0.0500, 0.0451, 0.0100, False),     # a hair under half: does not
    (0.0500, 0.0600, 0.0, True),         # nothing saved: nothing to follow
    (0.0500, 0.0600, -0.005, True),      # GPU time grew: nothing to follow
])
def test_a_step_follows_the_gpu_time_saved_from_half_of_it(before_step_s, after_step_s,
                                                            saved_s, follows):
    from rooflint.judge.fix_comparison import STEP_FOLLOWS_GPU, StepTimes
    assert STEP_FOLLOWS_GPU == 0.5
    assert StepTimes(before_step_s, after_step_s, 0.6, 0.3, saved_s).follows_gpu is follows


def test_step_times_are_compared_only_where_both_regions_count_the_same_steps():
    """imagenet's two windows (20 steps each): 79.3 and 84.3 ms a step, the GPU busy 60 %
    and 29 %, (947 - 493) / 20 ms of GPU time saved a step; a region of other steps, of one
    step or of none is not compared."""
    from dataclasses import replace
    from rooflint.judge.fix_comparison import step_times
    eager, compiled = read("h200-profile-imagenet-window"), \
        read("h200-profile-imagenet-window-compiled")
    steps = step_times(eager, compiled)
    assert steps.before_s == pytest.approx(0.07926, abs=1e-5)
    assert steps.after_s == pytest.approx(0.08430, abs=1e-5)
    assert (round(steps.before_busy, 2), round(steps.after_busy, 2)) == (0.6, 0.29)
    assert steps.gpu_saved_s == pytest.approx((eager.settings.gpu_time_s
                                               - compiled.settings.gpu_time_s) / 20)
    assert compare_fixes(eager, compiled).steps == steps

    def with_steps(result, **changes):
        program = result.program
        return replace(result, program=replace(program, steps=replace(program.steps, **changes))
                       if changes else replace(program, steps=None))
    assert step_times(eager, with_steps(compiled, count=21)) is None
    assert step_times(with_steps(eager, count=1), with_steps(compiled, count=1)) is None
    assert step_times(eager, with_steps(compiled)) is None
    assert step_times(eager, replace(compiled, program=None)) is None
