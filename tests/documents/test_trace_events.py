"""Pass 1 from PyTorch's profiler: launches, their origins, and their identity against
Nsight Compute's names, on traces of one training step of a small bf16 transformer
(forward, backward, fused AdamW): one recorded on an H100 with Python stacks, with ncu's
pass 1 of the same program beside it, and one recorded on an H200 by rooflint's bootstrap,
whose ranges name the line of the program that called each torch function."""

from __future__ import annotations

import csv
from contextlib import contextmanager
from collections import Counter
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from rooflint.judge import (autotuning, kernel_choice, kernel_libraries, kernel_names,
                            kernel_times, launch_matching)
from rooflint.engine import program as app
from rooflint.measure.trace_bootstrap import DYNAMO, LIBRARY, PACKAGE, PROGRAM, _programs_frames
from rooflint.measure import ncu
from rooflint.measure.program import Choice
from rooflint.formats.ranks import merged
from rooflint.formats.trace_events import (AUTOGRAD_NODE, AUTOTUNING_RANGE, COMPILED_REGION,
                                           LINE_RANGE, TENSOR_PRECISION_OF_DTYPE, Launch,
                                           Origin, _programs_frame, launches, origins,
                                           tensor_precisions)

FIXTURES = Path(__file__).parents[1] / "fixtures"
TRACE = json.loads((FIXTURES / "trace" / "h100-step-trace.json").read_text())
LINES_TRACE = json.loads((FIXTURES / "trace" / "h200-step-trace.json").read_text())
COMPILED_TRACE = json.loads((FIXTURES / "trace" / "h100-step-compiled-trace.json").read_text())
# examples/apps/jax_mlp.py (30 jitted steps) under PyTorch's profiler, kernels only
JAX_TRACE = json.loads((FIXTURES / "trace" / "h100-jax-mlp-trace.json").read_text())
# examples/apps/triton_autotune.py under rooflint's bootstrap on an H100: every launch
# outside the autotuner's 12 benchmarking ranges, the first 12 inside each
TUNED_TRACE = json.loads((FIXTURES / "trace" / "h100-triton-autotune-trace.json").read_text())
NCU_SHAPES = FIXTURES / "ncu" / "h100-train-step-pass1-shapes.csv"
# tests/fixtures/trace/step.py, the program of both traces: its lines, as the user wrote them
STEP_LINES = {9: "def forward", 10: "s.qkv(s.ln1(x))", 11: "scaled_dot_product_attention",
              12: "x = x + s.o(", 13: "s.down(torch.nn.functional.gelu", 20: "loss.backward()"}


@pytest.fixture(scope="module")
def step():
    return launches(TRACE)


@pytest.fixture(scope="module")
def lined():
    return launches(LINES_TRACE)


def ncu_identities() -> set[kernel_times.Identity]:
    text = NCU_SHAPES.read_text().splitlines()
    header = next(i for i, line in enumerate(text) if line.startswith('"ID"'))
    rows = list(csv.DictReader(io.StringIO("\n".join(text[header:]))))[1:]     # units row
    return {kernel_times.identity(row) for row in rows}


def test_every_kernel_of_the_step_is_a_launch_in_launch_order(step):
    kernels = [e for e in TRACE["traceEvents"] if e.get("cat") == "kernel"]
    assert len(step) == len(kernels) == 128
    assert [x.start_us for x in step] == sorted(x.start_us for x in step)
    assert all(x.grid.startswith("(") and x.block.startswith("(") for x in step)
    assert sum(x.duration_s for x in step) == pytest.approx(
        sum(e["dur"] for e in kernels) * 1e-6)


def test_every_launch_has_its_operator_and_the_line_that_called_it(lined):
    """The bootstrap's ranges give the exact line (not the line the function starts at):
    the step's kernels come from the lines of Block.forward that call torch and from the
    step's loss.backward()/optimizer lines, and every one is named."""
    source = (FIXTURES / "trace" / "step.py").read_text().splitlines()
    assert len(lined) == 330 and all(x.operator for x in lined)
    lines = {x.line for x in lined}
    assert all(line and line.startswith("step.py:") for line in lines)
    numbers = {int(line.split(":")[1].split()[0]) for line in lines}
    assert {10, 11, 12, 13} <= numbers and 9 not in numbers       # never the def line
    for number, words in STEP_LINES.items():
        assert words in source[number - 1]


def test_a_backward_kernel_is_traced_to_the_forward_line_it_differentiates(lined):
    backward = [x for x in lined if x.backward_of]
    assert {x.backward_of for x in backward} >= {"AddmmBackward0", "NativeLayerNormBackward0",
                                                 "ScaledDotProductCudnnAttentionBackward0"}
    attention = [x for x in backward if x.backward_of.startswith("ScaledDotProduct")]
    assert {x.line for x in attention} == {"step.py:11 in Block.forward"}
    addmm = [x for x in backward if x.backward_of == "AddmmBackward0"]
    assert {x.operator for x in addmm} >= {"aten::mm", "aten::sum"}
    assert {x.line for x in addmm} == {f"step.py:{n} in Block.forward" for n in (10, 12, 13)}


def test_line_ranges_recorded_as_operators_give_every_launch_the_same_origin(lined):
    """Where PyTorch has its C++ range (trace_bootstrap._line_range, ten times cheaper than
    record_function), a line range is in the trace as a ``cpu_op`` and has no copy on the
    GPU's timeline: the step's trace so recorded gives each launch the same operator,
    inputs, line and backward node, and no launch a line range for its operator."""
    def as_operator(event):
        if event.get("cat") == "user_annotation" and event["name"].startswith(LINE_RANGE):
            return {**event, "cat": "cpu_op"}
        return event
    events = [as_operator(e) for e in LINES_TRACE["traceEvents"]
              if not (e.get("cat") == "gpu_user_annotation"
                      and e["name"].startswith(LINE_RANGE))]
    assert sum(e.get("cat") == "cpu_op" and e["name"].startswith(LINE_RANGE)
               for e in events) == 1142
    fast = launches({**LINES_TRACE, "traceEvents": events})

    def origin(x):
        return x.operator, x.inputs, x.dtypes, x.line, x.via, x.backward_of, x.ranges
    assert [origin(x) for x in fast] == [origin(x) for x in lined]
    assert not any(x.operator.startswith(LINE_RANGE) for x in fast)


def test_a_merged_jobs_backward_kernels_keep_their_own_ranks_forward_lines(lined):
    """Each rank's autograd numbers its operators from the start: in a launcher's merged
    trace two ranks' forward operators carry the same sequence numbers, and a backward
    kernel is traced to its own process's forward operator, not to the other rank's that
    ran a moment later (nanoGPT under torchrun had a quarter of its attention backward
    kernels on MLP lines)."""
    pid = next(e["pid"] for e in LINES_TRACE["traceEvents"] if e.get("cat") == "cpu_op")
    other = json.loads(json.dumps(LINES_TRACE).replace("step.py", "other.py"))
    other["traceEvents"] = [{**e, "ts": e["ts"] + 1.0, "pid": e["pid"] + 1 if e["pid"] == pid
                             else e["pid"]} if isinstance(e.get("ts"), float) else e
                            for e in other["traceEvents"]]       # the next process, 1 us later
    job = launches(merged([LINES_TRACE, other]))
    mine = [x for x in job if x.line is None or "step.py" in x.line]
    assert len(job) == 2 * len(lined) and len(mine) == len(lined)
    assert [x.line for x in mine] == [x.line for x in lined]
    assert sum(bool(x.backward_of) for x in mine) > 100


def test_a_trace_with_pythons_frames_names_the_programs_function_by_its_first_line(step):
    """PyTorch's own Python frames (with_stack=True) know a function only by the line it
    begins at: a trace with them but without the bootstrap's ranges (a user's, for
    `rooflint import`) gives each launch its operator and the program's innermost function
    around its call, or around its forward operator's for a backward kernel, at that line:
    Block.forward's for the blocks' kernels, forward and backward; step's for the loss, its
    backward and the optimizer. PyTorch's, the standard library's and built-in frames are
    not the program's."""
    source = (FIXTURES / "trace" / "step.py").read_text().splitlines()
    assert all(x.operator for x in step) and all(x.via is None for x in step)
    assert {x.line for x in step} == {"step.py:9 in forward", "step.py:17 in step"}
    assert source[8].strip().startswith("def forward") and source[16] == "def step():"
    attention = [x for x in step if "attention" in (x.operator or "")]
    assert {x.backward_of is None for x in attention} == {True, False}
    assert {x.line for x in attention} == {"step.py:9 in forward"}
    assert {x.line for x in step if x.operator == "aten::_fused_adamw_"} == {"step.py:17 in step"}


@pytest.mark.parametrize("frame, programs", [
    ("step.py(17): step", True),
    ("/home/me/train/model.py(62): forward", True),
    ("/venv/lib/python3.12/site-packages/transformers/models/gpt2/modeling_gpt2.py(400): "
     "forward", True),                      # no installed package is told from the program
    ("torch/nn/modules/linear.py(125): forward", False),
    ("/usr/lib/python3/dist-packages/torch/nn/functional.py(1700): gelu", False),
    ("typing.py(392): inner", False),
    ("/usr/lib/python3.12/contextlib.py(81): inner", False),
    ("<frozen runpy>(262): run_path", False),
    ("<built-in method mm of type object at 0x7f302f33e180>", False),
    ("nn.Module: Linear_0", False),
])
def test_the_programs_frames_are_neither_pytorchs_nor_pythons(frame, programs):
    """The frames PyTorch's profiler names, relative to the sys.path entry that held the
    file or absolute (trace_events._programs_frame)."""
    assert _programs_frame(frame) is programs


def test_line_ranges_are_not_nvtx_ranges(lined):
    assert not any(r.startswith(LINE_RANGE) for x in lined for r in x.ranges)


def test_a_compiled_steps_kernels_come_from_the_line_that_called_the_compiled_model():
    """The same step under torch.compile (``step.py 3 --compile``, the third step, recorded
    on an H100): Inductor's Triton kernels, the GEMMs it calls out to and the compiled
    backward all come from line 19, where the step calls the compiled model; the gradient
    clipping and the optimizer from line 20."""
    compiled = launches(COMPILED_TRACE)
    assert len(compiled) == 118
    assert {x.line for x in compiled} == {"step.py:19 in step", "step.py:20 in step"}
    triton = [x for x in compiled if (x.operator or "").startswith("triton_")]
    backward = [x for x in compiled if x.backward_of == "CompiledFunctionBackward"]
    assert len(triton) >= 40 and len(backward) >= 40
    assert {x.line for x in triton + backward} == {"step.py:19 in step"}
    assert {x.line for x in compiled if "FusedAdam" in x.name} == {"step.py:20 in step"}


def user_range(name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur,
            "pid": 1, "tid": 1}


def test_a_compiled_regions_triton_kernels_come_from_the_line_that_called_it():
    """Inside TorchDynamo's region a Triton kernel runs under no torch function call: it
    takes the region's first line range (the bootstrap names the line that called the
    compiled function there); a launch outside any region keeps its own line."""
    called = f"{LINE_RANGE}/w/train.py(70): step"
    eager = f"{LINE_RANGE}/w/train.py(75): step"
    events = [{"ph": "X", "cat": "cpu_op", "name": f"{COMPILED_REGION}: 0/0", "ts": 100,
               "dur": 100, "pid": 1, "tid": 1},
              user_range(called, 110, 10),
              {"ph": "X", "cat": "cuda_runtime", "name": "cuLaunchKernel", "ts": 130, "dur": 2,
               "pid": 1, "tid": 1, "args": {"correlation": 7}},
              {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_gelu_0", "ts": 140,
               "dur": 5, "pid": 0, "tid": 7, "args": {"correlation": 7, "grid": [64, 1, 1],
                                                      "block": [128, 1, 1]}},
              user_range(eager, 300, 20),
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 305,
               "dur": 2, "pid": 1, "tid": 1, "args": {"correlation": 8}},
              {"ph": "X", "cat": "kernel", "name": "k", "ts": 310, "dur": 5, "pid": 0,
               "tid": 7, "args": {"correlation": 8, "grid": [1, 1, 1], "block": [32, 1, 1]}}]
    compiled, plain = launches({"traceEvents": events})
    assert compiled.line == "train.py:70 in step"
    assert plain.line == "train.py:75 in step"


@dataclass
class Frame:
    """What the bootstrap reads of a Python frame."""

    f_code: SimpleNamespace
    f_lineno: int
    f_back: "Frame | None" = None


def stack(*frames: tuple[str, int, str]) -> Frame:
    """A call stack from its outermost frame to its innermost; returns the innermost."""
    frame = None
    for filename, line, name in frames:
        frame = Frame(SimpleNamespace(co_filename=filename, co_name=name, co_qualname=name),
                      line, frame)
    return frame


def kind(filename: str) -> int:
    return (DYNAMO if filename.startswith("torch/_dynamo/") else
            LIBRARY if filename.startswith(("torch/", "/tmp/torchinductor_")) else
            PACKAGE if filename.startswith("site-packages/") else PROGRAM)


def test_the_bootstrap_names_the_programs_nearest_line_or_the_call_of_a_compiled_function():
    """Eager: the program's frame nearest the torch call (inside nn.Linear: the line in
    Block.forward that called the module). Compiled: Model.forward runs under TorchDynamo,
    its line stuck at its entry, so the line is step's call of the compiled model."""
    eager = stack(("train.py", 90, "main"), ("train.py", 70, "step"),
                  ("torch/nn/modules/module.py", 1775, "_call_impl"),
                  ("train.py", 37, "Block.forward"),
                  ("torch/nn/modules/module.py", 1775, "_call_impl"),
                  ("torch/nn/modules/linear.py", 134, "forward"))
    assert _programs_frames(eager, kind) == ("train.py(37): Block.forward", None)
    compiled = stack(("train.py", 90, "main"), ("train.py", 70, "step"),
                     ("torch/nn/modules/module.py", 1775, "_call_impl"),
                     ("torch/_dynamo/eval_frame.py", 845, "_fn"),
                     ("train.py", 47, "Model.forward"),
                     ("torch/_functorch/_aot_autograd/runtime_wrappers.py", 350, "runtime_wrapper"),
                     ("/tmp/torchinductor_me/ab/cab.py", 900, "call"))
    assert _programs_frames(compiled, kind) == ("train.py(70): step", None)
    library_only = stack(("torch/utils/data.py", 10, "worker"), ("torch/nn/functional.py", 5, "f"))
    assert _programs_frames(library_only, kind) == (None, None)


def test_a_packages_model_names_its_own_line_inside_the_programs():
    """A Hugging Face model's kernels all come from the program's one ``model(batch)`` line:
    the model's own line (its package's frame nearest the torch call) is named too."""
    hugging_face = stack(("train.py", 31, "main"),
                         ("torch/nn/modules/module.py", 1775, "_call_impl"),
                         ("site-packages/transformers/models/gpt2/modeling_gpt2.py", 900,
                          "GPT2LMHeadModel.forward"),
                         ("site-packages/transformers/models/gpt2/modeling_gpt2.py", 220,
                          "GPT2MLP.forward"),
                         ("torch/nn/modules/linear.py", 134, "forward"))
    assert _programs_frames(hugging_face, kind) == (
        "train.py(31): main", "site-packages/transformers/models/gpt2/modeling_gpt2.py(220): "
        "GPT2MLP.forward")
    callback = stack(("train.py", 31, "main"),
                     ("site-packages/transformers/trainer.py", 2400, "Trainer.training_step"),
                     ("model.py", 12, "MyModel.forward"), ("torch/nn/functional.py", 5, "f"))
    assert _programs_frames(callback, kind) == ("model.py(12): MyModel.forward", None)
    as_module = stack(("site-packages/tool/cli.py", 3, "main"), ("torch/nn/functional.py", 5, "f"))
    assert _programs_frames(as_module, kind) == ("site-packages/tool/cli.py(3): main", None)


def test_the_packages_line_is_the_launchs_and_the_programs_says_where_from():
    """The bootstrap's two nested ranges: the inner (the package's) is the line."""
    def event(name, ts, dur, cat, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
                "args": args}
    trace = {"traceEvents": [
        event(LINE_RANGE + "/home/me/train.py(31): main", 0, 100, "user_annotation"),
        event(LINE_RANGE + "/venv/site-packages/transformers/modeling_gpt2.py(220): "
              "GPT2MLP.forward", 1, 90, "user_annotation"),
        event("aten::addmm", 2, 80, "cpu_op"),
        event("cudaLaunchKernel", 3, 5, "cuda_runtime", correlation=7),
        {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst", "pid": 0, "tid": 7, "ts": 10,
         "dur": 20, "args": {"correlation": 7, "grid": [1, 1, 1], "block": [1, 1, 1]}}]}
    (launch,) = launches(trace)
    assert launch.line == "modeling_gpt2.py:220 in GPT2MLP.forward"
    assert launch.via == "train.py:31 in main"
    (origin,) = origins([launch])
    assert origin.words == ("by aten::addmm at modeling_gpt2.py:220 in GPT2MLP.forward "
                            "(from train.py:31 in main)")


def test_a_kernel_a_custom_backward_launches_is_traced_to_the_backwards_own_line():
    """Liger-Kernel's RMSNorm (a torch.autograd.Function whose backward launches its own
    Triton kernel, H200): the launch sits inside the bootstrap's line range on autograd's
    thread, the line of the program's own backward, which is the line to change; its
    forward's line had been given instead, and where the forward ran outside the profiled
    steps, none."""
    def event(name, ts, dur, cat, tid, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts,
                "dur": dur, "args": args}
    trace = {"traceEvents": [
        event(LINE_RANGE + "/home/me/bench.py(40): main", 0, 10, "user_annotation", 1),
        event("LigerRMSNormFunction", 1, 8, "cpu_op", 1, **{"Sequence number": 5}),
        event(AUTOGRAD_NODE + "LigerRMSNormFunctionBackward", 20, 30, "cpu_op", 2,
              **{"Sequence number": 5}),
        event("LigerRMSNormFunctionBackward", 21, 28, "cpu_op", 2),
        event(LINE_RANGE + "/home/me/liger/ops/rms_norm.py(552): rms_norm_backward", 22, 20,
              "user_annotation", 2),
        event("cuLaunchKernelEx", 23, 5, "cuda_driver", 2, correlation=9),
        {"ph": "X", "cat": "kernel", "name": "_rms_norm_backward_kernel", "pid": 0, "tid": 7,
         "ts": 30, "dur": 20, "args": {"correlation": 9, "grid": [132, 1, 1],
                                       "block": [128, 1, 1]}}]}
    (launch,) = launches(trace)
    assert launch.backward_of == "LigerRMSNormFunctionBackward"
    assert launch.line == "rms_norm.py:552 in rms_norm_backward"


def test_a_gradient_accumulation_is_traced_to_the_line_that_ran_the_backward_pass():
    """AccumulateGrad differentiates no forward operator: the gradients Liger-Kernel's
    benchmark added into its inputs' .grad at every timed backward (5 % of its chosen GPU
    time) had no line; the line that called backward() is the one that made them."""
    def event(name, ts, dur, cat, tid, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts,
                "dur": dur, "args": args}
    trace = {"traceEvents": [
        event(LINE_RANGE + "/home/me/bench.py(61): full", 0, 100, "user_annotation", 1),
        # a thread of the program's own, busy since before, is not the backward's caller
        event(LINE_RANGE + "/home/me/loader.py(5): prefetch", -10, 200, "user_annotation", 3),
        event("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 20, 30,
              "cpu_op", 2),
        event("aten::add_", 21, 28, "cpu_op", 2),
        event("cudaLaunchKernel", 23, 5, "cuda_runtime", 2, correlation=9),
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0,
         "tid": 7, "ts": 30, "dur": 20, "args": {"correlation": 9, "grid": [32768, 1, 1],
                                                 "block": [128, 1, 1]}}]}
    (launch,) = launches(trace)
    assert launch.backward_of == "torch::autograd::AccumulateGrad"
    assert (launch.line, launch.via) == ("bench.py:61 in full", None)


def test_a_merged_jobs_launch_is_placed_within_its_own_process():
    """In a launcher's merged trace the ranks' threads run side by side: a gradient
    accumulation on rank 1's autograd thread is traced to rank 1's backward() line, not
    to rank 0's line that began later (nanoGPT under torchrun: its job's all-reduces and
    accumulations had a fifth of their launches on the other rank's data loading and
    forward lines), and rank 0's range (`--nvtx`) does not hold rank 1's launch."""
    def event(name, ts, dur, cat, pid, tid, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts,
                "dur": dur, "args": {**args, "process": pid}}
    trace = {"traceEvents": [
        event("step", 0, 100, "user_annotation", 101, 1),
        event(LINE_RANGE + "/home/me/train.py(125): get_batch", 18, 40, "user_annotation",
              101, 1),
        event(LINE_RANGE + "/home/me/train.py(305): <module>", 0, 100, "user_annotation",
              102, 1),
        event("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 20, 30,
              "cpu_op", 102, 2),
        event("aten::add_", 21, 28, "cpu_op", 102, 2),
        event("cudaLaunchKernel", 23, 5, "cuda_runtime", 102, 2, correlation=9),
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 1,
         "tid": 7, "ts": 30, "dur": 20, "args": {"correlation": 9, "grid": [32768, 1, 1],
                                                 "block": [128, 1, 1], "process": 102}}]}
    (launch,) = launches(trace)
    assert launch.backward_of == "torch::autograd::AccumulateGrad"
    assert launch.line == "train.py:305 in <module>" and launch.ranges == ()


def test_a_kernel_whose_later_launches_carry_no_line_is_shown_from_its_line():
    """The bootstrap names the line of a Triton kernel's first LINED_LAUNCHES launches only:
    Liger-Kernel's RMSNorm backward, 100 launches with its line and 163 without, had read
    as launched from nowhere."""
    def launch(line):
        x = Launch("_rms_norm_backward_kernel", "(132, 1, 1)", "(128, 1, 1)", 1e-5, 0.0,
                   traced_call=True)
        x.operator, x.line, x.backward_of = "LigerRMSNormFunctionBackward", line, \
            "LigerRMSNormFunctionBackward"
        return x
    found = origins([launch(None)] * 163 + [launch("rms_norm.py:552 in rms_norm_backward")] * 100)
    assert [(o.line, o.launches) for o in found] == [
        ("rms_norm.py:552 in rms_norm_backward", 100), (None, 163)]


def test_optimizer_kernels_sit_in_the_optimizers_range(lined):
    adam = [x for x in lined if "FusedAdam" in x.name]
    assert adam and all("Optimizer.step#AdamW.step" in x.ranges for x in adam)
    assert {x.line for x in adam} == {"step.py:20 in step"}
    assert kernel_times.selected(lined, "Optimizer.step#AdamW.step", None, 0) == \
        [x for x in lined if "Optimizer.step#AdamW.step" in x.ranges]


def test_filters_apply_as_ncu_applies_them(step):
    gelu = kernel_times.selected(step, None, "Gelu", 0)
    assert gelu and all("Gelu" in x.name for x in gelu)
    assert kernel_times.selected(step, None, "Gelu", 1) == gelu[1:]
    assert kernel_times.selected(step, "no such range", None, 0) == []


def test_pass_twos_patterns_under_kernel_tell_the_chosen_from_every_kernel_pass_one_saw():
    """--kernel GeluCUDA keeps the forward GELU alone; pass 2 runs the whole program, so its
    pattern must still tell that kernel from PyTorch's other element-wise kernels (the GELU
    backward, the casts...), which the filter left out of the kernels but not of the
    program: by the filtered kernels alone it was the bare function name, which they all
    match."""
    from rooflint.measure.pass_runner import Pass, Timer
    from rooflint.measure.program import Filters
    first = Pass("", 1.0, timer=Timer.torch, trace=TRACE)
    one, _ = app.pass_one(first, Filters(kernel="GeluCUDAKernelImpl"))
    assert [k.kernel.split("<8, at::native::")[1][:18] for k in one.kernels] == \
        ["GeluCUDAKernelImpl"]
    assert len(one.every) > 40 and one.kernels[0] in one.every
    chosen = kernel_choice.choose(one.kernels)
    narrow = app.pass2_choice(chosen, one.every).patterns
    assert narrow == ["29vectorized_elementwise_kernel.*18GeluCUDAKernelImpl"]
    assert app.pass2_choice(chosen, one.kernels).patterns == ["29vectorized_elementwise_kernel"]
    whole, _ = app.pass_one(first, Filters())
    assert whole.every is whole.kernels


def test_kernels_from_the_trace_carry_their_origins(step):
    kernels = kernel_times.kernel_times_from_trace(step)
    assert sum(len(k.durations_s) for k in kernels) == len(step)
    assert [k.total_s for k in kernels] == sorted((k.total_s for k in kernels), reverse=True)
    for k in kernels:
        assert sum(o.launches for o in k.origins) == len(k.durations_s)
    copies = next(k for k in kernels if "bfloat16_copy_kernel_cuda" in k.kernel)
    assert copies.origins[0].operator == "aten::copy_"


def test_an_origin_reads_as_a_sentence():
    origin = Origin("aten::mm", "model.py:62 in forward", "AddmmBackward0", 24)
    assert origin.words == "by aten::mm (backward: AddmmBackward0) at model.py:62 in forward"
    assert Origin(None, None).words == "outside PyTorch's operators"
    assert Origin(None, "softmax.py:40 in softmax").words == "at softmax.py:40 in softmax"
    compiled = Origin("CompiledFunctionBackward", "train.py:17 in <module>",
                      "CompiledFunctionBackward")           # a compiled region's backward
    assert compiled.words == "by CompiledFunctionBackward at train.py:17 in <module>"


def test_the_traces_kernels_meet_nsight_computes_names(step):
    """PyTorch's demangler and ncu's write template arguments apart (``32u`` vs ``32``,
    ``(anonymous namespace)`` vs ``<unnamed>``, ``lambda #1`` vs ``lambda instance 1``):
    every kernel of the traced step has the identity ncu gave it in another run of the
    same program, or failing that, exactly one by its function's name and launch shape."""
    ncu = ncu_identities()
    kernels = kernel_times.kernel_times_from_trace(step)
    exact = [k for k in kernels if k.identity in ncu]
    assert len(exact) >= len(kernels) - 2
    loose = {launch_matching._loosely(key): key for key in ncu}
    for k in kernels:
        assert k.identity in ncu or launch_matching._loosely(k.identity) in loose, k.kernel


def test_name_keys_ignore_what_demanglers_disagree_on():
    torch_name = ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate"
                  "<float, float, 32u, 32u, 256u, false, true, false>(long, long, float const*)")
    ncu_name = ("void at::<unnamed>::GammaBetaBackwardCUDAKernelTemplate<float, float, 32, 32, "
                "256, 0, 1, 0>(long, long, const T1 *)")
    assert kernel_names.name_key(torch_name) == kernel_names.name_key(ncu_name)
    assert (kernel_names.name_key("void k<(at::NormType)1, float>(float*)")
            == kernel_names.name_key("void k<1, float>(T1 *)"))
    assert kernel_names.name_key("nvjet_sm90_tst_256x128") == "nvjet_sm90_tst_256x128"
    assert kernel_names.name_key("void k<4>(int)") != kernel_names.name_key("void k<8>(int)")
    # the same launch as the trace names it, the raw page, and ncu_report's demangled name
    # (an H200's report of tests/fixtures/import/prog.py): casts of several words dropped
    assert len({kernel_names.name_key(name) for name in (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
        "void vectorized_elementwise_kernel<4, FillFunctor<float>, std::array<char *, 1>>(int, "
        "T2, T3)",
        "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
        "std::array<char *, (unsigned long)1>>(int, T2, T3)")}) == 1


def test_origins_are_counted_and_ranked_by_their_time_none_dropped(step):
    """Every origin kept (a Llama's RMSNorm had read a third of its size with three lines
    per kernel), each with its launches' GPU time, the most time first."""
    ranked = origins(step)
    assert sum(o.launches for o in ranked) == len(step)
    assert sum(o.time_s for o in ranked) == pytest.approx(sum(x.duration_s for x in step))
    lined = [o.time_s for o in ranked if o.line]
    assert lined == sorted(lined, reverse=True)



def test_a_line_range_the_bootstrap_did_not_name_is_kept_as_written():
    """A profiler range that happens to start with the prefix (a program's own
    record_function) is not a frame: its text stands, and nothing breaks."""
    events = [user_range(f"{LINE_RANGE}not a frame", 100, 20),
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 105,
               "dur": 2, "pid": 1, "tid": 1, "args": {"correlation": 9}},
              {"ph": "X", "cat": "kernel", "name": "k", "ts": 110, "dur": 5, "pid": 0,
               "tid": 7, "args": {"correlation": 9, "grid": [1, 1, 1], "block": [32, 1, 1]}}]
    [launch] = launches({"traceEvents": events})
    assert launch.line == "not a frame"


# What pass 2 reads of the tensor cores: the precisions the chosen kernels' operators name.

def test_each_launch_carries_its_aten_operators_input_dtypes(lined):
    """Recorded with the bootstrap's record_shapes (H200): autocast's bf16 GEMMs take bf16
    inputs, the layer norms and the loss fp32 (and reach no tensor core: no precision);
    0-d tensors (gradient clipping's double scalar) and scalars are left out, tensor lists
    name no dtype."""
    dtypes = {d for x in lined for d in x.dtypes}
    assert dtypes == {"c10::BFloat16", "float", "TensorList"}
    gemms = [x for x in lined if x.operator in ("aten::addmm", "aten::mm")]
    assert gemms and all(x.tensor_precisions == {"bf16-tensor"} for x in gemms)
    norms = [x for x in lined if x.operator == "aten::native_layer_norm"]
    assert norms and all(x.tensor_precisions == frozenset() for x in norms)
    optimizer = [x for x in lined if x.operator == "aten::_fused_adamw_"]
    assert optimizer and all(x.tensor_precisions == frozenset() for x in optimizer)


def test_the_steps_kernels_need_the_bf16_tensor_flops_only(lined):
    """Its GEMMs and attention run under bf16 autocast; its fp32 operators (layer norms,
    the loss, the optimizer) reach no tensor core, so TF32's FLOPs are not read."""
    kernels = kernel_times.kernel_times_from_trace(lined)
    choice = app.pass2_choice(kernel_choice.choose(kernels, 0.9, None), kernels)
    assert choice.tensor_precisions == {"bf16-tensor"}
    read = set(choice.metrics)
    assert {ncu.TENSOR_FLOPS["bf16-tensor"], ncu.HMMA, ncu.GMMA} <= read
    assert not read & {ncu.TENSOR_FLOPS[p] for p in ("fp16-tensor", "fp8-tensor", "tf32-tensor",
                                                     "int8-tensor", "fp64-tensor")}
    assert set(ncu.BASE_METRICS) <= read


def kernel_launch(operator: str | None, types: list | None, dims: list | None = None) -> Launch:
    """A launch attributed from a one-operator trace, as launches() reads it."""
    args = {} if types is None else {"Input type": types, "Input Dims": dims or [[4]] * len(types)}
    return launch_under(operator, args)


def launch_under(operator: str | None, args: dict) -> Launch:
    """The one kernel of a trace whose launch call sits inside ``operator`` (none: no
    operator) recorded with ``args``."""
    events = [{"ph": "X", "cat": "cpu_op", "name": operator or "", "pid": 1, "tid": 1,
               "ts": 0.0, "dur": 10.0, "args": args},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
               "tid": 1, "ts": 5.0, "dur": 1.0, "args": {"correlation": 7}},
              {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20.0,
               "dur": 2.0, "args": {"correlation": 7, "grid": [1, 1, 1], "block": [32, 1, 1]}}]
    if operator is None:
        events = events[1:]
    return launches({"traceEvents": events})[0]


@pytest.mark.parametrize("dtype, precision", sorted(TENSOR_PRECISION_OF_DTYPE.items()))
def test_every_tensor_dtype_names_a_precision_ncu_counts(dtype, precision):
    assert precision in ncu.TENSOR_FLOPS
    launch = kernel_launch("aten::mm", [dtype, dtype])
    assert launch.tensor_precisions == {precision}
    assert Choice(["k"], launch.tensor_precisions).metrics == ncu.metrics_for([precision], None)


def test_a_kernel_no_aten_operator_launched_can_have_run_any_precision():
    """A custom op, a compiled region or no operator at all: every precision is read."""
    unknown = [kernel_launch("mylib::fused_gemm", ["c10::Half"]), kernel_launch(None, None),
               kernel_launch("aten::mm", None)]            # a trace without input types
    assert [x.tensor_precisions for x in unknown] == [None, None, None]
    known = kernel_launch("aten::mm", ["c10::Half", "c10::Half"])
    assert tensor_precisions([known]) == {"fp16-tensor"}
    assert tensor_precisions([known, unknown[0]]) is None
    assert Choice(["k"], None).metrics == ncu.METRICS


def test_zero_dimensional_inputs_and_scalars_feed_no_tensor_core():
    launch = kernel_launch("aten::addmm", ["float", "double", "Scalar"], [[8, 8], [], []])
    assert launch.dtypes == ("float",) and launch.tensor_precisions == {"tf32-tensor"}


@pytest.mark.parametrize("operator, reaches", [
    ("aten::mm", True), ("aten::addmm", True), ("aten::bmm", True), ("aten::linear", True),
    ("aten::_scaled_mm", True), ("aten::cudnn_convolution", True), ("aten::einsum", True),
    ("aten::_scaled_dot_product_cudnn_attention_backward", True), ("aten::_cudnn_rnn", True),
    ("aten::add", False), ("aten::mul", False), ("aten::native_layer_norm", False),
    ("aten::gelu", False), ("aten::copy_", False), ("aten::sum", False),
    ("aten::_fused_adamw_", False), ("aten::_log_softmax", False), ("aten::fill_", False),
])
def test_only_operators_that_can_reach_a_tensor_core_name_a_precision(operator, reaches):
    """An fp32 element-wise kernel runs no TF32 MMA: reading TF32's FLOPs for it would
    cost pass 2 a replay pass of every launch for nothing."""
    launch = kernel_launch(operator, ["float", "float"])
    assert launch.tensor_precisions == ({"tf32-tensor"} if reaches else frozenset())


@pytest.mark.parametrize("args", [
    {"Input type": "c10::Half"},                                  # not a list
    {"Input type": ["c10::Half", 7, None, ""], "Input Dims": [[4], [4], [4], [4]]},
    {"Input type": ["c10::Half"], "Input Dims": "[[4]]"},          # dims not a list
    {"Input type": ["c10::Half", "float"], "Input Dims": [[4]]},   # dims of another length
], ids=["types-string", "odd-entries", "dims-string", "dims-short"])
def test_a_malformed_operator_record_reads_as_what_it_can_say(args):
    """A trace is a file the user hands over: input types that are not a list of names say
    nothing (every precision is read); odd entries are skipped; dims that do not line up
    with the types are not trusted to rule any input out (a product's precision is then
    its first input's)."""
    types = args["Input type"]
    launch = launch_under("aten::mm", args)
    if not isinstance(types, list):
        assert launch.tensor_precisions is None
    else:
        first = next(t for t in types if t in TENSOR_PRECISION_OF_DTYPE)
        assert launch.tensor_precisions == {TENSOR_PRECISION_OF_DTYPE[first]}


def test_an_event_whose_name_is_not_text_is_left_out():
    """An operator named by a number (a hand-edited or foreign trace) is not read: the
    kernel under it has no operator, and no precision is ruled out."""
    launch = launch_under(5, {"Input type": ["float"], "Input Dims": [[4]]})
    assert launch.operator is None and launch.tensor_precisions is None


@pytest.mark.parametrize("types, widens", [
    (["float", "c10::BFloat16"], True),          # copy_(fp32 destination, bf16 source)
    (["c10::BFloat16", "float"], False),         # autocast's weight cast narrows
    (["float", "float"], False),
    (["float", "c10::Float8_e4m3fn"], True),
    (["float", "an unknown type"], False),
    (["float"], False),
])
def test_a_copy_widens_when_its_destination_is_the_wider_dtype(types, widens):
    assert kernel_launch("aten::copy_", types).widens is widens
    assert not kernel_launch("aten::add", types).widens            # only copies are casts


def test_the_steps_widening_copies_are_gradients_in_backward_and_no_kernel_upcasts(lined):
    """The recorded step widens only in backward (ToCopyBackward0: gradients on their way
    back to fp32, weights' and activations' alike), so none of its kernels is a forward
    upcast; a forward widening (nanoGPT's logits cast for the loss) is."""
    widening = [x for x in lined if x.widens]
    assert len(widening) == 40 and {x.backward_of for x in widening} == {"ToCopyBackward0"}
    assert not any(k.upcasts for k in kernel_times.kernel_times_from_trace(lined))
    forward = kernel_launch("aten::copy_", ["float", "c10::BFloat16"])
    kernel = kernel_times.kernel_times_from_trace([forward, forward])[0]
    assert kernel.upcasts and kernel_libraries.caller_flags(kernel)


def test_the_bootstrap_and_the_reader_name_the_peak_memory_alike():
    """The bootstrap imports nothing of rooflint, so the key is written twice."""
    from rooflint.formats import trace_events
    from rooflint.measure import trace_bootstrap
    assert trace_bootstrap.PEAK_RESERVED == trace_events.PEAK_RESERVED


@pytest.mark.parametrize("value, read", [(48e9, 48_000_000_000), ("48e9", None), (-1, None),
                                         (None, None), (True, None)])
def test_the_peak_memory_is_read_only_as_a_number(value, read):
    from rooflint.formats.trace_events import PEAK_RESERVED, peak_reserved_bytes
    assert peak_reserved_bytes({PEAK_RESERVED: value} if value is not None else {}) == read


def test_xla_autotuning_is_left_out_and_the_jax_programs_steps_are_what_is_chosen():
    """A JAX loop of 30 steps: 1,996 of its 2,986 launches were XLA's autotuner timing
    candidate GEMMs and reductions (each 2-4 launches at its own grid) while it compiled,
    and the kernels chosen for pass 2 were those trials; left out, every chosen kernel ran
    once or twice a step."""
    every = launches(JAX_TRACE)
    kept, tuning = autotuning.trace_without_autotuning(every)
    assert (len(every), tuning.launches, len(kept)) == (2986, 1996, 990)
    assert 0.5 < tuning.gpu_s < 0.7
    assert not any(autotuning.AUTOTUNER_KERNEL.search(x.name) for x in kept)
    before = kernel_choice.choose(kernel_times.kernel_times_from_trace(every))
    after = kernel_choice.choose(kernel_times.kernel_times_from_trace(kept))
    assert min(len(k.durations_s) for k in before) < 30
    assert {len(k.durations_s) for k in after} <= {30, 60, 64}


def _launch(name: str, stream: str = "7") -> Launch:
    return Launch(name=name, grid="(1, 1, 1)", block="(1, 1, 1)", duration_s=1e-6,
                  start_us=0.0, stream=stream)


def test_a_trial_is_the_launch_a_redzone_check_follows_on_its_own_stream():
    redzone = "stream_executor::gpu::RedzoneAllocatorKernelImpl(unsigned char*)"
    order = [_launch("loop_fusion"), _launch("gemm_fusion_dot", "7"),
             _launch("other_stream_kernel", "9"), _launch(redzone, "7"), _launch(redzone, "7"),
             _launch("loop_fusion")]
    made = autotuning.autotuning([(x.name, x.stream) for x in order])
    assert made == [False, True, False, True, True, False]


def _tuned_trace() -> dict:
    """A Triton program's trace as the bootstrap writes it: a kernel tuned on its first call
    (two configs tried inside the autotuning range, each after do_bench's cache flush),
    then launched twice with the config it picked; a copy on a second thread meanwhile."""
    events, correlation = [], iter(range(1, 100))

    def launch(name: str, at: float, grid: list[int], tid: int = 1) -> None:
        c = next(correlation)
        events.append({"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1,
                       "tid": tid, "ts": at, "dur": 2.0, "args": {"correlation": c}})
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                       "ts": at + 5, "dur": 100.0,
                       "args": {"correlation": c, "grid": grid, "block": [128, 1, 1],
                                "stream": 7}})
    events.append({"ph": "X", "cat": "user_annotation",
                   "name": AUTOTUNING_RANGE + "Triton's autotuner",
                   "pid": 1, "tid": 1, "ts": 0.0, "dur": 1000.0})
    for at, grid in ((10, [64, 1, 1]), (200, [256, 1, 1])):
        launch("at::native::FillFunctor<int>", at, [1024, 1, 1])
        launch("matmul_kernel", at + 50, grid)
    launch("copy_kernel", 500, [8, 1, 1], tid=2)       # another thread, outside the range
    for at in (2000, 3000):
        for depth in range(2):      # Triton's launch, and a torch call it made, name a line
            events.append({"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1,
                           "name": LINE_RANGE + "/home/me/mlp.py(62): matmul",
                           "ts": at - 5 + depth, "dur": 10.0 - depth})
        launch("matmul_kernel", at, [64, 1, 1])
    return {"traceEvents": events}


def test_an_autotuners_trials_are_left_out_and_its_pick_is_kept():
    """Triton's @autotune times each config on the first call: those trials (and the cache
    flushes between them) are the tuner's, and a losing config's would be a row of its own;
    the launches after it, at the config it picked, are the program's."""
    every = launches(_tuned_trace())
    assert [x.autotuner for x in every] == ["Triton's autotuner"] * 4 + [None] * 3
    kept, tuning = autotuning.trace_without_autotuning(every)
    assert [(x.name, x.grid) for x in kept] == [("copy_kernel", "(8, 1, 1)"),
                                                ("matmul_kernel", "(64, 1, 1)"),
                                                ("matmul_kernel", "(64, 1, 1)")]
    assert (tuning.launches, tuning.tuners) == (4, ("Triton's autotuner",))
    assert [(x.line, x.via) for x in kept[1:]] == [("mlp.py:62 in matmul", None)] * 2
    assert tuning.gpu_s == pytest.approx(4e-4)
    assert all(AUTOTUNING_RANGE not in r for x in every for r in x.ranges)


def test_a_triton_programs_autotuning_is_left_out_and_its_kernels_have_their_line():
    """The recorded program: two shapes, six configs each tried (with do_bench's L2
    flushes) inside Triton's autotuner; what is kept is the two configs it picked, each
    launched 20 times from the program's matmul(), plus one untuned check, and PyTorch's
    GELU."""
    every = launches(TUNED_TRACE)
    kept, tuning = autotuning.trace_without_autotuning(every)
    assert (tuning.launches, tuning.tuners) == (144, ("Triton's autotuner",))
    matmuls = [x for x in kept if x.name == "matmul_kernel"]
    assert Counter(x.grid for x in matmuls) == {"(512, 1, 1)": 21, "(128, 1, 1)": 20}
    assert {x.line for x in matmuls} == {"triton_autotune.py:62 in matmul"}
    assert {x.operator for x in matmuls} == {None}
    chosen = kernel_choice.choose(kernel_times.kernel_times_from_trace(kept))
    assert [k.kernel for k in chosen[:2]] == ["matmul_kernel"] * 2
    assert chosen[0].origins[0].words == "at triton_autotune.py:62 in matmul"


def test_the_bootstrap_and_the_reader_name_the_autotuning_ranges_alike():
    from rooflint.measure import trace_bootstrap
    assert trace_bootstrap.AUTOTUNING == AUTOTUNING_RANGE


def test_the_bootstrap_wraps_methods_as_their_modules_load(tmp_path, monkeypatch):
    """Plain and class methods, a module loaded before the bootstrap's finder (wrapped at
    once) and after it; a class a release no longer has is passed over."""
    from rooflint.measure.trace_bootstrap import _WrappedOnImport
    (tmp_path / "late_tuner.py").write_text(
        "class Tuner:\n    def bench(self, x):\n        return x * 2\n\n"
        "    @classmethod\n    def in_process(cls, x):\n        return x + 1\n")
    (tmp_path / "early_tuner.py").write_text(
        "class Tuner:\n    def bench(self):\n        return 'early'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    called = []

    def wrap(function):
        def wrapped(*args):
            called.append(function.__name__)
            return function(*args)
        return wrapped
    try:
        import early_tuner
        finder = _WrappedOnImport({
            "late_tuner": [("Tuner", "bench", wrap), ("Gone", "bench", wrap)],
            "early_tuner": [("Tuner", "bench", wrap)]})
        monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
        import late_tuner
        assert late_tuner.Tuner().bench(3) == 6 and early_tuner.Tuner().bench() == "early"
    finally:
        sys.modules.pop("late_tuner", None)
        sys.modules.pop("early_tuner", None)
    assert called == ["bench", "bench"]


def test_an_autotuners_benchmarking_runs_inside_its_range_and_names_no_lines():
    from rooflint.measure.trace_bootstrap import AUTOTUNERS, _from_line, _in_range
    opened = []

    @contextmanager
    def record(name):
        opened.append(name)
        yield

    class Tuner:
        def bench(self, x):           # a torch call of do_bench's opens no line range
            return _from_line(lambda: x * 2, sys._getframe(), lambda f: PROGRAM, record,
                              LINE_RANGE)

        @classmethod
        def in_process(cls, x):
            return x + 1
    Tuner.bench = _in_range(Tuner.__dict__["bench"], "tuning", record)
    Tuner.in_process = _in_range(Tuner.__dict__["in_process"], "tuning", record)
    assert Tuner().bench(3) == 6 and Tuner.in_process(3) == 4 and opened == ["tuning"] * 2
    assert Tuner.bench.__name__ == "bench"
    assert {tuner for *_, tuner in AUTOTUNERS} == {
        "Triton's autotuner", "TorchInductor's autotuner", "Triton's do_bench flushing L2"}


def test_a_triton_launch_is_ranged_with_the_line_that_called_it():
    """``kernel[grid](...)`` in the program's own function: Triton's launch (a LIBRARY
    frame, as is its launcher's plumbing) runs inside the range of the program's line;
    so does a kernel compiled ahead, launched as ``compiled[grid](...)``."""
    from rooflint.measure.trace_bootstrap import (LINED_LAUNCHES, _QUIET, _from_line,
                                                  _indexed_from_line, _launch_lines,
                                                  _launched_from_line)
    opened = []

    @contextmanager
    def record(name):
        opened.append(name)
        yield

    def kind(filename):
        return PROGRAM if filename == __file__ else LIBRARY

    def run(kernel, *args, **kwargs):   # JITFunction.run, asking a tensor for its data_ptr
        return _from_line(lambda: "launched", sys._getframe(), kind, record, LINE_RANGE)
    lined = _launch_lines(kind, record, LINE_RANGE)
    launch = _launched_from_line(run, lined)
    index = _indexed_from_line(lambda compiled, grid: lambda *args: f"ran {grid}", lined)
    kernel, compiled = object(), object()

    def matmul():
        return launch(kernel, grid=(8,))

    def softmax():
        return index(compiled, (4, 1, 1))(1, 2)
    assert matmul() == "launched" and softmax() == "ran (4, 1, 1)"
    here = f"{LINE_RANGE}{__file__}"
    where = "test_a_triton_launch_is_ranged_with_the_line_that_called_it.<locals>"
    assert opened == [f"{here}({matmul.__code__.co_firstlineno + 1}): {where}.matmul",
                      f"{here}({softmax.__code__.co_firstlineno + 1}): {where}.softmax"]
    with _QUIET.held():                 # an autotuner's trials: no lines, and not counted
        for _ in range(LINED_LAUNCHES):
            matmul()
    assert len(opened) == 2
    for _ in range(LINED_LAUNCHES + 5):
        matmul()
    assert len(opened) == LINED_LAUNCHES + 1  # the first of each kernel's launches only


def test_a_kernels_launches_without_a_line_are_its_last_origin():
    named = Launch("k", "(1, 1, 1)", "(1, 1, 1)", 1e-6, 0.0, traced_call=True,
                   line="mlp.py:62 in matmul")
    bare = Launch("k", "(1, 1, 1)", "(1, 1, 1)", 1e-6, 1.0, traced_call=True)
    from rooflint.output.family_table import origins_words
    found = origins([named] * 3 + [bare] * 500)
    assert [(o.line, o.launches) for o in found] == [("mlp.py:62 in matmul", 3), (None, 500)]
    assert origins_words(found) == ("at mlp.py:62 in matmul (3 launches, 1% of its time); "
                                    "500 more launches with no line recorded")
    assert origins_words(origins([bare] * 2)) == "outside PyTorch's operators (2 launches)"
    callless = Launch("k", "(1, 1, 1)", "(1, 1, 1)", 1e-6, 2.0)   # CUPTI's kernel records alone
    assert origins([callless] * 4) == [] and origins([named, callless]) == origins([named])


def test_ncu_rows_lose_their_autotuning_as_the_trace_does():
    rows = [{"Kernel Name": n, "Stream": "14", "gpu__time_duration.sum": 1000}
            for n in ("input_reduce_fusion_3", "RedzoneAllocatorKernelImpl(unsigned char *)",
                      "input_reduce_fusion_3")]
    kept, tuning = autotuning.rows_without_autotuning(rows)
    assert kept == rows[2:] and tuning.launches == 2 and tuning.gpu_s == pytest.approx(2e-6)


def test_a_kernels_notes_name_its_top_origins_and_count_the_rest():
    """Five lines launch one kernel: the notes name the three that took the most time, and
    say how many more, with their launches and part; the result keeps all five."""
    from rooflint.output.family_table import origins_words
    lines = [Launch("k", "(1, 1, 1)", "(1, 1, 1)", 1e-6 * (i + 1), 0.0, traced_call=True,
                    operator="aten::mul", line=f"model.py:{10 + i} in forward")
             for i in range(5)]
    found = origins(lines)
    assert len(found) == 5 and found[0].line == "model.py:14 in forward"
    words = origins_words(found)
    assert words.count("by aten::mul") == 3
    assert words.endswith("and 2 more origins (2 launches, 20% of its time)")


@pytest.mark.parametrize("orjson_installed", [True, False])
def test_a_trace_reads_the_same_with_or_without_orjson(orjson_installed, monkeypatch):
    """Traces are parsed by orjson where it is installed (the GPU machines' Python has
    none): the same document either way, its launches the same; NaN, which orjson refuses,
    read by the standard library; text that is not JSON refused by the standard library's
    error in both."""
    from rooflint.formats.jsonfile import parse_large
    if not orjson_installed:
        monkeypatch.setitem(sys.modules, "orjson", None)
    text = (FIXTURES / "trace" / "h200-step-trace.json").read_bytes()
    parsed = parse_large(text)
    assert parsed == LINES_TRACE
    assert launches(parsed) == launches(LINES_TRACE)
    with_nan = parse_large(b'{"traceEvents": [{"name": "k", "dur": NaN}]}')
    assert with_nan["traceEvents"][0]["dur"] != with_nan["traceEvents"][0]["dur"]
    with pytest.raises(json.JSONDecodeError):
        parse_large(text[: len(text) // 2])
