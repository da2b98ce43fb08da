"""cuDNN's benchmark trials told from a program's convolutions (judge/autotuning.py): a
convolution operator's kernel launched fewer times than the region ran steps is a trial of
cudnn.benchmark, left out of the program's kernels; nothing is told in too few steps."""

from __future__ import annotations

from rooflint.formats.trace_events import Launch
from rooflint.judge.autotuning import (CUDNN_BENCHMARK, FEWEST_STEPS, benchmark_trials,
                                       trace_without_autotuning)


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
