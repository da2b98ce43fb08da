"""Pass 2 by rotation as a process, on a stand-in PyTorch (no GPU): the program started
before pass 1 has ended waits, after its import of torch, for the rotation's configuration,
then runs, and its optimizer's steps drive the engine; an engine that will not load ends
it with the reason written (measure/rotation.py then leaves pass 2 to Nsight Compute)."""

from __future__ import annotations

import json
import time

from rooflint.measure import rotation, trace_bootstrap
from stand_in_torch import OPTIMIZER_HOOKS, stand_in_program

STAND_IN = {
    "__init__.py": "from . import cuda, optim, overrides, profiler\n",
    "cuda/__init__.py": "from . import nvtx\ndef is_initialized():\n    return False\n"
                        "def synchronize():\n    pass\n"
                        "def is_current_stream_capturing():\n    return False\n",
    **OPTIMIZER_HOOKS,
}
PROGRAM = '''\
import sys, time
print("imported", time.time(), file=sys.stderr, flush=True)
import torch
print("past torch", time.time(), file=sys.stderr, flush=True)
optimizer = torch.optim.Optimizer()
for step in range(1, 9):
    optimizer.step()
    print("step", step, file=sys.stderr, flush=True)
'''


def _configure(started: rotation.StartedRotation, tmp_path) -> None:
    """The rotation's configuration, written whole then moved, as rooflint does: an engine
    that is not there, from the first step."""
    partial = tmp_path / "rotation.json"
    partial.write_text(json.dumps(dict(zip(trace_bootstrap.ROTATION_FIELDS, (
        str(tmp_path / "no-such-engine.so"), ["dram__bytes_read.sum"], 769, 1, 7,
        [["k", "1,1,1", "32,1,1"]], str(started.records))))))
    partial.rename(started.config)


def test_the_started_program_waits_for_its_configuration_then_runs_to_the_engine(
        tmp_path, monkeypatch):
    command = stand_in_program(tmp_path, monkeypatch, STAND_IN, PROGRAM)
    with rotation.started_rotation(command) as started:
        time.sleep(1.0)                   # pass 1 runs meanwhile
        assert started.process.poll() is None
        said = started.output.read_text()
        assert "imported" in said and "past torch" not in said
        assert started.waits(5.0)
        written = time.time()
        _configure(started, tmp_path)
        assert started.process.wait(timeout=30) == 0
        said = started.output.read_text()
        past = float(next(line for line in said.splitlines()
                          if line.startswith("past torch")).split()[2])
        assert past >= written
        assert "step" not in said        # ended in its first step, where the engine begins
        failed = started.records.with_name(started.records.name + trace_bootstrap.FAILED)
        assert failed.read_text().startswith("the engine would not load: ")


def test_let_go_on_once_pass_1_is_over_it_runs_to_its_first_step_and_waits_there(
        tmp_path, monkeypatch):
    """Its CUDA context, model and cuDNN's benchmark beside rooflint's reading of pass 1:
    past its import of torch at once, then held in its first optimizer step until the
    configuration is there."""
    command = stand_in_program(tmp_path, monkeypatch, STAND_IN, PROGRAM)
    with rotation.started_rotation(command) as started:
        assert started.waits(5.0)
        started.go()
        deadline = time.monotonic() + 10.0
        while "past torch" not in started.output.read_text():
            assert time.monotonic() < deadline, started.output.read_text()
            time.sleep(0.05)
        time.sleep(1.0)
        assert started.process.poll() is None
        assert "step" not in started.output.read_text()       # held in its first step
        _configure(started, tmp_path)
        assert started.process.wait(timeout=30) == 0
        failed = started.records.with_name(started.records.name + trace_bootstrap.FAILED)
        assert failed.read_text().startswith("the engine would not load: ")


def test_a_rotation_pass_that_could_not_start_says_why(tmp_path, monkeypatch):
    command = stand_in_program(tmp_path, monkeypatch, STAND_IN, PROGRAM)
    monkeypatch.setattr(rotation, "engine_library", lambda: tmp_path / "no-such-engine.so")
    from rooflint.measure.pass_runner import PassProgress
    try:
        rotation.rotation_pass(command, ["dram__bytes_read.sum"],
                               rotation.RotationSteps(1, 7, 282, (("k", "1,1,1", "32,1,1"),)),
                               {}, None,
                               PassProgress("pass 2", print))
    except rotation.RotationUnavailable as exc:
        assert str(exc).startswith("the engine would not load: ")
    else:
        raise AssertionError("measured with no engine")


def test_a_program_whose_first_gpu_library_is_not_torch_waits_too(tmp_path, monkeypatch):
    """A CuPy program would otherwise run on the GPU beside pass 1: it waits at its import of
    CuPy (which touches no GPU) like a PyTorch program at its import of torch."""
    command = stand_in_program(tmp_path, monkeypatch, STAND_IN,
                               "import sys\nimport cupy\nprint('past cupy', file=sys.stderr)\n")
    (tmp_path / "site" / "cupy").mkdir()
    (tmp_path / "site" / "cupy" / "__init__.py").write_text("")
    with rotation.started_rotation(command) as started:
        time.sleep(1.0)
        assert started.process.poll() is None
        assert "past cupy" not in started.output.read_text()


def test_a_program_that_imports_no_gpu_library_never_says_it_waits(tmp_path, monkeypatch):
    """It ran to its end (on the GPU, for all rooflint knows) beside pass 1."""
    command = stand_in_program(tmp_path, monkeypatch, STAND_IN,
                               "import json\nprint(json.dumps([1]))\n")
    with rotation.started_rotation(command) as started:
        assert not started.waits(5.0)
        assert started.process.poll() == 0
