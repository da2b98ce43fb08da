"""The per-fix part of `compare` on two profiles (issue 47, item 8): it fits every width,
says each predicted fix with its measured and predicted saving, and the committed example
is what it prints."""

from __future__ import annotations

import pytest

from edges import REPO
from rooflint.common.units import format_time
from rooflint.formats.results import read_result
from rooflint.judge.fix_comparison import compare_fixes
from rooflint.output.fix_comparison import comparison_lines

PROFILE = REPO / "examples" / "profile"
EXAMPLE = PROFILE / "h200-compare-fix-train-eager-compiled.txt"


def train_step():
    return compare_fixes(read_result(PROFILE / "h200-profile-train-eager-fixes.json"),
                         read_result(PROFILE / "h200-profile-train-compiled.json"))


@pytest.mark.parametrize("width", [20, 40, 80, 100, 200])
def test_every_line_fits_the_width(width):
    assert all(len(line) <= width for line in comparison_lines(train_step(), width))


def test_each_fix_is_said_with_its_measured_and_predicted_saving():
    program = train_step()
    text = "\n".join(comparison_lines(program, 200))
    for row in program.fixes:
        line = next(x for x in text.splitlines() if x.startswith(row.id + " "))
        assert format_time(row.predicted_s) in line
        assert format_time(abs(row.measured_s)) in line


def test_the_committed_example_is_what_compare_prints():
    assert "\n".join(comparison_lines(train_step(), 100)) in EXAMPLE.read_text()


def test_regions_of_unlike_steps_are_said_to_be_different_work():
    """nanoGPT's 300 iterations profiled to their end beside its first 20 steps
    (--stop-after): 2.05 s against 144 ms of GPU time is not a saving, and the line under
    the region's time says why; two windows of 20 steps (eager, compiled) say nothing."""
    full, window = (read_result(PROFILE / f"h200-profile-nanogpt-300-{n}.json")
                    for n in ("eager", "window"))
    lines = comparison_lines(compare_fixes(full, window), 200)
    assert lines[1] == ("  A's region holds 301 steps, B's 20 (ended there by --stop-after): "
                        "not the same work; profile both with the same --stop-after")
    assert "ended there by --stop-after), B's 301" in comparison_lines(
        compare_fixes(window, full), 200)[1]
    compiled = read_result(PROFILE / "h200-profile-nanogpt-300-window-compiled.json")
    assert compare_fixes(window, compiled).unlike_steps is None
    assert "\n".join(comparison_lines(compare_fixes(window, compiled), 140)) in (
        PROFILE / "h200-compare-nanogpt-window-eager-compiled.txt").read_text()


def test_a_step_that_did_not_follow_the_gpu_time_saved_says_so():
    """pytorch/examples' imagenet (H200): torch.compile saved 22.7 ms of GPU time a step,
    and its steps went from 79.3 to 84.3 ms under the profiler (its DataLoader's fake
    images set their pace: 65 and 67 ms plain); nanoGPT's window saved 1.73 ms a step and
    its step shortened 2.5 ms: the step's line alone."""
    eager, compiled = (read_result(PROFILE / f"h200-profile-imagenet-window{n}.json")
                       for n in ("", "-compiled"))
    lines = comparison_lines(compare_fixes(eager, compiled), 200)
    assert lines[1:4] == [
        "  a step under the profiler:   79.3 ms →   84.3 ms, the GPU busy 60% → 29% of the "
        "region",
        "    22.7 ms of GPU time saved a step did not shorten it: the host or the input sets "
        "its pace",
        "    (the profiler slows the host: time the program's steps without rooflint to see)"]
    assert "\n".join(comparison_lines(compare_fixes(eager, compiled), 140)) in (
        PROFILE / "h200-compare-imagenet-window-eager-compiled.txt").read_text()
    window, faster = (read_result(PROFILE / f"h200-profile-nanogpt-300-window{n}.json")
                      for n in ("", "-compiled"))
    lines = comparison_lines(compare_fixes(window, faster), 200)
    assert lines[1].startswith("  a step under the profiler:     61 ms →   58.5 ms")
    assert lines[2].startswith("torch.compile in B")


def test_the_json_says_the_steps_and_whether_they_followed_the_gpu_time():
    import json
    from rooflint.commands.compare import fix_check_json
    eager, compiled = (read_result(PROFILE / f"h200-profile-imagenet-window{n}.json")
                       for n in ("", "-compiled"))
    steps = json.loads(json.dumps(fix_check_json(compare_fixes(eager, compiled))))["steps"]
    assert steps["follows_gpu"] is False
    assert round(steps["before_s"] * 1e3, 1) == 79.3 and round(steps["after_s"] * 1e3, 1) == 84.3
    train = fix_check_json(train_step())
    assert train["steps"] is None and train["unlike_steps"] is None
