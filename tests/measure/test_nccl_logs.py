"""Pass 1 asks NCCL for its log of every call (measure/nccl_logs.py), unless the user set
NCCL's logging already: the environment it adds, and the logs a program's processes
write coming back with the pass (a stand-in program writes one where NCCL_DEBUG_FILE
says, expanding %h and %p as NCCL does)."""

from __future__ import annotations

import socket
import sys

import pytest

from rooflint.measure import kernel_trace, nccl_logs, program
from test_kernel_trace import _kernel
from stand_in_torch import stand_in_torch
from test_trace_pass import STAND_IN

CALL = ("{host}:{pid}:{pid} [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f0 recvbuff 0x7f0 "
        "count 1 datatype 7 op 0 root 0 comm 0x55 [nranks=2] stream 0x56")


def test_nccl_is_asked_to_log_each_call_into_rooflints_folder(tmp_path, monkeypatch):
    for name in nccl_logs.USERS_OWN:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "pass" / "nccl"
    assert nccl_logs.log_environment(folder) == {
        "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "COLL",
        "NCCL_DEBUG_FILE": f"{folder}/nccl.%h.%p.log"}
    assert folder.is_dir()                       # NCCL writes to stdout where it cannot open it
    (folder / "nccl.vm.7.log").write_text("one")
    (folder / "kernels.7.tsv").write_text("not NCCL's")
    assert nccl_logs.logs_in(folder) == ["one"]


@pytest.mark.parametrize("name, value", [("NCCL_DEBUG", "WARN"),
                                         ("NCCL_DEBUG_FILE", "/tmp/mine.%h.%p")])
def test_the_users_own_nccl_logging_is_left_alone(tmp_path, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert nccl_logs.users_own() == name
    assert nccl_logs.log_environment(tmp_path / "nccl") == {}
    assert not (tmp_path / "nccl").exists()
    assert nccl_logs.logs_in(tmp_path / "nccl") is None


def _program_logging_nccl() -> list[str]:
    """A stand-in program: the recorder's records of one kernel, and NCCL's log of one call
    where NCCL_DEBUG_FILE says (or nothing, where it is not set)."""
    code = ("import os, pathlib, socket\n"
            f"records = pathlib.Path(os.environ[{kernel_trace.RECORDS_FOLDER!r}])\n"
            "pid = os.getpid()\n"
            "(records / f'kernels.{pid}.tsv').write_text('rooflint-kernel-trace\\t1\\t' + "
            f"str(pid) + '\\n' + {_kernel(0, 5000)!r} + 'L\\t0\\n')\n"
            "log = os.environ.get('NCCL_DEBUG_FILE')\n"
            "host = socket.gethostname().split('.')[0]\n"
            "if log:\n"
            "    pathlib.Path(log.replace('%h', host).replace('%p', str(pid))).write_text("
            f"{CALL!r}.format(host=host, pid=pid) + '\\n')\n")
    return [sys.executable, "-c", code]


def test_the_logs_the_programs_processes_wrote_come_back_with_pass_one(tmp_path, monkeypatch):
    for name in nccl_logs.USERS_OWN:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(kernel_trace, "injection_library", lambda: tmp_path / "lib.so")
    first = kernel_trace.kernel_trace_pass(_program_logging_nccl(), None, print)
    pid = first.trace["processes"][0]["pid"]
    host = socket.gethostname().split(".")[0]
    assert first.nccl_logs == [CALL.format(host=host, pid=pid) + "\n"]


def test_under_the_users_own_nccl_debug_pass_one_reads_no_log(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCL_DEBUG", "WARN")
    monkeypatch.delenv("NCCL_DEBUG_FILE", raising=False)
    monkeypatch.setattr(kernel_trace, "injection_library", lambda: tmp_path / "lib.so")
    first = kernel_trace.kernel_trace_pass(_program_logging_nccl(), None, print)
    assert first.nccl_logs is None and first.processes == 1


def test_under_pytorchs_profiler_the_programs_log_comes_back_too(tmp_path, monkeypatch):
    """test_trace_pass.py's stand-in PyTorch, whose profiler traces nothing."""
    for name in nccl_logs.USERS_OWN:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(stand_in_torch(tmp_path / "site", STAND_IN)))
    script = tmp_path / "train.py"
    script.write_text("import os, pathlib, socket, torch\n"
                      "host, pid = socket.gethostname().split('.')[0], os.getpid()\n"
                      "log = os.environ['NCCL_DEBUG_FILE']\n"
                      "pathlib.Path(log.replace('%h', host).replace('%p', str(pid))).write_text("
                      f"{CALL!r}.format(host=host, pid=pid))\n")
    first = program.trace_pass([sys.executable, str(script)], tmp_path, print)
    assert len(first.nccl_logs) == 1 and "NCCL INFO AllReduce: opCount 0" in first.nccl_logs[0]


def test_the_logs_are_kept_with_pass_ones_trace_under_logs(tmp_path, monkeypatch):
    for name in nccl_logs.USERS_OWN:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(kernel_trace, "injection_library", lambda: tmp_path / "lib.so")
    kept = tmp_path / "logs"
    kept.mkdir()
    first = kernel_trace.kernel_trace_pass(_program_logging_nccl(), kept / "pass1-trace.json",
                                           print)
    pid = first.trace["processes"][0]["pid"]
    host = socket.gethostname().split(".")[0]
    assert (kept / f"nccl.{host}.{pid}.log").read_text() == first.nccl_logs[0]
