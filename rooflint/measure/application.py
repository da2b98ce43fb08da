"""Run a user's program under Nsight Compute: the two passes of `rooflint profile`.

Pass 1 times every kernel launch (one metric, ``gpu__time_duration``, no replay), so the
kernels can be ranked by total GPU time. Pass 2 runs the program again, with the same
filters, and collects rooflint's counter list on a short window of launches (skip S,
count C, chosen from pass 1's launch order) that holds one launch of every chosen kernel.
Selecting by position, not by name, needs no regular expression over demangled C++
signatures, whose colons, brackets and spaces ncu's ``--kernel-id`` syntax cannot take.

Pass 2's program is started while pass 1 runs, under ``ncu --mode launch`` and for its
own process only: it gets through its start-up (for a PyTorch program, most of its wall
time) and waits at its first CUDA call, before touching the GPU, until pass 1 has chosen
the window and ``ncu --mode attach`` profiles it. That is sound when the program's kernels
all run in that one process, which pass 1 shows; otherwise (a shell script around the
real program, workers that launch kernels) a child may have run on the GPU beside pass 1,
so the early start is stopped and pass 1 is taken again, alone, before an ordinary pass 2.
Only the program's own process waits: ncu would suspend its children too, and nobody
attaches to them (torch.compile's compile workers then hang the program at exit).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from rooflint.errors import RooflintError
from rooflint.measure import ncu

NAME_BASE = ("--kernel-name-base", "demangled")


@dataclass
class Filters:
    nvtx: str | None = None        # an NVTX range (push/pop name): only launches inside it
    kernel: str | None = None      # a regular expression on the demangled kernel name
    skip: int = 0                  # leave out the first N (matching) launches: warm-up


@dataclass
class Pass:
    """One run of the program under ncu: its CSV log and how long it took."""

    log: str
    wall_s: float
    attached: bool = False         # pass 2 profiled the program started early (two_passes)


def two_passes(command: list[str], filters: Filters, logs: Path | None,
               plan: Callable[[Pass], tuple[int, int]], say: Callable[[str], None]
               ) -> tuple[Pass, Pass]:
    """Pass 1, then pass 2 on the window (skip, count) that ``plan`` chooses from pass 1,
    pass 2's program started early when that is sound (see the module's docstring)."""
    with _early_start(command, filters) as waiting:
        first = duration_pass(command, filters, logs)
        if _alone(waiting, first):
            skip, count = plan(first)
            return first, _attach(waiting, filters, skip, count, logs)
        _stop(waiting.process)
    say("pass 1 again, alone: this program's kernels do not all run in its own process, so "
        "its early-started second run may have overlapped the first")
    first = duration_pass(command, filters, logs)
    skip, count = plan(first)
    return first, counter_pass(command, filters, skip, count, logs)


def duration_pass(command: list[str], filters: Filters, logs: Path | None) -> Pass:
    """Every launch's duration (and the device's attributes, which ncu prints beside it).

    Caches are left as the program leaves them (``--cache-control none``): pass 1 asks how
    long each kernel takes in this program, where a kernel often reads what the one before
    it wrote; flushing before every launch would time a different program, and costs about
    6 ms a launch (1.2 s of the PyTorch example's 200 launches on an H100)."""
    args = [*ncu.BASE_OPTIONS, *NAME_BASE, "--cache-control", "none",
            "--metrics", ncu.DURATION, *_filter_args(filters),
            "--launch-skip", str(filters.skip)]
    return _run(args, command, logs, "pass1-durations.csv")


def counter_pass(command: list[str], filters: Filters, skip: int, count: int,
                 logs: Path | None) -> Pass:
    """rooflint's counters on launches skip+1 .. skip+count of the same filtered sequence as
    pass 1 (a window that holds one launch of every chosen kernel, see application.window)."""
    args = [*ncu.BASE_OPTIONS, *NAME_BASE, "--cache-control", "all",
            "--metrics", ",".join(ncu.METRICS), *_filter_args(filters),
            "--launch-skip", str(filters.skip + skip), "--launch-count", str(count)]
    return _run(args, command, logs, "pass2-counters.csv")


@dataclass
class Waiting:
    """Pass 2's program under ``ncu --mode launch``: started, to wait for the profiler."""

    process: subprocess.Popen
    port: int
    output: Path                   # the program's (and ncu's) stdout and stderr


WAITING_LINE = "Waiting for profiler to attach"
# ncu 2025.3 finds no waiting program with --max-connections 1 (the launcher binds the
# first port of the range, the attacher then finds nothing); with two it does.
PORTS = 2


@contextmanager
def _early_start(command: list[str], filters: Filters) -> Iterator[Waiting]:
    """``command`` started for pass 2, its own process to wait at its first CUDA call; on
    the way out (pass 2 done, pass 1 failing, Ctrl-C) killed if still running."""
    with tempfile.TemporaryDirectory(prefix="rooflint-pass2-") as scratch:
        output = Path(scratch) / "output.txt"
        port = _free_ports()
        nvtx = ["--nvtx"] if filters.nvtx else []   # NVTX tracking is the launcher's to turn on
        with output.open("w") as sink:
            try:
                process = subprocess.Popen(
                    [ncu_executable(), "--mode", "launch", "--target-processes",
                     "application-only", *nvtx, "--port", str(port), "--max-connections",
                     str(PORTS), *command],
                    stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as exc:
                raise RooflintError(f"cannot start ncu: {exc.strerror or exc}") from None
        try:
            yield Waiting(process, port, output)
        finally:
            _stop(process)


def _alone(waiting: Waiting, first: Pass) -> bool:
    """Whether the early start was sound: the waiting program reached its first CUDA call
    (so it ran nothing on the GPU), and pass 1 saw every kernel launched by one process."""
    suspended = WAITING_LINE in waiting.output.read_text(errors="replace")
    return suspended and len({row.get("Process ID") for row in ncu.parse_rows(first.log)}) == 1


def _attach(waiting: Waiting, filters: Filters, skip: int, count: int,
            logs: Path | None) -> Pass:
    """counter_pass's window, profiled by attaching to the waiting program, which then
    runs to its end."""
    args = ["--mode", "attach", "--hostname", "127.0.0.1", "--port", str(waiting.port),
            "--max-connections", str(PORTS), *ncu.BASE_OPTIONS, *NAME_BASE,
            "--cache-control", "all", "--metrics", ",".join(ncu.METRICS),
            *_filter_args(filters, attach=True),
            "--launch-skip", str(filters.skip + skip), "--launch-count", str(count)]
    began = time.perf_counter()
    attached = _run(args, [], logs, "pass2-counters.csv", program_output=waiting.output,
                    program=waiting.process)
    return Pass(attached.log, time.perf_counter() - began, attached=True)


def _free_ports() -> int:
    """The first of PORTS consecutive TCP ports nothing listens on now, for the waiting
    program alone: ncu's default range is shared by every ncu on the machine, and an attach
    there could find another's program."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            base = first.getsockname()[1]
            if base + PORTS - 1 <= 65535 and all(_is_free(base + n) for n in range(1, PORTS)):
                return base
    raise RooflintError("no two free consecutive TCP ports on 127.0.0.1 for ncu to attach by")


def _is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _stop(process: subprocess.Popen) -> None:
    """Kill a waiting program and its ncu (one process group) if it is still running."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def ncu_executable() -> str:
    try:
        return ncu.ncu_path()
    except ncu.CountersUnavailable:
        raise RooflintError("rooflint profile needs Nsight Compute: ncu is not on PATH "
                            "(install Nsight Compute, or add its directory to PATH)") from None


def driver_version() -> str:
    """The NVIDIA driver's version through NVML, or "unknown" (a result names it)."""
    try:
        import pynvml
        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # no NVML on this machine: the profile still stands
        return "unknown"


def _filter_args(filters: Filters, attach: bool = False) -> list[str]:
    """The same launch filters for both passes, so pass 1's launch order indexes pass 2's.
    (An attaching ncu takes the NVTX range but not ``--nvtx``: the launcher turned it on.)"""
    nvtx = [*([] if attach else ["--nvtx"]), "--nvtx-include", f"{filters.nvtx}/"]
    return ((nvtx if filters.nvtx else [])
            + (["-k", f"regex:{filters.kernel}"] if filters.kernel else []))


def _tail(program: str, log: str) -> str:
    """The last lines the program printed; if it printed none, ncu's errors from its log."""
    said = [line for line in program.splitlines()
            if line.strip() and not line.startswith("==")][-3:]
    errors = [line for line in log.splitlines() if line.startswith("==ERROR==")][-2:]
    return " | ".join(said or errors) or "no output"


def _run(args: list[str], command: list[str], logs: Path | None, name: str,
         program_output: Path | None = None, program: subprocess.Popen | None = None) -> Pass:
    """ncu ARGS COMMAND, its CSV kept in ``logs`` (or a temporary folder); one line saying
    why for every failure: no ncu, no permission, the program failing, nothing profiled.
    When ncu attaches to a waiting ``program``, that program's exit and output count."""
    with tempfile.TemporaryDirectory(prefix="rooflint-profile-") as scratch:
        log = (logs or Path(scratch)) / name
        began = time.perf_counter()
        try:
            done = subprocess.run([ncu_executable(), *args, "--log-file", str(log), *command],
                                  capture_output=True, text=True, errors="replace")
        except OSError as exc:
            raise RooflintError(f"cannot start ncu: {exc.strerror or exc}") from None
        if program is not None:
            done.returncode = done.returncode or program.wait()
            done.stdout += program_output.read_text(errors="replace")
        wall = time.perf_counter() - began
        text = log.read_text(errors="replace") if log.exists() else ""
    output = f"{text}\n{done.stdout}\n{done.stderr}"
    if "ERR_NVGPUCTRPERM" in output or "LibraryNotLoaded" in output:
        raise RooflintError(f"ncu cannot profile here: {ncu.failure_reason(output)}")
    if done.returncode != 0:
        raise RooflintError(f"the command failed under ncu (exit {done.returncode}): "
                            f"{_tail(done.stdout + done.stderr, text)}")
    if not ncu.parse_rows(text):
        raise RooflintError(f"{' '.join(command) or 'the program'} launched no CUDA kernel "
                            f"that ncu saw ({ncu.failure_reason(output)}); check --nvtx and "
                            f"--kernel")
    return Pass(text, wall)
