"""A training run ended at its first optimizer's --steps-th step (trace_bootstrap._StepLimit),
in pass 1 (its trace written, saying the step) and in pass 2 (ended where pass 1's was), on
a stand-in PyTorch: a run of hours is profiled on its first steps. nanoGPT's train.py for
300 iterations spent 47.8 s in pass 1 against 17-24 s plain, most of it under the
profiler and reading its 693 MB trace (H200, 2026-11-30)."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from rooflint.formats.trace_events import STOPPED, stopped_at_step
from rooflint.formats.trace_timing import timing_and_second_step
from rooflint.measure import program as passes
from rooflint.measure import trace_bootstrap
from stand_in_torch import OPTIMIZER_HOOKS, stand_in_program

# A stand-in PyTorch (stand_in_torch.py) with torch.optim's step hooks (OPTIMIZER_HOOKS)
# and a CUDA that can say it is capturing a graph.
STAND_IN = {
    "__init__.py": "from . import cuda, optim, overrides, profiler\n",
    "cuda/__init__.py": "from . import nvtx\nCAPTURING = False\ndef is_initialized():\n"
                        "    return False\ndef is_current_stream_capturing():\n"
                        "    return CAPTURING\n",
    **OPTIMIZER_HOOKS,
}
# A GAN's loop: two optimizers a step, each step said after both have stepped; a worker
# process that would hold the program's output open for a minute (a DataLoader's); MODE
# "thread" steps on another thread. Exit status 7 at its own end.
PROGRAM = '''\
import multiprocessing, os, sys, threading, time
import torch
worker = multiprocessing.Process(target=time.sleep, args=(60,))
worker.start()
discriminator, generator = torch.optim.Optimizer(), torch.optim.Optimizer()
def loop():
    for step in range(1, 31):
        # MODE capture: steps 4 to 6 captured in a CUDA graph
        torch.cuda.CAPTURING = os.environ.get("MODE") == "capture" and 4 <= step <= 6
        discriminator.step()
        generator.step()
        print("step", step, file=sys.stderr, flush=True)
if os.environ.get("MODE") == "thread":
    runner = threading.Thread(target=loop)
    runner.start()
    runner.join()
else:
    loop()
worker.terminate()
sys.exit(7)
'''


@pytest.fixture
def program(tmp_path, monkeypatch):
    return stand_in_program(tmp_path, monkeypatch, STAND_IN, PROGRAM)


def test_pass_one_ends_the_program_at_its_first_optimizers_step_with_its_trace(
        program, tmp_path):
    """Its fifth step of the discriminator's (the generator's steps not counted again): the
    trace written, saying the step, the exit status 0, the worker it started ended with it
    (else its output stays open for the worker's minute)."""
    said: list[str] = []
    began = time.monotonic()
    traced = passes.trace_pass(program, tmp_path, said.append, steps=5)
    assert time.monotonic() - began < 30
    trace = json.loads((tmp_path / passes.TRACE_LOG).read_text())
    assert trace[STOPPED] == 5 and stopped_at_step(trace) == 5
    assert traced.trace == trace


def _run(command, **env):
    return subprocess.run(command, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def test_pass_two_ends_the_program_where_pass_one_did(program):
    done = _run(passes.pass_two_command(program, 5))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "step 4"     # ended inside its fifth step


def test_a_step_captured_in_a_cuda_graph_does_not_end_the_program(program, tmp_path,
                                                                  monkeypatch):
    """Pass 1 cannot synchronise to write its trace while a graph is captured: the first step
    at or past the limit outside the capture ends it (the seventh here), in both passes."""
    passes.trace_pass(program, tmp_path, print, steps=5)
    assert stopped_at_step(json.loads((tmp_path / passes.TRACE_LOG).read_text())) == 5
    monkeypatch.setenv("MODE", "capture")
    passes.trace_pass(program, tmp_path, print, steps=5)
    assert stopped_at_step(json.loads((tmp_path / passes.TRACE_LOG).read_text())) == 7
    done = _run(passes.pass_two_command(program, 5))
    assert done.returncode == 0 and done.stderr.splitlines()[-1] == "step 6", done.stderr


@pytest.mark.parametrize("steps, mode", [(0, ""), (5, "thread"), (40, "")])
def test_a_program_runs_to_its_end_without_a_limit_a_step_on_another_thread_or_fewer_steps(
        program, tmp_path, steps, mode):
    """0 steps, a step taken on a thread of the program's own (where pass 1's line ranges
    cannot be closed), or a run of fewer steps than asked: the program as it would run."""
    for command in (passes.pass_two_command(program, steps),
                    [program[0], str(passes.BOOTSTRAP), str(tmp_path / "t.json"), "x",
                     str(steps), "--",
                     *program[1:]]):
        done = _run(command, MODE=mode)
        assert done.returncode == 7, done.stderr
        assert done.stderr.splitlines()[-1] == "step 30"


@pytest.mark.parametrize("value, step", [
    (20, 20), ("20", 20), ("0", None), (0, None), (-3, None), ("x", None), (True, None),
    (None, None), (2.5, None), ({"step": 3}, None), ("\u00b2", None), ("9" * 5000, None),
    (10 ** 20, None), (" 20", None)])
def test_the_step_the_program_was_ended_at_is_read_only_as_a_positive_whole_number(value, step):
    assert stopped_at_step({STOPPED: value}) == step
    assert stopped_at_step({}) is None


def test_the_bootstrap_and_the_reading_name_the_stop_alike():
    assert trace_bootstrap.STOPPED == STOPPED


def test_the_timing_of_a_trace_keeps_the_step_its_program_was_ended_at():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0, "dur": 5.0,
         "args": {"device": 0}}], STOPPED: 20}
    timing, _ = timing_and_second_step(trace)
    assert timing.stopped_at_step == 20
    del trace[STOPPED]
    assert timing_and_second_step(trace)[0].stopped_at_step is None


def test_the_plan_says_where_pass_one_ended_the_program_and_pass_two_will():
    from rooflint.judge.kernel_choice import EarlyEnd
    from rooflint.judge.kernel_times import KernelTime
    from rooflint.output.profile_words import plan_words
    kernels = [KernelTime("void k<float>(int)", "(4, 1, 1)", [1e-3]),
               KernelTime("void j<float>(int)", "(8, 1, 1)", [1e-4])]
    ended = plan_words("PyTorch's profiler", 8.04, kernels, kernels[:1], None, stopped_at=20)
    assert ended.startswith("pass 1 (PyTorch's profiler): 2 kernels in 8.0 s, the program "
                            "ended after 20 optimizer steps (--stop-after); pass 2: counters on 1")
    assert ended.endswith(" s and the rest of the program to that step")
    whole = plan_words("PyTorch's profiler", 8.04, kernels, kernels[:1], None)
    assert "--stop-after" not in whole and whole.endswith(" s and the rest of the program")
    early = plan_words("PyTorch's profiler", 8.04, kernels, kernels[:1], None,
                       early=EarlyEnd(("k",), 0.6, 4_000), stopped_at=20)
    assert early.endswith("then the program is stopped where it launches them as pass 1 saw, "
                          "about 3 s before its end under Nsight Compute (0.6 s in pass 1)")
