"""Pass 1 from PyTorch's profiler: launches, their origins, and their identity against
Nsight Compute's names, on a trace recorded on an H100 (one training step of a small bf16
transformer: forward, backward, fused AdamW) and on ncu's pass 1 of the same program."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from rooflint import application as app
from rooflint.trace_events import Origin, launches, origins

FIXTURES = Path(__file__).parent / "fixtures"
TRACE = json.loads((FIXTURES / "trace" / "h100-step-trace.json").read_text())
NCU_SHAPES = FIXTURES / "ncu" / "h100-train-step-pass1-shapes.csv"


@pytest.fixture(scope="module")
def step():
    return launches(TRACE)


def ncu_identities() -> set[app.Identity]:
    text = NCU_SHAPES.read_text().splitlines()
    header = next(i for i, line in enumerate(text) if line.startswith('"ID"'))
    rows = list(csv.DictReader(io.StringIO("\n".join(text[header:]))))[1:]     # units row
    return {app.identity(row) for row in rows}


def test_every_kernel_of_the_step_is_a_launch_in_launch_order(step):
    kernels = [e for e in TRACE["traceEvents"] if e.get("cat") == "kernel"]
    assert len(step) == len(kernels) == 128
    assert [x.start_us for x in step] == sorted(x.start_us for x in step)
    assert all(x.grid.startswith("(") and x.block.startswith("(") for x in step)
    assert sum(x.duration_s for x in step) == pytest.approx(
        sum(e["dur"] for e in kernels) * 1e-6)


def test_every_launch_has_its_operator_and_the_users_line(step):
    assert all(x.operator for x in step)
    assert all(x.line and x.line.startswith("step.py:") for x in step)


def test_a_backward_kernel_is_traced_to_the_forward_line_it_differentiates(step):
    backward = [x for x in step if x.backward_of]
    assert {x.backward_of for x in backward} >= {"AddmmBackward0", "NativeLayerNormBackward0"}
    addmm = [x for x in backward if x.backward_of == "AddmmBackward0"]
    assert {x.operator for x in addmm} >= {"aten::mm", "aten::sum"}
    assert all(x.line == "step.py:9 in forward" for x in addmm)


def test_optimizer_kernels_sit_in_the_optimizers_range(step):
    adam = [x for x in step if "FusedAdam" in x.name]
    assert adam and all("Optimizer.step#AdamW.step" in x.ranges for x in adam)
    assert app.selected(step, "Optimizer.step#AdamW.step", None, 0) == \
        [x for x in step if "Optimizer.step#AdamW.step" in x.ranges]


def test_filters_apply_as_ncu_applies_them(step):
    gelu = app.selected(step, None, "Gelu", 0)
    assert gelu and all("Gelu" in x.name for x in gelu)
    assert app.selected(step, None, "Gelu", 1) == gelu[1:]
    assert app.selected(step, "no such range", None, 0) == []


def test_kernels_from_the_trace_carry_their_origins(step):
    kernels = app.kernel_times_from_trace(step)
    assert sum(len(k.durations_s) for k in kernels) == len(step)
    assert [k.total_s for k in kernels] == sorted((k.total_s for k in kernels), reverse=True)
    for k in kernels:
        assert sum(o.launches for o in k.origins) == len(k.durations_s)
    copies = next(k for k in kernels if "bfloat16_copy_kernel_cuda" in k.kernel)
    assert copies.origins[0].operator == "aten::copy_"


def test_an_origin_reads_as_a_sentence():
    origin = Origin("aten::mm", "model.py:62 in forward", "AddmmBackward0", 24)
    assert origin.words == "aten::mm (backward: AddmmBackward0) at model.py:62 in forward"
    assert Origin(None, None).words == "launched outside PyTorch's operators"


def test_the_traces_kernels_meet_nsight_computes_names(step):
    """PyTorch's demangler and ncu's write template arguments apart (``32u`` vs ``32``,
    ``(anonymous namespace)`` vs ``<unnamed>``, ``lambda #1`` vs ``lambda instance 1``):
    every kernel of the traced step has the identity ncu gave it in another run of the
    same program, or failing that, exactly one by its function's name and launch shape."""
    ncu = ncu_identities()
    kernels = app.kernel_times_from_trace(step)
    exact = [k for k in kernels if k.identity in ncu]
    assert len(exact) >= len(kernels) - 2
    loose = {app._loosely(key): key for key in ncu}
    for k in kernels:
        assert k.identity in ncu or app._loosely(k.identity) in loose, k.kernel


def test_name_keys_ignore_what_demanglers_disagree_on():
    torch_name = ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate"
                  "<float, float, 32u, 32u, 256u, false, true, false>(long, long, float const*)")
    ncu_name = ("void at::<unnamed>::GammaBetaBackwardCUDAKernelTemplate<float, float, 32, 32, "
                "256, 0, 1, 0>(long, long, const T1 *)")
    assert app.name_key(torch_name) == app.name_key(ncu_name)
    assert app.name_key("void k<(at::NormType)1, float>(float*)") == app.name_key("void k<1, float>(T1 *)")
    assert app.name_key("nvjet_sm90_tst_256x128") == "nvjet_sm90_tst_256x128"
    assert app.name_key("void k<4>(int)") != app.name_key("void k<8>(int)")


def test_origins_are_counted_and_ranked(step):
    ranked = origins(step)
    assert sum(o.launches for o in ranked) == len(step)
    assert [o.launches for o in ranked] == sorted((o.launches for o in ranked), reverse=True)
