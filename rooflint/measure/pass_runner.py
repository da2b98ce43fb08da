"""One pass of `rooflint profile`: the user's program run once under a profiler, and what it
gives back (a Pass).

Every pass (program.py says which and why) runs the same way: a subprocess whose output is
captured, a line every PROGRESS_EVERY_S saying how long a long pass has run, the process
killed when rooflint is interrupted, and one line saying why for every failure (no ncu, no
permission, the program failing, nothing profiled). Under Nsight Compute the pass's CSV
log is kept in the user's --logs directory or a temporary one.
"""

from __future__ import annotations

import functools
import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable, TypeVar

from rooflint.common.errors import RooflintError
from rooflint.judge.kernel_names import function_name
from rooflint.formats.ncu_log import PROCESS
from rooflint.formats.trace_events import Launch, launches, optimizer_steps
from rooflint.measure import ncu


class Timer(str, Enum):
    """What timed pass 1's launches."""

    torch = "torch"                # PyTorch's profiler (CUPTI), at the program's own speed
    cupti = "cupti"                # CUPTI's activity records (measure/kernel_trace.py), as fast
    ncu = "ncu"                    # Nsight Compute, every launch serialised

    @property
    def words(self) -> str:
        return {"torch": "PyTorch's profiler", "cupti": "CUPTI's activity records",
                "ncu": "Nsight Compute"}[self.value]

    @property
    def traced(self) -> bool:
        """Whether the pass's launches are in a trace (Pass.trace), not in ncu's CSV."""
        return self is not Timer.ncu


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
    rotated: bool = False          # pass 2's counters by rotation, not Nsight Compute's
    timer: Timer = Timer.ncu
    processes: int = 1
    # Every kernel it saw ran in the process rooflint started, not in one that process
    # started (a launcher's rank, the program a shell script runs): early_start.alone.
    own_process: bool = True
    trace: dict | None = None      # the profiler's trace, parsed (Timer.traced)
    stopped: Stopped | None = None  # pass 2 failed or was interrupted: no log
    # NCCL's logs of the program's calls, one a process (nccl_logs.py); None where none
    # were asked for (the user's own NCCL_DEBUG, a pass under Nsight Compute)
    nccl_logs: list[str] | None = None

    @functools.cached_property
    def launches(self) -> list[Launch]:
        """Every kernel launch in the trace, in launch order (trace_events.launches), read
        once: a ResNet-50 step's 13,000 launches take a second or two."""
        return launches(self.trace) if self.trace else []

    @functools.cached_property
    def optimizer_steps(self) -> list[float]:
        """Where the trace's optimizer steps end (trace_events.optimizer_steps), read once:
        whether pass 2 may rotate the program is asked before the plan and after it."""
        return optimizer_steps(self.trace) if self.trace else []


def ncu_executable() -> str:
    try:
        return ncu.ncu_path()
    except ncu.CountersUnavailable:
        raise RooflintError("rooflint profile needs Nsight Compute: ncu is not on PATH "
                            "(install Nsight Compute, or add its directory to PATH)") from None


def program_tail(program: str, log: str) -> str:
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
    said_at: float = field(default_factory=time.monotonic)
    # The pass is stopped (PassTooLong) once it has run this long, for the reason ``over``.
    limit_s: float | None = None
    over: str = ""
    # Past this long, the progress says once that the pass runs slow, and ``slow`` why.
    slow_after_s: float | None = None
    slow: str = ""
    # Set where the pass is one of several run together (a job's ranks attached at once)
    # and another has failed or been interrupted: this one stops at its next tick too.
    abandoned: threading.Event | None = None

    def wait(self, until_done: Callable[[float], T]) -> T:
        """``until_done(timeout)``, called again after each subprocess.TimeoutExpired."""
        while True:
            try:
                return until_done(PROGRESS_EVERY_S)
            except subprocess.TimeoutExpired:
                self.tick()

    def tick(self) -> None:
        """Says how long the pass has run, if it last said so (or began) PROGRESS_EVERY_S
        ago or more: for a pass made of short steps (pass 2 attaching again and again to
        a program not yet attachable), which ``wait`` alone would never interrupt."""
        now = time.monotonic()
        if self.abandoned is not None and self.abandoned.is_set():
            raise PassTooLong(f"{self.step} stopped: a pass run beside it ended")
        if self.limit_s is not None and now - self.began > self.limit_s:
            raise PassTooLong(f"{self.step} stopped after {now - self.began:.0f} s: "
                              f"{self.over}")
        if now - self.said_at >= PROGRESS_EVERY_S:
            self.say(f"{self.step}: {now - self.began:.0f} s so far{self._slow_words(now)}")
            self.said_at = now

    def _slow_words(self, now: float) -> str:
        """``, past 3x ...: why``, the first time the pass has run past slow_after_s."""
        if self.slow_after_s is None or now - self.began <= self.slow_after_s:
            return ""
        self.slow_after_s = None
        return f", {self.slow}"


class PassTooLong(RooflintError):
    """A pass stopped at its PassProgress.limit_s; its program's processes are killed."""


class NothingProfiled(RooflintError):
    """ncu ran the program to its end and profiled no launch."""


# What every pass sets in the program's environment, unless the user set it. JAX takes 75 %
# of the GPU's memory when it starts, and Nsight Compute saves and restores all of it
# around each profiled launch: a JAX program's pass 2 had profiled 4 launches in 130 s on
# an H100. Allocating as it goes, it launches the same kernels. Triton's autotuner keeps
# what it picked in Triton's cache (a file beside the compiled kernels, read only where
# this is set): pass 2 then launches the configs pass 1 timed, not another tuning's
# winners (two runs of one program picked different configs for one of its two shapes),
# and profiles no trials.
PROGRAM_DEFAULTS = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TRITON_CACHE_AUTOTUNING": "1"}


def program_environment() -> dict[str, str]:
    """rooflint's environment, with PROGRAM_DEFAULTS where the user set none of them."""
    return {**PROGRAM_DEFAULTS, **os.environ}


class Finished(subprocess.CompletedProcess):
    """A finished pass's program, with the id its process had (records name their
    process by it)."""

    def __init__(self, args: list[str], returncode: int, stdout: str, stderr: str, pid: int):
        super().__init__(args, returncode, stdout, stderr)
        self.pid = pid


def output_of(args: list[str], progress: PassProgress,
              environment: dict[str, str] | None = None) -> Finished:
    """subprocess.run(args, capture_output=True, text=True), saying how long a long pass
    has run (communicate loses no output across its timeouts). It runs in a process group
    of its own, killed whole (a launcher's ranks outlive the launcher) when rooflint is
    interrupted or the pass reaches its limit. ``environment`` is added to the program's. One
    that cannot be started (missing, not executable) is a RooflintError naming it."""
    try:
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, errors="replace", start_new_session=True,
                                   env={**program_environment(), **(environment or {})})
    except OSError as exc:
        raise RooflintError(f"cannot start {Path(args[0]).name}: {exc.strerror or exc}") \
            from None
    with process:
        try:
            stdout, stderr = progress.wait(lambda seconds: process.communicate(timeout=seconds))
        except BaseException:
            stop(process)
            raise
    return Finished(args, process.returncode, stdout, stderr, process.pid)


def stop(process: subprocess.Popen) -> None:
    """Kill a waiting program, its ncu and whatever of theirs outlived them, and wait for
    them to be gone: ncu's launcher is reaped at once, but the program it started may still
    hold the GPU's memory (a JAX program timed out under `timeout`: the command after it
    found the GPU full), and a program that ended may leave workers behind
    (torch.compile's). Its process group, and every process descended from it: ``ncu
    --mode launch`` starts a session of its own, so a torchrun job's ranks, each under its
    own ncu, are in no group of the launcher's (four FSDP2 ranks stopped at pass 2's limit
    were left running, holding their GPUs, after rooflint had ended). The descendants are
    found before the kill (once their parents are gone, they are init's), each stopped as
    it is found, so that none starts another meanwhile."""
    tree = _stopped_tree(process.pid)
    for pid in tree:
        _signal(pid, signal.SIGKILL)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    _wait_while_running(process.pid, tree)


def _stopped_tree(pid: int) -> frozenset[int]:
    """``pid`` and every process descended from it, each sent SIGSTOP, found again until
    no new one appears: a process stopped mid-fork leaves its child to the next scan, its
    parent still there to link it (a stand-in rank started after one scan had escaped)."""
    stopped: set[int] = set()
    found = {pid}
    while found - stopped:
        for new in found - stopped:
            _signal(new, signal.SIGSTOP)
        stopped |= found
        found = {pid} | _descendants(pid)
    return frozenset(stopped)


def _signal(pid: int, sent: signal.Signals) -> None:
    try:
        os.kill(pid, sent)
    except (ProcessLookupError, PermissionError):
        pass                         # gone meanwhile, or not ours


# How long a stopped group may take to exit (a program holding tens of GB of GPU memory
# takes about a second to give it back).
GROUP_EXIT_S = 10.0


def _wait_while_running(group: int, tree: frozenset[int] = frozenset()) -> None:
    """Until no process of ``group`` or ``tree`` runs (zombies, whose memory is freed,
    count as gone), or GROUP_EXIT_S: Linux's /proc; elsewhere, nothing to wait on."""
    deadline = time.monotonic() + GROUP_EXIT_S
    while _running_in(group, tree) and time.monotonic() < deadline:
        time.sleep(0.05)


@dataclass(frozen=True)
class _Process:
    """A line of /proc/PID/stat, the fields a stop needs."""

    pid: int
    state: str
    parent: int
    group: int


def _processes() -> list[_Process]:
    """Every process /proc shows (none where there is no /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            found.append(_Process(int(stat.parent.name), fields[0], int(fields[1]),
                                  int(fields[2])))
        except (OSError, IndexError, ValueError):
            continue                 # gone meanwhile, or not readable
    return found


def _descendants(pid: int) -> frozenset[int]:
    """The processes descended from ``pid``, whatever their group or session."""
    children: dict[int, list[int]] = {}
    for p in _processes():
        children.setdefault(p.parent, []).append(p.pid)
    found, pending = set(), [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return frozenset(found)


def _running_in(group: int, tree: frozenset[int] = frozenset()) -> bool:
    return any(p.state != "Z" and (p.group == group or p.pid in tree)
               for p in _processes())


def command_failed(done: subprocess.CompletedProcess) -> RooflintError:
    """The program's non-zero exit, in its own last words."""
    return RooflintError(f"the command failed (exit {done.returncode}): "
                         f"{program_tail(done.stdout + done.stderr, '')}")


# What ncu says when the program it is to attach to has not reached its first CUDA call:
# ncu says the program waits as it starts it, but it can be attached only from that call
# on, and a program whose work after that call is short can end pass 1 first (a training
# step's pass 2 ended at once in 2 of 8 profiles on an H100: its early start imports
# TorchDynamo too, beside pass 1).
NOT_ATTACHABLE = "No attachable process found"


class NotAttachable(RooflintError):
    """ncu found no program to attach to (NOT_ATTACHABLE)."""


def run_ncu(args: list[str], command: list[str], logs: Path | None, name: str,
            progress: PassProgress, program_output: Path | None = None,
            program: subprocess.Popen | None = None, ending: Ending | None = None) -> Pass:
    """ncu ARGS COMMAND, its CSV kept in ``logs`` (or a temporary folder); one line saying
    why for every failure: no ncu, no permission, the program failing, nothing profiled.
    When ncu attaches to a waiting ``program``, that program's exit and output count. With
    an ``ending``, ncu writes a report instead, saying each profiled launch as it goes, and
    the program is ended where the ending says (_ended_early); the report is then printed
    as the same CSV."""
    with tempfile.TemporaryDirectory(prefix="rooflint-profile-") as scratch:
        log = (logs or Path(scratch)) / name
        began = time.perf_counter()
        if ending is None:
            done = output_of([ncu_executable(), *args, *ncu.CSV_OUTPUT, "--log-file", str(log),
                              *command], progress)
        else:
            report = Path(scratch) / "pass"
            done = _ended_early([ncu_executable(), *args, "-o", str(report), *command],
                                progress, ending, program)
        if program is not None:
            done.returncode = done.returncode or progress.wait(
                lambda seconds: program.wait(timeout=seconds))
            done.stdout += program_output.read_text(errors="replace")
        if ending is not None and ending.ended:
            done.returncode = 0       # the program's exit is the kill's
        if ending is not None and report.with_suffix(".ncu-rep").exists():
            log.write_text(_printed(report.with_suffix(".ncu-rep")))
        wall = time.perf_counter() - began
        text = log.read_text(errors="replace") if log.exists() else ""
    output = f"{text}\n{done.stdout}\n{done.stderr}"
    if "ERR_NVGPUCTRPERM" in output or "LibraryNotLoaded" in output:
        raise RooflintError(f"ncu cannot profile here: {ncu.failure_reason(output)}")
    if done.returncode != 0 and NOT_ATTACHABLE in output:
        raise NotAttachable(f"ncu could attach to no program: {ncu.failure_reason(output)}")
    if done.returncode != 0:
        raise RooflintError(f"the command failed under ncu (exit {done.returncode}): "
                            f"{program_tail(done.stdout + done.stderr, text)}")
    rows = ncu.parse_rows(text)
    if not rows:
        raise NothingProfiled(f"{' '.join(command) or 'the program'} launched no CUDA kernel "
                            f"that ncu saw ({ncu.failure_reason(output)}); check --nvtx and "
                            f"--kernel")
    if ending is not None and ending.ended:
        progress.say(f"{progress.step}: its {ending.seen} launches profiled "
                     f"{ending.ended_at_s:.0f} s in, the program was ended there (pass 1 ran it "
                     f"{ending.after_s:.0f} s more, to its end)")
    return Pass(text, wall, processes=processes_in(rows))


# What ncu says in a report's run: each launch it profiles, once profiled, and the process
# it profiles (the CSV to a log says neither as it goes).
PROFILED_LINE = re.compile(r'^==PROF== Profiling "(?P<name>.*)"')
CONNECTED_LINE = re.compile(r"==PROF== Connected to process (?P<pid>\d+)")


@dataclass
class Ending:
    """Where pass 2 ends its program (judge/kernel_choice.EarlyEnd), read off ncu's lines:
    once it has profiled launches of ``functions`` in that order, the process it profiles
    is killed. At the first line that differs (another kernel, another order: two runs of
    one program need not launch alike) it is off, and the program runs to its end."""

    functions: tuple[str, ...]
    after_s: float                   # how much longer pass 1's program ran
    seen: int = 0
    pid: int | None = None
    off: bool = False
    ended_at_s: float | None = None  # when the program was ended, from ncu's start

    @property
    def ended(self) -> bool:
        return self.ended_at_s is not None

    def read(self, line: str) -> bool:
        """Whether, with ``line`` read, the program can be ended now."""
        connected = CONNECTED_LINE.search(line)
        if connected and self.pid is None:     # ncu's own line comes before the program's
            self.pid = int(connected["pid"])
        profiled = PROFILED_LINE.match(line)
        if profiled is None or self.off or self.ended:
            return False
        if self.seen == len(self.functions) or \
                function_name(profiled["name"]) != self.functions[self.seen]:
            self.off = True
            return False
        self.seen += 1
        return self.seen == len(self.functions) and self.pid is not None


def _ended_early(args: list[str], progress: PassProgress, ending: Ending,
                 program: subprocess.Popen | None = None) -> Finished:
    """output_of(args), ncu's lines read as they come (stderr with stdout), the program
    it profiles killed where ``ending`` says: only a process of the session ncu or the
    waiting ``program`` leads (both are started in sessions of their own). Launched by ncu,
    the program writes to the same lines, and a line it prints ("Connected to process 1")
    must not name what is killed."""
    try:
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace", start_new_session=True,
                                   env=program_environment())
    except OSError as exc:
        raise RooflintError(f"cannot start {Path(args[0]).name}: {exc.strerror or exc}") \
            from None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_lines_of, args=(process.stdout, lines), daemon=True)
    began, said = time.monotonic(), []
    with process:
        try:
            reader.start()
            for line in iter(lambda: _next_line(lines, progress), None):
                said.append(line)
                if ending.read(line):
                    ending.off = not _killed(ending.pid, {process.pid, program and program.pid})
                    if not ending.off:
                        ending.ended_at_s = time.monotonic() - began
            process.wait()
        except BaseException:
            stop(process)
            raise
    return Finished(args, process.returncode, "".join(said), "", process.pid)


def _lines_of(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _next_line(lines: queue.Queue, progress: PassProgress) -> str | None:
    """The next of ncu's lines (None at its end), saying how long the pass has run meanwhile."""
    while True:
        try:
            return lines.get(timeout=PROGRESS_EVERY_S)
        except queue.Empty:
            progress.tick()


def _killed(pid: int, sessions: set[int | None]) -> bool:
    """Whether ``pid``, a process of one of ``sessions``, was killed (or had ended)."""
    try:
        if os.getsid(pid) not in sessions:
            return False
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass                          # ended meanwhile
    except PermissionError:
        return False
    return True


def _printed(report: Path) -> str:
    """A report as the CSV a run prints to its log (its launches' raw pages, in base units,
    names demangled)."""
    done = subprocess.run([ncu_executable(), "--import", str(report), *ncu.CSV_OUTPUT,
                           *ncu.DEMANGLED_NAMES], capture_output=True, text=True, errors="replace")
    return done.stdout


def processes_in(rows: list[dict]) -> int:
    """How many processes launched the kernels of an ncu log."""
    return len({row.get(PROCESS) for row in rows})
