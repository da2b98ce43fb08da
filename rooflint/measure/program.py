"""Run a user's program for the two passes of `rooflint profile`.

Pass 1 times every kernel launch, so the kernels can be ranked by total GPU time: a
Python program whose interpreter has PyTorch runs under PyTorch's profiler
(trace_bootstrap.py: CUPTI's activity records at the program's own speed, with the
operators and Python functions behind each launch); any other program, or one that trace
cannot serve (no torch, an NVTX range not pushed through torch.cuda.nvtx, a trace
unreadable or over MAX_TRACE_BYTES), under Nsight Compute (one metric,
``gpu__time_duration``, no replay, every launch serialised). Pass 2 runs the program
again under Nsight Compute and collects rooflint's counter list on the first launch of
each launch configuration (``--filter-mode per-launch-config``) of the chosen kernels'
functions, so each is profiled once, wherever it falls in the launch order: two runs of
one program need not launch in the same order (a GPT-2 training step's did not), and the
analysis matches pass 2's launches to pass 1's kernels by what they are, not where they
are. A program's launch configurations are tens where its launches are thousands. (ncu
counts two kernels with the same grid, block, registers and shared memory as one
configuration: the second then has no counters, and its row says why.)

Pass 2's program is started while pass 1 runs, under ``ncu --mode launch`` and for its
own process only: it gets through its start-up (for a PyTorch program, most of its wall
time) and waits at its first CUDA call, before touching the GPU, until pass 1 is done
and ``ncu --mode attach`` profiles it. That is sound when the program's kernels
all run in that one process, which pass 1 shows; otherwise (a shell script around the
real program, workers that launch kernels) a child may have run on the GPU beside pass 1,
so the early start is stopped and pass 1 is taken again, alone, before an ordinary pass 2.
Only the program's own process waits: ncu would suspend its children too, and nobody
attaches to them (torch.compile's compile workers then hang the program at exit).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from rooflint.common.errors import RooflintError
from rooflint.measure import ncu
from rooflint.formats.trace_events import LINE_RANGE

NAME_BASE = ("--kernel-name-base", "demangled")


# The logs a profile writes into its --logs directory (else a temporary one).
TRACE_LOG, DURATIONS_LOG, COUNTERS_LOG = "pass1-trace.json", "pass1-durations.csv", \
    "pass2-counters.csv"
LOGS = (TRACE_LOG, DURATIONS_LOG, COUNTERS_LOG)


@dataclass
class Filters:
    nvtx: str | None = None        # an NVTX range (push/pop name): only launches inside it
    kernel: str | None = None      # a regular expression on the demangled kernel name
    skip: int = 0                  # leave out the first N (matching) launches: warm-up


class Timer(str, Enum):
    """What timed pass 1's launches."""

    torch = "torch"                # PyTorch's profiler (CUPTI), at the program's own speed
    ncu = "ncu"                    # Nsight Compute, every launch serialised

    @property
    def words(self) -> str:
        return {"torch": "PyTorch's profiler", "ncu": "Nsight Compute"}[self.value]


@dataclass
class Stopped:
    """Why pass 2 ended without counters after pass 1 had measured: the profile keeps
    pass 1's kernel times, each chosen kernel's row saying this."""

    why: str                       # one line: "pass 2 was interrupted", "pass 2 failed: ..."
    interrupted: bool = False      # Ctrl-C (or SIGTERM), not a failure


@dataclass
class Pass:
    """One run of the program: its log (ncu's CSV, or the profiler's JSON trace), how long
    it took, and how many processes launched the kernels it saw."""

    log: str
    wall_s: float
    attached: bool = False         # pass 2 profiled the program started early (two_passes)
    timer: Timer = Timer.ncu
    processes: int = 1
    trace: dict | None = None      # the profiler's trace, parsed (Timer.torch)
    stopped: Stopped | None = None  # pass 2 failed or was interrupted: no log


@dataclass
class Choice:
    """What pass 2 profiles: launches of these kernel functions, with the tensor-path FLOPs
    of these precisions only (None: all of them; each costs up to three replay passes of
    every profiled launch, and a tensor pipe busy in another shows in ncu.TENSOR_PIPE)."""

    functions: list[str]
    tensor_precisions: frozenset[str] | None = None

    @property
    def metrics(self) -> list[str]:
        if self.tensor_precisions is None:
            return ncu.METRICS
        return ncu.metrics_for(self.tensor_precisions)


def two_passes(command: list[str], filters: Filters, logs: Path | None,
               plan: Callable[[Pass], Choice], say: Callable[[str], None]
               ) -> tuple[Pass, Pass]:
    """Pass 1, then pass 2 on the kernels ``plan`` chooses from it,
    pass 2's program started early when that is sound (see the module's docstring). A
    pass 2 that fails or is interrupted is a Pass that says why (see _second): what pass 1
    measured is kept."""
    with _early_start(command) as waiting:
        first = timing_pass(command, filters, logs, say)
        if _alone(waiting, first):
            choice = plan(first)
            return first, _second(lambda: _attach(waiting, filters, choice, logs, say),
                                  attached=True)
        _stop(waiting.process)
    say("pass 1 again, alone: this program's kernels do not all run in its own process, so "
        "its early-started second run may have overlapped the first")
    first = duration_pass(command, filters, logs, say)
    choice = plan(first)
    return first, _second(lambda: counter_pass(command, filters, choice, logs, say))


def _second(run: Callable[[], Pass], attached: bool = False) -> Pass:
    """Pass 2, or, when it fails or is interrupted, a Pass with no log whose ``stopped``
    says why: minutes of pass 1 are not thrown away for a crash or a Ctrl-C in pass 2.
    Only pass 2's own failures: ``plan``'s (pass 1's trace) are raised before it starts."""
    began = time.perf_counter()
    try:
        return run()
    except KeyboardInterrupt:
        stopped = Stopped("pass 2 was interrupted", interrupted=True)
    except RooflintError as exc:
        stopped = Stopped(f"pass 2 failed: {exc}")
    return Pass("", time.perf_counter() - began, attached=attached, stopped=stopped)


def timing_pass(command: list[str], filters: Filters, logs: Path | None,
                say: Callable[[str], None]) -> Pass:
    """Pass 1: a Python program under PyTorch's profiler where it has one (no overhead:
    the program's own speed), else every launch under Nsight Compute, which also sees NVTX
    ranges the profiler cannot (those not pushed through torch.cuda.nvtx)."""
    if is_python(command):
        try:
            traced = trace_pass(command, logs, say)
        except UnreadableTrace as exc:
            say(f"{exc}: timing every launch with Nsight Compute instead")
            traced = None
        else:
            if traced is not None and (not filters.nvtx or has_range(traced.trace, filters.nvtx)):
                return traced
            if traced is not None:
                say(f"PyTorch's profiler saw no range {filters.nvtx!r} (only torch.cuda.nvtx "
                    f"ranges reach it): timing every launch with Nsight Compute instead")
    return duration_pass(command, filters, logs, say)


def has_range(trace: dict | None, name: str) -> bool:
    """Whether the profiler's trace holds a range called ``name``."""
    return any(e.get("cat") == "user_annotation" and e.get("name") == name
               for e in (trace or {}).get("traceEvents", []) if isinstance(e, dict))


class UnreadableTrace(Exception):
    """PyTorch's profiler wrote a trace rooflint cannot read (its JSON export does not
    escape every name; a long program's trace can outgrow what rooflint holds)."""


PYTHON = re.compile(r"python[\d.]*")


def is_python(command: list[str]) -> bool:
    """``python train.py ...``, ``python -m pkg ...`` or ``python -c CODE``: a program the
    bootstrap can start as the interpreter would (other interpreter options are not)."""
    if not PYTHON.fullmatch(Path(command[0]).name) or len(command) < 2:
        return False
    return command[1] in ("-m", "-c") and len(command) > 2 or not command[1].startswith("-")


BOOTSTRAP = Path(__file__).with_name("trace_bootstrap.py")
NO_PROFILER = 3                    # trace_bootstrap's status when torch cannot be imported


def trace_pass(command: list[str], logs: Path | None,
               say: Callable[[str], None]) -> Pass | None:
    """The program under PyTorch's profiler (see trace_bootstrap.py); None if its
    interpreter has no PyTorch. Filters are applied to the trace afterwards."""
    with tempfile.TemporaryDirectory(prefix="rooflint-trace-") as scratch:
        trace = (logs or Path(scratch)) / TRACE_LOG
        began = time.perf_counter()
        try:
            done = _output_of([command[0], str(BOOTSTRAP), str(trace), LINE_RANGE, "--",
                               *command[1:]], PassProgress("pass 1", say))
        except OSError as exc:
            raise RooflintError(f"cannot start {command[0]}: {exc.strerror or exc}") from None
        wall = time.perf_counter() - began
        if done.returncode == NO_PROFILER and not trace.exists():
            return None
        if done.returncode != 0:
            raise RooflintError(f"the command failed (exit {done.returncode}): "
                                f"{_tail(done.stdout + done.stderr, '')}")
        document = _read_trace(trace)
    kernels = any(isinstance(e, dict) and e.get("cat") == "kernel"
                  for e in document.get("traceEvents", []))
    return Pass("", wall, timer=Timer.torch, processes=1 if kernels else 0, trace=document)


MAX_TRACE_BYTES = 1 << 30   # the compiled training step's is 12 MB, 2,000 launches


def _read_trace(path: Path) -> dict:
    """The profiler's trace, parsed; UnreadableTrace when it is missing, too large to hold
    or not JSON."""
    try:
        size = path.stat().st_size
        if size > MAX_TRACE_BYTES:
            raise UnreadableTrace(f"PyTorch's profiler wrote a {size / 1e9:.1f} GB trace "
                                  f"(more than rooflint reads)")
        document = json.loads(path.read_bytes())
    except OSError as exc:
        raise UnreadableTrace(f"PyTorch's profiler wrote no trace ({exc.strerror})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise UnreadableTrace(f"PyTorch's profiler wrote a trace that is not JSON "
                              f"({str(exc)[:80]})") from None
    if not isinstance(document, dict):
        raise UnreadableTrace("PyTorch's profiler wrote a trace that is not a trace")
    return document


def duration_pass(command: list[str], filters: Filters, logs: Path | None,
                  say: Callable[[str], None]) -> Pass:
    """Every launch's duration (and the device's attributes, which ncu prints beside it).

    Caches are left as the program leaves them (``--cache-control none``): pass 1 asks how
    long each kernel takes in this program, where a kernel often reads what the one before
    it wrote; flushing before every launch would time a different program, and costs about
    6 ms a launch (1.2 s of the PyTorch example's 200 launches on an H100)."""
    args = [*ncu.BASE_OPTIONS, *NAME_BASE, "--cache-control", "none",
            "--metrics", ncu.DURATION, *_filter_args(filters),
            "--launch-skip", str(filters.skip)]
    return _run(args, command, logs, DURATIONS_LOG, PassProgress("pass 1", say))


# Launches profiled of each distinct launch configuration in pass 2.
LAUNCHES_PER_CONFIG = 1


def counter_pass(command: list[str], filters: Filters, choice: Choice,
                 logs: Path | None, say: Callable[[str], None]) -> Pass:
    """rooflint's counters on the first launch of each launch configuration of the chosen
    kernels (see _selection)."""
    args = [*ncu.BASE_OPTIONS, *NAME_BASE, "--cache-control", "all",
            "--metrics", ",".join(choice.metrics), *_selection(filters, choice.functions)]
    return _run(args, command, logs, COUNTERS_LOG, PassProgress("pass 2", say))


def _selection(filters: Filters, functions: list[str]) -> list[str]:
    """Pass 2's launches: LAUNCHES_PER_CONFIG of each launch configuration whose kernel is
    one of ``functions`` (the chosen kernels' function names, or the user's ``--kernel``).

    Not ``--nvtx`` nor ``--skip``: an NVTX range holds only the launches of the thread that
    pushed it (PyTorch's backward runs on a thread of its own, whose kernels would all be
    left out), and the first launch of a configuration is often in the warm-up. Counters
    do not need the steady state: bytes, FLOPs and stalls are the kernel's own, and every
    profiled launch starts from flushed caches."""
    names = "|".join(re.escape(f) for f in functions)
    pattern = filters.kernel or f"(^|[\\s:])({names})(<|\\(|$)"
    return ["--filter-mode", "per-launch-config", "--launch-count", str(LAUNCHES_PER_CONFIG),
            "-k", f"regex:{pattern}"]


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
def _early_start(command: list[str]) -> Iterator[Waiting]:
    """``command`` started for pass 2, its own process to wait at its first CUDA call; on
    the way out (pass 2 done, pass 1 failing, Ctrl-C) killed if still running."""
    with tempfile.TemporaryDirectory(prefix="rooflint-pass2-") as scratch:
        output = Path(scratch) / "output.txt"
        port = _free_ports()
        with output.open("w") as sink:
            try:
                process = subprocess.Popen(
                    [ncu_executable(), "--mode", "launch", "--target-processes",
                     "application-only", "--port", str(port), "--max-connections",
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
    return suspended and first.processes == 1


def _attach(waiting: Waiting, filters: Filters, choice: Choice,
            logs: Path | None, say: Callable[[str], None]) -> Pass:
    """counter_pass's selection, profiled by attaching to the waiting program, which then
    runs to its end."""
    args = ["--mode", "attach", "--hostname", "127.0.0.1", "--port", str(waiting.port),
            "--max-connections", str(PORTS), *ncu.BASE_OPTIONS, *NAME_BASE,
            "--cache-control", "all", "--metrics", ",".join(choice.metrics),
            *_selection(filters, choice.functions)]
    began = time.perf_counter()
    attached = _run(args, [], logs, COUNTERS_LOG, PassProgress("pass 2", say),
                    program_output=waiting.output, program=waiting.process)
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
    """The NVIDIA driver's version (measure/nvml.py reads it), or "unknown" where NVML is
    missing or cannot answer: the profile still stands. Imported here, not at the top,
    so that a machine without pynvml can still profile."""
    try:
        from rooflint.measure import nvml
        return nvml.driver_version()
    except Exception:  # no NVML on this machine
        return "unknown"


def _filter_args(filters: Filters) -> list[str]:
    """Pass 1's launch filters under Nsight Compute (the profiler's trace is filtered
    afterwards, in the analysis, the same way)."""
    nvtx = ["--nvtx", "--nvtx-include", f"{filters.nvtx}/"]
    return ((nvtx if filters.nvtx else [])
            + (["-k", f"regex:{filters.kernel}"] if filters.kernel else []))


def _tail(program: str, log: str) -> str:
    """The last lines the program printed; if it printed none, ncu's errors from its log."""
    said = [line for line in program.splitlines()
            if line.strip() and not line.startswith("==")][-3:]
    errors = [line for line in log.splitlines() if line.startswith("==ERROR==")][-2:]
    return " | ".join(said or errors) or "no output"


# How often a pass that runs on says how long it has run (a pass shorter says nothing).
PROGRESS_EVERY_S = 10.0
T = TypeVar("T")


@dataclass
class PassProgress:
    """Says, every PROGRESS_EVERY_S while a pass runs, how long it has run so far. Time is
    all that is known meanwhile: ncu writes its CSV rows (``--csv`` prints no line per
    profiled launch) and the profiler its trace only when the program ends."""

    step: str                      # "pass 1"
    say: Callable[[str], None]
    began: float = field(default_factory=time.monotonic)

    def wait(self, until_done: Callable[[float], T]) -> T:
        """``until_done(timeout)``, called again after each subprocess.TimeoutExpired."""
        while True:
            try:
                return until_done(PROGRESS_EVERY_S)
            except subprocess.TimeoutExpired:
                self.say(f"{self.step}: {time.monotonic() - self.began:.0f} s so far")


def _output_of(args: list[str], progress: PassProgress) -> subprocess.CompletedProcess:
    """subprocess.run(args, capture_output=True, text=True), saying how long a long pass
    has run (communicate loses no output across its timeouts); the process is killed when
    rooflint is interrupted while it runs."""
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace") as process:
        try:
            stdout, stderr = progress.wait(lambda seconds: process.communicate(timeout=seconds))
        except BaseException:
            process.kill()
            raise
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def _run(args: list[str], command: list[str], logs: Path | None, name: str,
         progress: PassProgress, program_output: Path | None = None,
         program: subprocess.Popen | None = None) -> Pass:
    """ncu ARGS COMMAND, its CSV kept in ``logs`` (or a temporary folder); one line saying
    why for every failure: no ncu, no permission, the program failing, nothing profiled.
    When ncu attaches to a waiting ``program``, that program's exit and output count."""
    with tempfile.TemporaryDirectory(prefix="rooflint-profile-") as scratch:
        log = (logs or Path(scratch)) / name
        began = time.perf_counter()
        try:
            done = _output_of([ncu_executable(), *args, "--log-file", str(log), *command],
                              progress)
        except OSError as exc:
            raise RooflintError(f"cannot start ncu: {exc.strerror or exc}") from None
        if program is not None:
            done.returncode = done.returncode or progress.wait(
                lambda seconds: program.wait(timeout=seconds))
            done.stdout += program_output.read_text(errors="replace")
        wall = time.perf_counter() - began
        text = log.read_text(errors="replace") if log.exists() else ""
    output = f"{text}\n{done.stdout}\n{done.stderr}"
    if "ERR_NVGPUCTRPERM" in output or "LibraryNotLoaded" in output:
        raise RooflintError(f"ncu cannot profile here: {ncu.failure_reason(output)}")
    if done.returncode != 0:
        raise RooflintError(f"the command failed under ncu (exit {done.returncode}): "
                            f"{_tail(done.stdout + done.stderr, text)}")
    rows = ncu.parse_rows(text)
    if not rows:
        raise RooflintError(f"{' '.join(command) or 'the program'} launched no CUDA kernel "
                            f"that ncu saw ({ncu.failure_reason(output)}); check --nvtx and "
                            f"--kernel")
    return Pass(text, wall, processes=processes_in(rows))


def processes_in(rows: list[dict]) -> int:
    """How many processes launched the kernels of an ncu log."""
    return len({row.get("Process ID") for row in rows})
