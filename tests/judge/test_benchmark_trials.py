"""cuDNN's benchmark trials told from a program's convolutions (judge/autotuning.py): a
convolution operator's kernel launched fewer times than the region ran steps is a trial of
cudnn.benchmark, left out of the program's kernels; nothing is told in too few steps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rooflint.formats.trace_events import Launch
from rooflint.judge.autotuning import (CUDNN_BENCHMARK, FEWEST_STEPS, benchmark_trials,
                                       trace_without_autotuning)
from rooflint.judge.kernel_names import name_key


def launch(name, operator, grid="(1, 1, 1)", duration_s=1e-4, autotuner=None):
    return Launch(name=name, grid=grid, block="(128, 1, 1)", duration_s=duration_s,
                  start_us=0.0, traced_call=True, operator=operator, autotuner=autotuner)


def step_of_a_convnet(first: bool) -> list[Launch]:
    """One training step: the kept convolution kernels forward and backward, a batch norm,
    and in the first step cuDNN's trials of other algorithms for both shapes."""
    trials = [launch(f"sm90_xmma_fprop_trial_{i}", "aten::cudnn_convolution") for i in range(4)]
    trials += [launch("sm90_xmma_dgrad_trial", "aten::convolution_backward", grid="(9, 1, 1)")]
    kept = [launch("sm90_xmma_fprop_kept", "aten::cudnn_convolution", duration_s=2e-4),
            launch("sm90_xmma_dgrad_kept", "aten::convolution_backward"),
            launch("bn_fw_tr_1C11_kernel_NCHW", "aten::cudnn_batch_norm")]
    return trials + kept if first else kept


def test_trials_are_the_convolution_kernels_launched_fewer_times_than_steps():
    steps = 5
    launches = [x for s in range(steps) for x in step_of_a_convnet(first=s == 0)]
    kept, tuning = trace_without_autotuning(launches, steps)
    assert tuning.launches == 5 and tuning.tuners == (CUDNN_BENCHMARK,)
    assert abs(tuning.gpu_s - 5e-4) < 1e-12
    assert {x.name for x in kept} == {"sm90_xmma_fprop_kept", "sm90_xmma_dgrad_kept",
                                      "bn_fw_tr_1C11_kernel_NCHW"}
    assert len(kept) == 3 * steps


def test_a_kernel_of_another_operator_launched_once_is_the_programs():
    """A one-off kernel outside the convolutions (an initialisation) is not a trial."""
    launches = [launch("fill_kernel", "aten::fill_")] + \
        [x for s in range(4) for x in step_of_a_convnet(first=False)]
    assert all(x.autotuner is None for x in benchmark_trials(launches, 4))


def test_too_few_steps_tell_nothing():
    for steps in (None, 0, FEWEST_STEPS - 1):
        launches = [x for s in range(max(steps or 1, 1))
                    for x in step_of_a_convnet(first=s == 0)]
        assert all(x.autotuner is None for x in benchmark_trials(launches, steps))


def test_a_launch_another_tuner_made_keeps_its_tuner():
    made = launch("conv_trial", "aten::cudnn_convolution", autotuner="TorchInductor's autotuner")
    assert benchmark_trials([made], 5)[0].autotuner == "TorchInductor's autotuner"


def test_the_kept_algorithm_is_never_a_trial_whatever_the_step_count():
    """Property: over 3-12 steps, every kernel launched once a step is kept, every kernel
    launched only in the first step is a trial."""
    for steps in range(FEWEST_STEPS, 13):
        launches = [x for s in range(steps) for x in step_of_a_convnet(first=s == 0)]
        marked = benchmark_trials(launches, steps)
        assert all((x.autotuner == CUDNN_BENCHMARK) == ("trial" in x.name) for x in marked)


def test_a_candidate_timed_more_often_than_the_steps_is_told_by_when_it_ran():
    """cuDNN's benchmark may time a candidate more often than the region has steps (six of a
    ResNet-50's, 14 to 44 times in 13 steps, H200): launched only before the second step
    began, it is a trial; a kernel the program keeps runs in every step."""
    steps = 4

    def at(step: int, x: Launch) -> Launch:
        return replace(x, start_us=1000.0 * step + 10)
    repeated = [at(0, launch("sm90_xmma_fprop_candidate", "aten::cudnn_convolution"))
                for _ in range(3 * steps)]
    launches = repeated + [at(s, x) for s in range(steps) for x in step_of_a_convnet(s == 0)]
    told = {x.name for x in benchmark_trials(launches, steps, steady_from_us=1000.0)
            if x.autotuner == CUDNN_BENCHMARK}
    assert "sm90_xmma_fprop_candidate" in told and "sm90_xmma_fprop_kept" not in told
    unknown = {x.name for x in benchmark_trials(launches, steps) if x.autotuner}
    assert "sm90_xmma_fprop_candidate" not in unknown    # no second step known: counted only


def test_the_second_step_starts_where_the_warm_up_step_ends():
    """On the recorded H200 training step: the region starts at its first GPU activity, its
    first step (the warm-up) lasts warmup_s, and the second starts there."""
    import json
    from pathlib import Path
    from rooflint.formats.trace_timing import timing_and_second_step
    trace = json.loads((Path(__file__).parents[1] / "fixtures" / "trace" /
                        "h200-step-trace.json").read_text())
    timing, second = timing_and_second_step(trace)
    steps = timing.steps
    region_start = min(e["ts"] for e in trace["traceEvents"]
                       if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert steps.count >= 2
    assert second == pytest.approx(region_start + steps.warmup_s * 1e6)
    assert timing_and_second_step({"traceEvents": []}) == (None, None)


def _kept_identities(launches: list[Launch]) -> set:
    from rooflint.judge.kernel_names import name_key
    return {(name_key(x.name), x.grid, x.block) for x in launches if x.autotuner is None}


@pytest.mark.parametrize("steps", range(FEWEST_STEPS, 9))
def test_pass_two_skips_the_launches_up_to_the_last_trial(steps):
    """Nsight Compute selects pass 2's kernels by name: without the skip it profiles each
    trial of a chosen convolution function once. The skip ends right after the last trial,
    and every kept kernel still launches after it."""
    from rooflint.judge.autotuning import launches_to_skip
    marked = benchmark_trials([x for s in range(steps) for x in step_of_a_convnet(s == 0)],
                              steps)
    skip = launches_to_skip(marked, _kept_identities(marked))
    assert skip == 5                          # the first step's five trials come first
    assert all(x.autotuner is None for x in marked[skip:])


def test_another_tuners_trials_before_the_last_are_not_skipped():
    """Triton's autotuner may not run its trials again in pass 2 (its cache): they are not
    counted, so pass 2 skips fewer launches, never a kept kernel's."""
    from rooflint.judge.autotuning import launches_to_skip
    triton = [launch(f"triton_trial_{i}", None, autotuner="Triton's autotuner") for i in range(3)]
    steps = 4
    marked = benchmark_trials(triton + [x for s in range(steps)
                                        for x in step_of_a_convnet(s == 0)], steps)
    assert launches_to_skip(marked, _kept_identities(marked)) == 5


def test_nothing_is_skipped_without_trials_under_a_graph_or_when_a_kernel_would_be_lost():
    from rooflint.judge.autotuning import launches_to_skip
    steps = 4
    plain = [x for s in range(steps) for x in step_of_a_convnet(first=False)]
    assert launches_to_skip(benchmark_trials(plain, steps), _kept_identities(plain)) == 0
    marked = benchmark_trials([x for s in range(steps) for x in step_of_a_convnet(s == 0)],
                              steps)
    kept = _kept_identities(marked)
    graphed = [replace(x, graph=True) if i == len(marked) - 1 else x
               for i, x in enumerate(marked)]
    assert launches_to_skip(graphed, kept) == 0
    once = launch("init_kernel", "aten::fill_")   # chosen, launched only before the last trial
    early = benchmark_trials([once, *marked], steps)
    assert launches_to_skip(early, kept | _kept_identities([once])) == 0
    assert launches_to_skip(early, kept) == 6


def test_a_last_smaller_batch_keeps_the_skip_past_the_first_steps_trials():
    """A last batch of another size brings cuDNN's benchmark back at the program's end, for
    its own shapes, and its kernels launch once (DCGAN's, on fake data): pass 2 still skips
    the first step's trials, and the last batch's kernels, launched once far past the
    skip, are still profiled. A kernel launched once right after the trials is not a reason
    to skip nothing either: the skip ends at an earlier trial, or nowhere."""
    from rooflint.judge.autotuning import launches_to_skip
    steps = 8
    last_batch = [replace(x, grid="(3, 1, 1)") for x in step_of_a_convnet(first=True)]
    marked = benchmark_trials([*[x for s in range(steps) for x in step_of_a_convnet(s == 0)],
                               *last_batch], steps)
    assert [x.autotuner is not None for x in marked[-len(last_batch):]] == [True] * 7 + [False]
    chosen = _kept_identities(marked)
    assert launches_to_skip(marked, chosen) == 5
    assert all(any(identity == (name_key(x.name), x.grid, x.block) for x in marked[5:])
               for identity in chosen)
    right_after = launch("zero_grad_kernel", "aten::zero_")
    early = [*marked[:5], right_after, *marked[5:]]
    # launched once at 5, it is far enough only after the skip of trials 0 and 1
    assert launches_to_skip(early, chosen | _kept_identities([right_after])) == 2
    assert launches_to_skip(early, chosen) == 5


def recorded_convnet() -> tuple[list[list[str]], list[Launch]]:
    """Pass 1 of a ResNet-50 training step under cuDNN's benchmark (H200): each launch's
    name, grid, block, whether it was a trial and whether it was chosen; and the launches,
    trials marked."""
    import lzma
    from pathlib import Path
    rows = [line.split("\t") for line in lzma.decompress(
        (Path(__file__).parents[1] / "fixtures" / "trace" / "h200-convnet-launches.tsv.xz")
        .read_bytes()).decode().splitlines() if not line.startswith("#")]
    return rows, [Launch(name=name, grid=grid, block=block, duration_s=1e-6, start_us=float(i),
                         autotuner=CUDNN_BENCHMARK if trial == "1" else None)
                  for i, (name, grid, block, trial, _) in enumerate(rows)]


def test_a_resnets_pass_two_leaves_out_the_trials_of_its_chosen_functions():
    """pass 1 of a ResNet-50 training step under cuDNN's benchmark (H200; each launch's
    name, grid and block, whether it was a trial, whether it was chosen): pass 2 skips the
    launches up to the last trial, every chosen kernel still launching after them, and so
    leaves out the launch shapes of the chosen functions that only the warm-up ran."""
    from collections import Counter
    from rooflint.judge.autotuning import LAUNCHES_AFTER_SKIP, launches_to_skip
    from rooflint.judge.kernel_names import name_key
    rows, marked = recorded_convnet()
    chosen = {(name_key(name), grid, block) for name, grid, block, _, was in rows if was == "1"}
    assert (len(marked), len(chosen)) == (13419, 93)
    skip = launches_to_skip(marked, chosen)
    assert skip == 2669
    after = Counter((name_key(x.name), x.grid, x.block) for x in marked[skip:])
    assert min(after[identity] for identity in chosen) >= LAUNCHES_AFTER_SKIP
    functions = {identity[0] for identity in chosen}
    shapes = {(name_key(x.name), x.grid, x.block) for x in marked
              if name_key(x.name) in functions}
    assert len(shapes - set(after)) == 62          # pass 2's launches left out


def test_pass_two_is_estimated_by_the_launch_shapes_it_profiles_trials_among_them():
    """The same ResNet-50 step's 93 chosen kernels: 155 launch shapes of their functions in
    pass 1 (pass 2 profiled 160 launches without the skip, H200), 93 after the skip (it
    profiled 81-89); a kernel always counts one. DCGAN, with no skip then (its last,
    smaller batch brought cuDNN's benchmark back): 0.3 s for each of its 77 kernels had
    said 23 s where its 152 launches took 43 s."""
    from rooflint.judge.kernel_choice import pass2_estimate_s, profiled_shapes
    from rooflint.judge.kernel_times import KernelTime
    rows, marked = recorded_convnet()
    chosen = list({(name, grid, block): KernelTime(name, grid, block=block)
                   for name, grid, block, _, was in rows if was == "1"}.values())
    assert profiled_shapes(chosen, marked) == 155
    assert profiled_shapes(chosen, marked, skip=2669) == 93
    assert profiled_shapes(chosen, []) == len(chosen)        # Nsight Compute timed pass 1
    assert pass2_estimate_s(155) == pytest.approx(46.5)


def timed_steps(steps: int, step_us: float, evaluation: bool = False) -> list[Launch]:
    """A training loop's launches, each ``step_us`` apart a step: the first step's cuDNN
    trials, then the kept kernels every step; an evaluation at another batch (another grid)
    at the end where asked."""
    found = []
    for s in range(steps):
        for i, x in enumerate(step_of_a_convnet(s == 0)):
            found.append(replace(x, start_us=s * step_us + i))
    if evaluation:
        found.append(replace(step_of_a_convnet(False)[2], grid="(2, 1, 1)",
                             start_us=steps * step_us))
    return benchmark_trials(found, steps)


def test_pass_two_ends_its_program_once_the_chosen_kernels_first_shapes_are_profiled():
    """A long loop of one step: pass 2 has what it needs from the first step after the
    skip, and pass 1 ran 98 steps more: the program is ended there, after the launches of
    these functions in this order. An evaluation at another shape at the loop's end, a
    CUDA graph, a program that ends soon after, or no launches (Nsight Compute timed pass
    1): run to the end."""
    from rooflint.judge.autotuning import launches_to_skip
    from rooflint.judge.kernel_choice import EARLY_END_AFTER_S, early_end
    from rooflint.judge.kernel_times import kernel_times_from_trace
    launches = timed_steps(100, step_us=50_000.0)
    kept = [x for x in launches if x.autotuner is None]
    chosen = kernel_times_from_trace(kept)
    skip = launches_to_skip(launches, {k.identity for k in chosen})
    assert skip == 5
    end = early_end(chosen, launches, skip)
    assert end.functions == ("sm90_xmma_fprop_kept", "sm90_xmma_dgrad_kept",
                             "bn_fw_tr_1C11_kernel_NCHW")
    assert end.after_s == pytest.approx(99 * 0.05 - 7e-6)
    assert end.launches_after == 99 * 3
    evaluated = timed_steps(100, step_us=50_000.0, evaluation=True)
    assert early_end(kernel_times_from_trace([x for x in evaluated if x.autotuner is None]),
                     evaluated, skip) is None
    assert early_end(chosen, [replace(x, graph=True) for x in launches], skip) is None
    short = timed_steps(100, step_us=EARLY_END_AFTER_S * 1e6 / 200)
    assert early_end(chosen, short, skip) is None
    assert early_end(chosen, [], 0) is None


@pytest.mark.parametrize("steps, ended", [(200, True), (170, False)])
def test_a_fast_loop_of_many_launches_is_ended_for_the_time_nsight_compute_adds(steps,
                                                                               ended):
    """Pass 1 ran the loop on for well under EARLY_END_AFTER_S, 3 ms a step: under Nsight
    Compute each launch after the last profiled one costs NCU_LAUNCH_S more (the ResNet-50
    step's last 11 steps: 2.9 s there, 0.2 s in pass 1), so 200 steps of 15 launches are
    worth ending early (2.1 s) and 170 are not (1.8 s)."""
    from rooflint.judge.kernel_choice import EARLY_END_AFTER_S, NCU_LAUNCH_S, early_end
    from rooflint.judge.kernel_times import kernel_times_from_trace
    step = step_of_a_convnet(False)
    loop = [replace(x, start_us=s * 3_000.0 + i * 200.0)
            for s in range(steps) for i, x in enumerate(step * 5)]
    end = early_end(kernel_times_from_trace(loop), loop)
    assert (end is not None) is ended
    if end:
        assert end.after_s < EARLY_END_AFTER_S / 3
        assert end.under_ncu_s == pytest.approx(end.after_s + end.launches_after * NCU_LAUNCH_S)
        assert end.launches_after == steps * 15 - 3


def test_a_short_training_step_runs_pass_two_to_its_end():
    """The recorded H200 training step (five steps, 2,414 launches): the chosen kernels'
    shapes have all come by launch 440, 0.2 s before its last launch: nothing worth ending
    early (EARLY_END_AFTER_S)."""
    import json
    import lzma
    from pathlib import Path
    from rooflint.formats.trace_events import launches
    from rooflint.judge.kernel_choice import choose, early_end
    from rooflint.judge.kernel_times import kernel_times_from_trace
    trace = json.loads(lzma.decompress((Path(__file__).parents[1] / "fixtures" / "trace"
                                        / "h200-train-step-trace.json.xz").read_bytes()))
    found = launches(trace)
    chosen = choose(kernel_times_from_trace(found))
    assert (len(found), len(chosen)) == (2414, 48)
    assert early_end(chosen, found) is None
    later = [replace(x, start_us=x.start_us + 5e6) if i > 440 else x for i, x in enumerate(found)]
    end = early_end(chosen, later)
    assert len(end.functions) == 48 and end.after_s == pytest.approx(5.196, abs=0.01)
