"""Run a user's program under Nsight Compute: the two passes of `rooflint profile`.

Pass 1 times every kernel launch (one metric, ``gpu__time_duration``, no replay), so the
kernels can be ranked by total GPU time. Pass 2 runs the program again, with the same
filters, and collects rooflint's counter list on a short window of launches (skip S,
count C, chosen from pass 1's launch order) that holds one launch of every chosen kernel.
Selecting by position, not by name, needs no regular expression over demangled C++
signatures, whose colons, brackets and spaces ncu's ``--kernel-id`` syntax cannot take.

Both passes run the whole program, one after the other. Starting pass 2's program beside
pass 1 under ``ncu --mode launch`` (suspended at its first CUDA call, attached once pass 1
has chosen the window) took the PyTorch example from 14.9 s to 10.9 s on our H200, but a
program's child processes are suspended too and nobody attaches to them: torch.compile's
compile workers then hang the program at exit. Correct for every program comes first.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

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


def _filter_args(filters: Filters) -> list[str]:
    """The same launch filters for both passes, so pass 1's launch order indexes pass 2's."""
    args = ["--nvtx", "--nvtx-include", f"{filters.nvtx}/"] if filters.nvtx else []
    return args + (["-k", f"regex:{filters.kernel}"] if filters.kernel else [])


def _tail(program: str, log: str) -> str:
    """The last lines the program printed; if it printed none, ncu's errors from its log."""
    said = [line for line in program.splitlines()
            if line.strip() and not line.startswith("==")][-3:]
    errors = [line for line in log.splitlines() if line.startswith("==ERROR==")][-2:]
    return " | ".join(said or errors) or "no output"


def _run(args: list[str], command: list[str], logs: Path | None, name: str) -> Pass:
    """ncu ARGS COMMAND, its CSV kept in ``logs`` (or a temporary folder); one line saying
    why for every failure: no ncu, no permission, the program failing, nothing profiled."""
    with tempfile.TemporaryDirectory(prefix="rooflint-profile-") as scratch:
        log = (logs or Path(scratch)) / name
        began = time.perf_counter()
        try:
            done = subprocess.run([ncu_executable(), *args, "--log-file", str(log), *command],
                                  capture_output=True, text=True, errors="replace")
        except OSError as exc:
            raise RooflintError(f"cannot start ncu: {exc.strerror or exc}") from None
        wall = time.perf_counter() - began
        text = log.read_text(errors="replace") if log.exists() else ""
    output = f"{text}\n{done.stdout}\n{done.stderr}"
    if "ERR_NVGPUCTRPERM" in output or "LibraryNotLoaded" in output:
        raise RooflintError(f"ncu cannot profile here: {ncu.failure_reason(output)}")
    if done.returncode != 0:
        raise RooflintError(f"the command failed under ncu (exit {done.returncode}): "
                            f"{_tail(done.stdout + done.stderr, text)}")
    if not ncu.parse_rows(text):
        raise RooflintError(f"{' '.join(command)} launched no CUDA kernel that ncu saw "
                            f"({ncu.failure_reason(output)}); check --nvtx and --kernel")
    return Pass(text, wall)
