"""A compiled program's calls attributed to the model's lines (trace_bootstrap's
_InductorLines): TorchInductor's generated code names each call's provenance handle in a
comment above it, and the handle's stack traces, kept for that code's file as the graph
is compiled, give the model's lines, picked as an eager call's stack walk picks them."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from rooflint.measure.trace_bootstrap import (LIBRARY, PACKAGE, PROGRAM, STACK_TRACES,
                                              _handles_above, _InductorLines, _programs_frames,
                                              _qualname)

# A generated wrapper as TorchInductor 2.11 writes one (excerpt, H200 run of 2026-11-29).
WRAPPER = '''\
def call(self, args):
    with torch.cuda._DeviceGuard(0):
        buf4 = empty_strided_cuda((64, 256), (256, 1), torch.bfloat16)
        # Topologically Sorted Source Nodes: [h, linear], Original ATen: [aten.native_layer_norm]
        # [Provenance debug handles] triton_per_fused__to_copy_native_layer_norm_0:1
        stream0 = get_raw_stream(0)
        triton_per_fused__to_copy_native_layer_norm_0.run(buf3, buf4, 64, 256, stream=stream0)
        # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.addmm]
        # [Provenance debug handles] extern_kernels.addmm:4
        extern_kernels.addmm(primals_5, buf4, buf5, alpha=1, beta=1, out=buf7)
        del buf4
        buf8 = empty_strided_cuda((64, 1024), (1024, 1), torch.bfloat16)
'''
MODEL = '''\
import torch


class Block(torch.nn.Module):
    def forward(self, x):
        h = self.ln(x)
        h = torch.nn.functional.gelu(self.fc(h))
        return x + self.fc2(h)


def main():
    def step():
        return model(x)
'''


def frame(filename, line, back=None, qualname="main.<locals>.step"):
    code = types.SimpleNamespace(co_filename=str(filename), co_name=qualname.split(".")[-1],
                                 co_qualname=qualname)
    return types.SimpleNamespace(f_code=code, f_lineno=line, f_back=back)


def trace(filename, *lines):
    return "".join(f'  File "{filename}", line {line}, in {function}\n    code\n'
                   for line, function in lines)


@pytest.fixture
def sources(tmp_path):
    generated = tmp_path / "torchinductor_me" / "ab" / "cabc.py"
    generated.parent.mkdir(parents=True)
    generated.write_text(WRAPPER)
    model = tmp_path / "train.py"
    model.write_text(MODEL)
    package = tmp_path / "site-packages" / "transformers" / "modeling_llama.py"
    package.parent.mkdir(parents=True)
    package.write_text(MODEL)
    return generated, model, package


def kinds(model, package):
    return lambda name: (PROGRAM if name == str(model) else
                         PACKAGE if name == str(package) else LIBRARY)


def compiled(generated, model, package, traces):
    lines = _InductorLines(kinds(model, package))
    lines.kept[str(generated)] = traces
    return lines


def test_the_handle_is_read_from_the_comment_above_the_call(sources):
    generated, _, _ = sources
    assert _handles_above(str(generated), 7) == [
        "triton_per_fused__to_copy_native_layer_norm_0:1"]
    assert _handles_above(str(generated), 10) == ["extern_kernels.addmm:4"]
    # a line whose nearest code above is another statement has none
    assert _handles_above(str(generated), 12) == []
    assert _handles_above(str(generated), 1) == []


def test_a_model_in_the_program_gets_its_own_line_with_its_class(sources):
    generated, model, package = sources
    lines = compiled(generated, model, package, {
        "triton_per_fused__to_copy_native_layer_norm_0:1":
            [trace(model, (6, "forward")), trace(model, (7, "forward"))],
        "extern_kernels.addmm:4": [trace(model, (7, "forward"))]})
    caller = frame(model, 13)
    assert _programs_frames(frame(generated, 7, caller), lines.kind, lines) == (
        f"{model}(6): Block.forward", None)        # a fused kernel: its first node's line
    assert _programs_frames(frame(generated, 10, caller), lines.kind, lines) == (
        f"{model}(7): Block.forward", None)


def test_a_library_model_gets_the_package_line_under_the_programs_call(sources):
    generated, model, package = sources
    lines = compiled(generated, model, package, {
        "extern_kernels.addmm:4": [trace(package, (5, "forward"), (7, "forward"))]})
    caller = frame(model, 13)
    assert _programs_frames(frame(generated, 10, caller), lines.kind, lines) == (
        f"{model}(13): main.<locals>.step", f"{package}(7): Block.forward")
    # in autograd's thread no frame of the program's is on the stack: the package's line
    assert _programs_frames(frame(generated, 10), lines.kind, lines) == (
        f"{package}(7): Block.forward", None)


def test_unknown_handles_fall_back_to_the_line_that_called_the_compiled_function(sources):
    generated, model, package = sources
    lines = compiled(generated, model, package, {})     # a cache hit: none kept
    caller = frame(model, 13)
    assert _programs_frames(frame(generated, 7, caller), lines.kind, lines) == (
        f"{model}(13): main.<locals>.step", None)


def test_handles_are_looked_up_in_their_own_graphs_traces(sources, tmp_path):
    """Each graph numbers its handles from 1: the forward's and the backward's ':1' differ."""
    generated, model, package = sources
    backward = generated.with_name("cdef.py")
    backward.write_text(WRAPPER)
    lines = compiled(generated, model, package, {
        "triton_per_fused__to_copy_native_layer_norm_0:1": [trace(model, (6, "forward"))]})
    lines.kept[str(backward)] = {
        "triton_per_fused__to_copy_native_layer_norm_0:1": [trace(model, (8, "forward"))]}
    assert lines.lines(frame(generated, 7)) == (f"{model}(6): Block.forward", None)
    assert lines.lines(frame(backward, 7)) == (f"{model}(8): Block.forward", None)


def test_the_last_compiled_graphs_traces_serve_where_none_were_kept(sources, monkeypatch):
    generated, model, package = sources
    module, name = STACK_TRACES
    monkeypatch.setitem(sys.modules, module, types.SimpleNamespace(**{name: {
        "extern_kernels.addmm:4": [trace(model, (7, "forward"))]}}))
    lines = _InductorLines(kinds(model, package))
    assert lines.lines(frame(generated, 10)) == (f"{model}(7): Block.forward", None)
    assert lines.lines(frame(model, 7)) is None         # not generated code


def test_qualified_names_follow_classes_and_enclosing_functions(sources):
    _, model, _ = sources
    assert _qualname(str(model), 6, "forward") == "Block.forward"
    assert _qualname(str(model), 13, "step") == "main.<locals>.step"
    assert _qualname(str(model), 13, "other") == "other"
    assert _qualname(str(Path(model).with_name("absent.py")), 3, "f") == "f"


def test_compiling_keeps_the_graphs_traces_and_runs_its_call_in_the_line_mode(sources,
                                                                               monkeypatch):
    generated, model, package = sources
    module, name = STACK_TRACES
    traces = {"extern_kernels.addmm:4": [trace(model, (7, "forward"))]}
    monkeypatch.setitem(sys.modules, module, types.SimpleNamespace(**{name: traces}))
    lines = _InductorLines(kinds(model, package))
    entered = []

    class Mode:
        def __enter__(self):
            entered.append("in")

        def __exit__(self, *exc):
            entered.append("out")
    lines.mode = Mode()
    compiled_module = types.SimpleNamespace(__file__=str(generated), call=lambda a: a * 2)
    lowered = lines.keeping(lambda graph: compiled_module)(object())
    traces.clear()                        # the next graph's compilation resets them
    assert lines.kept[str(generated)] == {"extern_kernels.addmm:4": [trace(model, (7,
                                                                                   "forward"))]}
    monkeypatch.setattr("rooflint.measure.trace_bootstrap._mode_on", lambda mode: False)
    assert lowered.call(21) == 42 and entered == ["in", "out"]


def test_a_model_file_past_the_parser_s_depth_or_a_hostile_name_is_only_text(tmp_path,
                                                                               sources):
    """A source the parser cannot take (nested past its depth) names the function as the
    trace does; an escape sequence in a traced name stays text in the range's name (the
    printers escape it)."""
    deep = tmp_path / "deep.py"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert _qualname(str(deep), 1, "forward") == "forward"
    generated, model, package = sources
    lines = compiled(generated, model, package, {
        "extern_kernels.addmm:4": [trace(model, (7, "forward\x1b[2J"))]})
    assert lines.lines(frame(generated, 10)) == (f"{model}(7): forward\x1b[2J", None)
