"""The bootstrap's line ranges: what they are recorded with, and which calls get none.

Under the old ranges (record_function around every torch call) a DDP rank's step took
38.9 ms against 12.1 ms plain on two H200s; with PyTorch's C++ range and no range around
calls that launch nothing, 26-29 ms (2026-11-29)."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from rooflint.formats.trace_events import LINE_RANGE
from rooflint.measure.program import BOOTSTRAP
from rooflint.measure.trace_bootstrap import (NO_LAUNCH, PROGRAM, _caller_lines, _InductorLines,
                                              _line_range)


def test_a_line_is_recorded_with_pytorchs_cpp_range_where_the_release_has_it():
    fast, slow = object(), object()
    with_it = SimpleNamespace(_C=SimpleNamespace(_profiler=SimpleNamespace(
        _RecordFunctionFast=fast)), profiler=SimpleNamespace(record_function=slow))
    older = SimpleNamespace(_C=SimpleNamespace(_profiler=SimpleNamespace()),
                            profiler=SimpleNamespace(record_function=slow))
    stub = SimpleNamespace(profiler=SimpleNamespace(record_function=slow))   # no _C at all
    assert _line_range(with_it) is fast
    assert _line_range(older) is _line_range(stub) is slow


def test_calls_that_launch_nothing_get_no_line_range(tmp_path):
    """A tensor's attributes read and set, and questions about its metadata, run past the
    ranges; a call that computes gets its line, read back from the profiler's trace."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile
    lines = _caller_lines(torch, lambda filename: PROGRAM, LINE_RANGE,
                          _InductorLines(lambda filename: PROGRAM))
    x = torch.ones(4, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as profiler, lines:
        y = torch.add(x, 1)                                    # ranged
        skipped = (x.shape, x.dtype, x.grad, x.dim(), x.size(), x.numel(), x.is_complex(),
                   x.is_floating_point(), x.stride(), x.is_contiguous())
        x.grad = torch.zeros(4)                                # ranged: zeros computes
        y.sum()                                                # ranged
    assert skipped[0] == (4,)
    profiler.export_chrome_trace(str(tmp_path / "trace.json"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    ranged = [e["name"] for e in events if str(e.get("name")).startswith(LINE_RANGE)]
    here = sys._getframe().f_code.co_filename
    assert len(ranged) == 3 and all(name.startswith(LINE_RANGE + here) for name in ranged)
    assert {"__get__", "__set__", "dim", "is_complex"} <= NO_LAUNCH


COMPILED = """
import torch
linear = torch.nn.Linear(16, 16)

@torch.compile(backend="aot_eager")
def loss(x):
    return torch.nn.functional.gelu(linear(x)).sum()

x = torch.randn(4, 16)
for _ in range(2):
    loss(x).backward()
print("shape", tuple(x.shape), x.dim())
"""


def test_a_compiled_program_runs_under_the_line_ranges(tmp_path):
    """TorchDynamo traces the line ranges' handler too, and reads its globals from the
    module named "__main__" (the program's, while it runs): a handler that read the
    bootstrap's own before returning failed every compiled program ("module '__main__' has
    no attribute 'NO_LAUNCH'", found on an H200 by tests/gpu/test_profile_program.py)."""
    pytest.importorskip("torch")
    (tmp_path / "compiled.py").write_text(COMPILED)
    trace = tmp_path / "trace.json"
    done = subprocess.run([sys.executable, str(BOOTSTRAP), str(trace), LINE_RANGE, "0", "--",
                           "compiled.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "shape (4, 16) 2" in done.stdout
    names = [e.get("name", "") for e in json.loads(trace.read_text())["traceEvents"]]
    assert any(name.startswith(LINE_RANGE) and "compiled.py" in name for name in names)
