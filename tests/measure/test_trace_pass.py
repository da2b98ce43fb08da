"""Pass 1 under PyTorch's profiler, on this machine's Python: the program is run as
``python`` would run it, a trace rooflint cannot read falls back to Nsight Compute, and
a Python with no PyTorch says so by its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rooflint.measure import program as passes
from stand_in_torch import stand_in_torch as write_stand_in


@pytest.mark.parametrize("command, python", [
    (["python3", "train.py", "--steps", "2"], True),
    (["/usr/bin/python3.12", "-m", "pkg.train"], True),
    (["python", "-c", "print(1)"], True),
    (["python", "-u", "train.py"], False),          # interpreter options: not the bootstrap's
    (["python"], False),
    (["./train.sh"], False),
    (["pythonista", "x.py"], False),
])
def test_which_commands_run_under_the_profiler(command, python):
    assert passes.is_python(command) is python


@pytest.mark.parametrize("content, fragment", [
    ('{"traceEvents": [{"name": "a"b"}]}', "not JSON"),
    ("[1, 2]", "not a trace"),
])
def test_an_unreadable_trace_is_named(tmp_path, content, fragment):
    trace = tmp_path / "trace.json"
    trace.write_text(content)
    with pytest.raises(passes.UnreadableTrace, match=fragment):
        passes._read_trace(trace)


def test_a_trace_too_large_to_read_stops_the_profile_with_what_to_do(tmp_path, monkeypatch):
    """Not a fall-back to Nsight Compute's pass 1: a million launches, one at a time, is
    hours."""
    from rooflint.common.errors import RooflintError
    trace = tmp_path / "trace.json"
    trace.write_bytes(b" " * 2_200_000)
    monkeypatch.setattr(passes, "MAX_TRACE_BYTES", 1_000_000)
    monkeypatch.setattr(passes, "TRACE_BYTES_PER_LAUNCH", 1)
    with pytest.raises(RooflintError) as caught:
        passes._read_trace(trace)
    words = str(caught.value)
    assert "a 2.1 MiB trace of the program's operators and kernel launches, up to 2.2 " \
        "million launches" in words
    assert "up to 8 hours" in words and "profile a shorter run" in words


def test_a_large_trace_is_said_before_it_is_read_with_what_makes_it_smaller(tmp_path):
    """The word language model's LSTM epoch (pytorch/examples) wrote an 837 MB trace, and
    its profile sat silent for 37.5 s reading it (H200's host): a trace past LARGE_TRACE_BYTES,
    one process's or a job's ranks' together, is said first; one under it is not."""
    ranks = [tmp_path / "trace.1.json", tmp_path / "trace.2.json"]
    for path, size in zip(ranks, (500_000_000, 337_000_000)):
        path.write_bytes(b"")
        os.truncate(path, size)                      # sparse: no disk written
    said: list[str] = []
    passes.say_if_large(ranks, said.append)
    (line,) = said
    assert "798 MiB of trace" in line and "about 40 s" in line
    assert "a shorter run of the program" in line
    said.clear()
    os.truncate(ranks[0], passes.LARGE_TRACE_BYTES - 1000)
    os.truncate(ranks[1], 1000)                      # together: the threshold, not past it
    passes.say_if_large([*ranks, tmp_path / "missing.json"], said.append)
    assert said == []
    os.truncate(ranks[0], passes.MAX_TRACE_BYTES + 1)   # refused by its reading, with why
    passes.say_if_large(ranks, said.append)
    assert said == []


def test_a_python_without_pytorch_falls_back_to_nsight_compute(tmp_path, monkeypatch):
    """The bootstrap exits with NO_PROFILER before running the program when torch cannot
    be imported (true of this CI machine)."""
    pytest.importorskip("numpy")
    if __import__("importlib").util.find_spec("torch"):
        pytest.skip("this Python has PyTorch")
    marker = tmp_path / "ran"
    assert passes.trace_pass([sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
                             tmp_path, print) is None
    assert not marker.exists()                         # the program was not run twice


def test_ranges_are_found_in_a_parsed_trace():
    trace = {"traceEvents": [{"cat": "user_annotation", "name": "timed"}, {"cat": "kernel"}]}
    assert passes.has_range(trace, "timed") and not passes.has_range(trace, "other")
    assert not passes.has_range(None, "timed")


# A stand-in PyTorch (stand_in_torch.py) whose import and TorchDynamo's note what they saw
# of the environment's SETTING; DYNAMO=fail makes TorchDynamo raise.
STAND_IN = {
    "__init__.py": "import os\nSEEN = os.environ.get('SETTING')\n"
                   "from . import cuda, overrides, profiler\n",
    "_dynamo/__init__.py": """\
import os, sys
if os.environ.get("DYNAMO") == "fail":
    raise RuntimeError("this TorchDynamo cannot be imported")
print("dynamo imported, SETTING", os.environ.get("SETTING"), file=sys.stderr)
""",
}
# A program that sets SETTING in its own code before it imports torch (IMPORTS: whether it
# does), as a program sets TORCH_LOGS or TORCHINDUCTOR_... before `import torch`.
PROGRAM = '''\
import os, sys
os.environ["SETTING"] = "the program's"
if os.environ.get("IMPORTS") == "torch":
    import torch
print("program:", sys.argv, "torch._dynamo" in sys.modules, sys.path[0], file=sys.stderr)
sys.exit(7 if os.environ.get("IMPORTS") == "torch" else 0)
'''


@pytest.fixture
def stand_in_torch(tmp_path):
    return write_stand_in(tmp_path / "site", STAND_IN)


def _program(tmp_path) -> Path:
    script = tmp_path / "app" / "train.py"
    script.parent.mkdir()
    script.write_text(PROGRAM)
    return script


@pytest.mark.parametrize("dynamo, imported", [("works", True), ("fail", False)])
def test_pass_two_imports_dynamo_with_the_programs_torch(tmp_path, stand_in_torch, dynamo,
                                                         imported):
    """Pass 2's early-started program gets TorchDynamo with its own ``import torch`` (where
    it waits for Nsight Compute at its first CUDA call, TorchDynamo's import would be on pass
    2's clock), after what the program set in its environment, and is otherwise run as
    ``python train.py ARGS`` runs it: its argv, its folder first on sys.path, its exit
    status. A TorchDynamo that cannot be imported is the program's own affair."""
    script = _program(tmp_path)
    command = passes.pass_two_command([sys.executable, str(script), "--steps", "2"])
    assert command[1:5] == [str(passes.BOOTSTRAP), "--pass-two", "0", "--"]
    done = subprocess.run(command, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(stand_in_torch),
                               "DYNAMO": dynamo, "IMPORTS": "torch"})
    assert done.returncode == 7, done.stderr
    said = done.stderr.splitlines()
    assert said[-1] == (f"program: {[str(script), '--steps', '2']} {imported} "
                        f"{script.parent}")
    assert ("dynamo imported, SETTING the program's" in said) is imported


def test_pass_two_imports_no_dynamo_for_a_program_without_torch(tmp_path, stand_in_torch):
    done = subprocess.run(passes.pass_two_command([sys.executable, str(_program(tmp_path))]),
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(stand_in_torch), "IMPORTS": ""})
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("program:") and " False " in done.stderr


def test_pass_one_starts_the_profiler_with_the_programs_torch(tmp_path, stand_in_torch,
                                                             monkeypatch):
    """The profiler starts at the program's own ``import torch``, so PyTorch sees what the
    program set before it (pass 1 had imported torch before the program's first line), and
    the program's exit status is its own."""
    monkeypatch.setenv("PYTHONPATH", str(stand_in_torch))
    monkeypatch.setenv("IMPORTS", "torch")
    script = _program(tmp_path)
    with pytest.raises(passes.RooflintError, match="exit 7"):
        passes.trace_pass([sys.executable, str(script)], tmp_path, print)
    assert json.loads((tmp_path / passes.TRACE_LOG).read_text())["torch saw"] == \
        "the program's"


def test_a_program_that_imports_no_cuda_library_is_not_traced_and_says_so(
        tmp_path, stand_in_torch, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(stand_in_torch))
    monkeypatch.setenv("IMPORTS", "")
    command = [sys.executable, str(_program(tmp_path))]
    with pytest.raises(passes.UnreadableTrace, match="traced nothing .*torch, cupy, jax"):
        passes.trace_pass(command, tmp_path, print)
    said = []
    assert passes._torch_trace(command, passes.Filters(), None, said.append) is None
    assert "timing every launch another way" in said[-1]


def test_pass_two_starts_other_programs_as_they_are():
    assert passes.pass_two_command(["./sgemm", "5"]) == ["./sgemm", "5"]
    assert passes.pass_two_command(["python", "-u", "train.py"]) == ["python", "-u", "train.py"]
    launcher = ["python", "-m", "torch.distributed.run", "--nproc_per_node=2", "t.py"]
    assert passes.pass_two_command(launcher, 20) == launcher     # its ranks are the program
    assert passes.pass_two_command(["python", "t.py"], 20)[2:5] == ["--pass-two", "20", "--"]


def test_a_profiler_that_will_not_start_leaves_the_program_to_run_untraced(
        tmp_path, stand_in_torch, monkeypatch):
    """The profiler starts inside the program's own ``import torch``: failing there must
    not fail the program, which then runs as it would have, and pass 1 is taken another
    way."""
    for name, value in (("PYTHONPATH", str(stand_in_torch)), ("IMPORTS", "torch"),
                        ("PROFILER", "fail")):
        monkeypatch.setenv(name, value)
    with pytest.raises(passes.RooflintError, match="exit 7"):    # the program's own status
        passes.trace_pass([sys.executable, str(_program(tmp_path))], tmp_path, print)
    assert not (tmp_path / passes.TRACE_LOG).exists()


# A stand-in CuPy whose import loads CUPTI's recorder as the CUDA driver would: where
# CUDA_INJECTION64_PATH names it when the program initialises CUDA (here: on import), the
# recorded llm.c records are written into the recorder's folder as its process's file.
RECORDED = Path(__file__).parents[1] / "fixtures" / "kernel-records" / "h200-layernorm-forward.tsv"
STAND_IN_CUPY = f"""\
import os, shutil
if os.environ.get("CUDA_INJECTION64_PATH") == "/cache/librooflint_kernel_trace.so":
    shutil.copy({str(RECORDED)!r}, os.path.join(os.environ["ROOFLINT_KERNEL_TRACE"],
                                                f"kernels.{{os.getpid()}}.tsv"))
"""
# A stand-in Numba: imported by a PyTorch program before torch (through librosa, say), it
# initialises no CUDA.
STAND_IN_NUMBA = "import os, sys\n"
CUPY_PROGRAM = '''\
import sys
import cupy
if "--torch-too" in sys.argv:
    import torch
print("torch imported:", "torch" in sys.modules, file=sys.stderr)
'''


@pytest.fixture
def stand_in_cupy(tmp_path, stand_in_torch, monkeypatch):
    for name, text in (("cupy", STAND_IN_CUPY), ("numba", STAND_IN_NUMBA)):
        (stand_in_torch / name).mkdir()
        (stand_in_torch / name / "__init__.py").write_text(text)
    monkeypatch.setenv("PYTHONPATH", str(stand_in_torch))
    script = tmp_path / "pipeline.py"
    script.write_text(CUPY_PROGRAM)
    return script


def test_a_cupy_programs_pass_one_is_recorded_by_cupti_without_importing_torch(
        tmp_path, stand_in_cupy):
    """A program whose first GPU library is CuPy's gets CUPTI's recorder, named to the CUDA
    driver before CuPy's import runs, and no PyTorch imported into it; its trace is the
    records'."""
    said = []
    traced = passes.trace_pass([sys.executable, str(stand_in_cupy)], tmp_path, said.append,
                               recorder=Path("/cache/librooflint_kernel_trace.so"))
    assert traced.timer is passes.Timer.cupti and traced.processes == 1
    assert len([e for e in traced.trace["traceEvents"] if e.get("cat") == "kernel"]) == 300
    assert json.loads((tmp_path / passes.TRACE_LOG).read_text()) == traced.trace


def test_a_program_that_imports_torch_first_keeps_pytorchs_profiler(tmp_path, stand_in_cupy,
                                                                    monkeypatch):
    """Where torch comes first, its profiler gives operators and lines: the recorder
    offered is not loaded."""
    script = tmp_path / "train.py"
    script.write_text("import torch, cupy\n")
    traced = passes.trace_pass([sys.executable, str(script)], tmp_path, print,
                               recorder=Path("/cache/librooflint_kernel_trace.so"))
    assert traced.timer is passes.Timer.torch


def test_a_cupy_program_imports_no_torch_under_the_recorder(tmp_path, stand_in_cupy):
    done = subprocess.run(
        [sys.executable, str(passes.BOOTSTRAP), str(tmp_path / "t.json"), "x", "0", "--",
         str(stand_in_cupy)], capture_output=True, text=True,
        env={**os.environ, passes.RECORDER: "/cache/librooflint_kernel_trace.so",
             passes.RECORDS_FOLDER: str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "torch imported: False" in done.stderr
    assert list(tmp_path.glob("kernels.*.tsv")) and not (tmp_path / "t.json").exists()


def test_a_pytorch_program_whose_first_import_was_numbas_keeps_pytorchs_profiler(
        tmp_path, stand_in_cupy):
    """The recorder named at Numba's import is unnamed at torch's, CUDA not initialised
    yet: PyTorch's profiler starts, with its operators and lines, and the driver will load
    no recorder beside it."""
    script = tmp_path / "train.py"
    script.write_text("import os, sys\nimport numba\nimport torch\n"
                      "print('injection:', os.environ.get('CUDA_INJECTION64_PATH'), "
                      "file=sys.stderr)\n")
    traced = passes.trace_pass([sys.executable, str(script)], tmp_path, print,
                               recorder=Path("/cache/librooflint_kernel_trace.so"))
    assert traced.timer is passes.Timer.torch
    done = subprocess.run(
        [sys.executable, str(passes.BOOTSTRAP), str(tmp_path / "t.json"), "x", "0", "--",
         str(script)], capture_output=True, text=True,
        env={**os.environ, passes.RECORDER: "/cache/librooflint_kernel_trace.so",
             passes.RECORDS_FOLDER: str(tmp_path)})
    assert done.returncode == 0 and "injection: None" in done.stderr, done.stderr


def test_torch_imported_after_cuda_was_initialised_under_the_recorder_stays_recorded(
        tmp_path, stand_in_cupy):
    """PyTorch's profiler may not start beside the recorder the driver loaded already."""
    traced = passes.trace_pass([sys.executable, str(stand_in_cupy), "--torch-too"],
                               tmp_path, print,
                               recorder=Path("/cache/librooflint_kernel_trace.so"))
    assert traced.timer is passes.Timer.cupti


def test_without_a_recorder_a_cupy_program_is_traced_by_pytorchs_profiler(tmp_path,
                                                                          stand_in_cupy):
    """Where rooflint offers no recorder (not built yet, no nvcc, --nvtx), as before."""
    traced = passes.trace_pass([sys.executable, str(stand_in_cupy)], tmp_path, print)
    assert traced.timer is passes.Timer.torch
