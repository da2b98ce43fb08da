"""Pass 2's program started while pass 1 runs, to save its start-up time.

Pass 2's program is started while pass 1 runs, under ``ncu --mode launch`` and for its own
process only: it gets through its start-up (a PyTorch program's imports and set-up before
its first CUDA call) and waits at its first CUDA call, before touching the GPU, until pass 1
is done and ``ncu --mode attach`` profiles it (program.py's pass 2 by attaching). That is
sound when the program's kernels all run in that one process, which pass 1 shows
(``alone``); otherwise (a shell script around the real program, workers that launch kernels)
a child may have run on the GPU beside pass 1, so the early start is stopped and pass 1 is
taken again, alone, before an ordinary pass 2. Only the program's own process waits: ncu
would suspend its children too, and nobody attaches to them (torch.compile's compile workers
then hang the program at exit).

A torchrun job's pass 2 is started early too (started_early_job), each rank under its own
``ncu --mode launch`` (rank_launch.py) on ports of its own, where torchrun's rendezvous
cannot meet pass 1's (``--standalone``: a free port each): pass 1 is the ranks' traces, so
which processes ran kernels is known, and a rank that never said it waits runs nothing
before pass 2 either way. Under ``ncu --mode launch`` around torchrun only the launcher
waits, and an attach profiles none of its ranks (Nsight Compute 2025.3).
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from rooflint.common.errors import RooflintError
from rooflint.measure.pass_runner import Pass, ncu_executable, program_environment, stop


@dataclass
class Waiting:
    """Pass 2's program under ``ncu --mode launch``: started, to wait for the profiler."""

    process: subprocess.Popen
    port: int                      # a job's: its first rank's, each next PORTS further
    output: Path                   # the program's (and ncu's) stdout and stderr
    ranks: int = 1                 # the processes that wait, one a rank for a job

    @property
    def ports(self) -> list[int]:
        """Where each waiting process is attached, by its (local) rank."""
        return [self.port + PORTS * rank for rank in range(self.ranks)]


WAITING_LINE = "Waiting for profiler to attach"
# ncu 2025.3 finds no waiting program with --max-connections 1 (the launcher binds the
# first port of the range, the attacher then finds nothing); with two it does.
PORTS = 2
# How a waiting process is started under ncu (its ports after --port): for its own process
# only, so that its children run (nobody attaches to them).
LAUNCH = ("--mode", "launch", "--target-processes", "application-only", "--max-connections",
          str(PORTS))


@contextmanager
def started_early(command: list[str]) -> Iterator[Waiting]:
    """``command`` started for pass 2, its own process to wait at its first CUDA call; on
    the way out (pass 2 done, pass 1 failing, Ctrl-C) killed if still running."""
    port = _free_ports(PORTS)
    with _started([ncu_executable(), *LAUNCH, "--port", str(port), *command], port,
                  1) as waiting:
        yield waiting


@contextmanager
def started_early_job(ranks_command: Callable[[int], list[str]], ranks: int
                      ) -> Iterator[Waiting]:
    """A launcher's job started for pass 2, each of its ``ranks`` to wait at its first CUDA
    call under its own ncu: ``ranks_command(port)`` is the launcher's command with each
    rank run through rank_launch.py from that port; killed on the way out if running."""
    port = _free_ports(PORTS * ranks)
    with _started(ranks_command(port), port, ranks) as waiting:
        yield waiting


@contextmanager
def _started(command: list[str], port: int, ranks: int) -> Iterator[Waiting]:
    with tempfile.TemporaryDirectory(prefix="rooflint-pass2-") as scratch:
        output = Path(scratch) / "output.txt"
        with output.open("w") as sink:
            try:
                process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                           start_new_session=True, env=program_environment())
            except OSError as exc:
                raise RooflintError(f"cannot start {Path(command[0]).name}: "
                                    f"{exc.strerror or exc}") from None
        try:
            yield Waiting(process, port, output, ranks)
        finally:
            stop(process)


# How long the end of pass 1 waits for the early-started program to say it waits. ncu
# says so as the program starts (0.2 s on an H200), the rotation's program once it has
# imported torch (rotation.StartedRotation.waits), so only a pass 1 faster than that start
# waits at all, and a program that has exited is not waited for.
WAIT_FOR_LINE_S = 5.0


def alone(waiting: Waiting, first: Pass) -> bool:
    """Whether the early start was sound: ncu started the waiting program (whose first
    CUDA call then waits for pass 2, so it ran nothing on the GPU; it may not have reached
    that call yet, program._attach), and pass 1 saw every kernel launched by one process,
    the one rooflint started: a process it starts (torchrun's rank) is not held, so it ran
    beside pass 1, and pass 2 would attach to a process that launches nothing."""
    return first.processes == 1 and first.own_process and _says_it_waits(waiting)


def job_alone(waiting: Waiting, first: Pass) -> bool:
    """Whether a job's early start was sound: pass 1 saw kernels of as many processes as
    ranks wait, and every rank's ncu said it waits (its rank then ran nothing on the GPU)."""
    return first.processes == waiting.ranks and _says_it_waits(waiting)


def _says_it_waits(waiting: Waiting) -> bool:
    """Whether ncu has said each waiting process waits for the profiler, within
    WAIT_FOR_LINE_S."""
    deadline = time.monotonic() + WAIT_FOR_LINE_S
    while waiting.output.read_text(errors="replace").count(WAITING_LINE) < waiting.ranks:
        if waiting.process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _free_ports(count: int) -> int:
    """The first of ``count`` consecutive TCP ports nothing listens on now, for the waiting
    programs alone: ncu's default range is shared by every ncu on the machine, and an
    attach there could find another's program."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            base = first.getsockname()[1]
            if base + count - 1 <= 65535 and all(_is_free(base + n) for n in range(1, count)):
                return base
    raise NoFreePorts(f"no {count} free consecutive TCP ports on 127.0.0.1 for ncu to "
                      f"attach by")


class NoFreePorts(RooflintError):
    """No run of free ports for the waiting processes: said before anything started."""


def _is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
