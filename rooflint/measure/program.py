"""Run a user's program for the two passes of `rooflint profile`.

Pass 1 times every kernel launch, so the kernels can be ranked by total GPU time: a
Python program whose interpreter has PyTorch runs under PyTorch's profiler
(trace_bootstrap.py: CUPTI's activity records at the program's own speed, with the
operators and Python functions behind each launch), or, where its first GPU library is
CuPy's, JAX's or another but PyTorch's or Triton's, under CUPTI's recorder
(kernel_trace.py) once rooflint has built it: no torch imported into the program; any other
program (a C++ binary, Python without torch) with CUPTI's recorder alone, as fast; one that
neither can serve (an NVTX range --nvtx names that the profiler cannot see, no CUPTI to
build against), under Nsight Compute (one metric, ``gpu__time_duration``, no replay,
every launch serialised). Under the profiler or the recorder, NCCL logs the program's
collective calls, their sizes (nccl_logs.py). Pass 2 runs the program
again under Nsight Compute and collects rooflint's counter list on the first launch of
each launch configuration (``--filter-mode per-launch-config``) of the chosen kernels,
selected by patterns on their mangled names (judge/pass2_patterns.mangled_patterns),
so each is profiled once, wherever it falls in the launch order: two runs of
one program need not launch in the same order (a GPT-2 training step's did not), and the
analysis matches pass 2's launches to pass 1's kernels by what they are, not where they
are. A program's launch configurations are tens where its launches are thousands. (ncu
tells configurations apart by the name at ``--kernel-name-base``: by mangled name, two
kernels at one grid, block, register count and shared memory are two configurations; by
demangled name, two ``extern "C"`` kernels are one, H100.)

Pass 2's program is started while pass 1 runs and waits for pass 2 to attach to it, when
that is sound (early_start.py), a Python program with TorchDynamo imported with its torch
(pass_two_command); else pass 1 is taken again, alone, before an ordinary pass 2. So is a
``torchrun --standalone`` job's, each rank waiting under its own ncu (_early_job). Each pass
runs through pass_runner.py (progress, failures, the Pass it gives back).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

from rooflint.common.errors import RooflintError
from rooflint.common.units import format_bytes
from rooflint.measure import nccl_logs, ncu, rotation
from rooflint.measure.kernel_trace import (NCCL_FOLDER, RECORDS_FOLDER, KernelTraceUnavailable,
                                          has_records, kernel_trace_pass, recorded_pass,
                                          recorder_if_built)
from rooflint.measure.early_start import (LAUNCH, PORTS, WAIT_FOR_LINE_S, NoFreePorts, Waiting,
                                         alone, job_alone, started_early, started_early_job,
                                         stop)
from rooflint.measure.trace_bootstrap import (PASS_TWO, NO_PROFILER, PID, RECORDER,
                                             STARTING_IMPORTS)
from rooflint.measure.pass_runner import (Ending, NotAttachable, NothingProfiled, Pass,
                                          PassProgress, PassTooLong, Stopped, Timer,
                                          command_failed, ncu_executable, output_of,
                                          processes_in, program_tail, run_ncu)
from rooflint.formats.jsonfile import parse_large
from rooflint.judge.kernel_choice import EarlyEnd
from rooflint.judge.kernel_times import Identity
from rooflint.formats.ncu_log import joined
from rooflint.formats.ranks import merged
from rooflint.formats.trace_events import LINE_RANGE, stopped_at_step

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
    stop_after: int = 0            # a Python program ended at its first optimizer's Nth
    #                                step, in both passes (0: at its own end; trace_bootstrap)


@dataclass
class Choice:
    """What pass 2 profiles: launches of the kernels whose mangled names these patterns
    match, with the tensor-path FLOPs of these precisions only (None: all of them; each
    costs up to three replay passes of every profiled launch, and a tensor pipe busy in
    another shows in ncu.TENSOR_PIPE), by the names the GPU's chip lists (``listed``:
    ncu.listed_metrics; None: Hopper's), on these GPUs only (none: every GPU; a launcher's
    ranks, judge/pass2_patterns.profiled_devices)."""

    patterns: list[str]
    tensor_precisions: frozenset[str] | None = None
    skip: int = 0                  # the program's first launches, left out (launches_to_skip)
    listed: frozenset[str] | None = None
    devices: tuple[int, ...] = ()
    early_end: EarlyEnd | None = None   # where pass 2 can end its program (one process's)
    expected_s: float = 0.0        # what its launches should take (kernel_choice.pass2_estimate_s)
    # the chosen kernels, each with its pattern (pass2_patterns.kernel_patterns: the rotation
    # ranges the first launch of each)
    kernels: Mapping[Identity, str] = field(default_factory=dict)

    @property
    def ending(self) -> Ending | None:
        """A fresh watch for each run of pass 2 of where it ends its program."""
        return Ending(self.early_end.functions, self.early_end.after_s) \
            if self.early_end else None

    @property
    def metrics(self) -> list[str]:
        return ncu.metrics_for(self.tensor_precisions, self.listed)

    @property
    def selection(self) -> list[str]:
        return selection(self.patterns, self.skip, self.devices)


def two_passes(command: list[str], filters: Filters, logs: Path | None,
               plan: Callable[[Pass], Choice], say: Callable[[str], None]
               ) -> tuple[Pass, Pass]:
    """Pass 1, then pass 2 on the kernels ``plan`` chooses from it, by rotation where it is
    asked for and the program can carry it (_rotated), else under Nsight Compute, pass 2's
    program started early when that is sound (see early_start.py). A
    pass 2 that fails or is interrupted is a Pass that says why (see _second): what pass 1
    measured is kept. A launcher's program (starts_its_program) is started early only as
    torchrun's job whose ranks each wait under their own ncu (_early_job): under one ncu
    only the launcher would wait, and its ranks would run beside pass 1."""
    asked = rotation.asked()                 # a bad value said before anything runs
    if not starts_its_program(command):
        rotating = asked is not rotation.PassTwo.NCU and is_python(command) and \
            _rotation_engine(say, asked)
        found = (_early_rotation if rotating else _early_ncu)(command, filters, logs, plan, say)
        if found:
            return found
        say("pass 1 again, alone: this program's kernels do not all run in its own process, "
            "so its early-started second run may have overlapped the first")
    job = TorchrunCommand.of(command) if starts_its_program(command) else None
    ranks = job.ranks_here if job else None
    if job and ranks:
        try:
            return _early_job(command, job, ranks, filters, logs, plan, say)
        except NoFreePorts as exc:        # before anything ran: pass 2 after pass 1
            say(f"pass 2 after pass 1: {exc}")
    first = every_process_pass(command, filters, logs, say)
    return first, _ordinary_second(command, first, plan(first), logs, say, filters.stop_after)


def _early_ncu(command: list[str], filters: Filters, logs: Path | None,
               plan: Callable[[Pass], Choice], say: Callable[[str], None]
               ) -> tuple[Pass, Pass] | None:
    """Pass 1 while pass 2's program waits under Nsight Compute at its first CUDA call, then
    pass 2 attached to it; None where the early start was not sound (early_start.alone)."""
    with started_early(pass_two_command(command, filters.stop_after)) as waiting:
        first = timing_pass(command, filters, logs, say)
        if not alone(waiting, first):
            return None
        choice = plan(first)
        if not choice.patterns:        # every chosen kernel's counters are known
            return first, Pass("", 0.0)
        return first, _second(lambda: _attach(waiting, choice, logs,
                                              pass_two_progress(first, choice, say)),
                              attached=True)


def _early_rotation(command: list[str], filters: Filters, logs: Path | None,
                    plan: Callable[[Pass], Choice], say: Callable[[str], None]
                    ) -> tuple[Pass, Pass] | None:
    """Pass 1 while pass 2's program waits twice: for the rotation right after its first
    import of a GPU library (rotation.started_rotation), and under Nsight Compute at its
    first CUDA call (_early_ncu's). Once pass 1 is over, the rotation's program may run on
    to its first optimizer step's end while pass 1 is read (StartedRotation.go), where the
    program could carry the rotation; then pass 2 by rotation where it carries it
    (_rotated), else by attaching Nsight Compute, the other killed first. Neither has
    touched the GPU while pass 1 ran. None where the early start was not sound
    (early_start.alone), or the program started for the rotation does not say it waits
    (it may have run on the GPU beside pass 1: a program that launches kernels through no
    library the bootstrap waits at)."""
    with rotation.started_rotation(command) as started, \
            started_early(pass_two_command(command, filters.stop_after)) as waiting:
        first = timing_pass(command, filters, logs, say)
        if not alone(waiting, first) or not started.waits(WAIT_FOR_LINE_S):
            return None
        if _rotatable(command, first):
            started.go()
        choice = plan(first)
        if not choice.patterns:
            return first, Pass("", 0.0)
        rotated = _rotated(command, first, choice, logs, say, started)
        stop(started.process)
        return first, rotated or _second(lambda: _attach(
            waiting, choice, logs, pass_two_progress(first, choice, say)), attached=True)


def _rotatable(command: list[str], first: Pass) -> bool:
    """Whether pass 2 may be by rotation, as far as pass 1 says before its plan: not asked
    of Nsight Compute, and a Python program of its own whose trace holds optimizer steps."""
    return rotation.asked() is not rotation.PassTwo.NCU and first.trace is not None and \
        is_python(command) and not starts_its_program(command) and \
        bool(first.optimizer_steps)


def _rotation_engine(say: Callable[[str], None], asked: rotation.PassTwo) -> bool:
    """Whether the rotation's engine is built (once per toolkit, said as it is); where it
    cannot be, why is said only where the rotation was asked for: by default any Python
    program would be told of an engine that only a training loop needs."""
    try:
        rotation.engine_library(say)
    except rotation.RotationUnavailable as exc:
        if asked is rotation.PassTwo.ROTATION:
            say(f"pass 2: no rotation ({exc}); Nsight Compute instead")
        return False
    return True


def _ordinary_second(command: list[str], first: Pass, choice: Choice, logs: Path | None,
                     say: Callable[[str], None], steps: int = 0) -> Pass:
    """Pass 2 as a run of its own, under ncu from its start (a Python program through
    the bootstrap, ended at the step pass 1's was)."""
    if not choice.patterns:
        return Pass("", 0.0)
    return _rotated(command, first, choice, logs, say) or \
        _second(lambda: counter_pass(pass_two_command(command, steps), choice, logs,
                                     pass_two_progress(first, choice, say)))


def _rotated(command: list[str], first: Pass, choice: Choice, logs: Path | None,
             say: Callable[[str], None],
             started: rotation.StartedRotation | None = None) -> Pass | None:
    """Pass 2 by rotation (measure/rotation.py; its program ``started`` early, else now)
    where the program can carry it (a Python program of its own, whose pass 1 traced
    optimizer steps that launch the same kernels one after another) and it is asked for,
    or, by default, should cost less than Nsight Compute's pass 2 on the ``choice``; None
    otherwise, or where it measured nothing (said: Nsight Compute's pass 2 follows)."""
    if not _rotatable(command, first):
        return None
    asked = rotation.asked()
    every, ends = first.launches, first.optimizer_steps
    passes = rotation.passes_for(choice.tensor_precisions)
    steps = rotation.rotation_steps(every, ends, passes, choice.kernels)
    if steps is None:
        why = (f"pass 1 saw {len(ends)} torch.optim steps" if len(ends) <= passes
               else "the program's optimizer steps do not launch the same kernels in the "
                    f"same order {passes} steps in a row, the chosen ones among them")
        if ends:                             # a training program; any other is not told
            say(f"pass 2: no rotation ({why}: it takes a pass a step, {passes} or more); "
                f"Nsight Compute instead")
        return None
    if asked is rotation.PassTwo.DEFAULT and choice.expected_s < steps.expected_s:
        say(f"pass 2: Nsight Compute's, its launches about {choice.expected_s:.1f} s "
            f"against {steps.expected_s:.1f} s for the rotation's {len(steps.chosen)} ranges "
            f"a step")
        return None
    say(f"pass 2: counters by rotation instead, on the first launch in a step of each "
        f"kernel ({len(steps.chosen)} of the step's {steps.launches}), a pass a "
        f"step from the program's step {steps.warm_up + 1} ({passes} passes): its ranges "
        f"about {steps.expected_s:.1f} s beside the program's run")
    try:                   # interrupted or too long: pass 1 is kept, as for Nsight Compute's
        return _second(lambda: rotation.rotation_pass(
            command, choice.metrics, steps, rotation.resources_of(every),
            logs / COUNTERS_LOG if logs else None, pass_two_progress(first, choice, say),
            started))
    except rotation.RotationUnavailable as exc:
        say(f"pass 2: the rotation measured nothing ({exc}); Nsight Compute instead")
        return None


def _early_job(command: list[str], job: TorchrunCommand, ranks: int, filters: Filters,
               logs: Path | None, plan: Callable[[Pass], Choice], say: Callable[[str], None]
               ) -> tuple[Pass, Pass]:
    """Pass 1 of torchrun's job while its pass 2 starts, each rank waiting under its own
    ncu (early_start.started_early_job); where pass 1 did not see as many processes as
    ranks wait, or a rank never said it waits, the early job is stopped and pass 2 runs on
    its own (nothing of it ran on the GPU: a rank waits at its first CUDA call)."""
    with started_early_job(lambda port: ranks_waiting_for_ncu(job, port, filters.stop_after),
                           ranks) as waiting:
        first = every_process_pass(command, filters, logs, say)
        choice = plan(first)
        if job_alone(waiting, first) and choice.patterns:
            return first, _second(lambda: _attach_ranks(waiting, command, first, choice, logs,
                                                        say), attached=True)
        stop(waiting.process)
    return first, _ordinary_second(command, first, choice, logs, say, filters.stop_after)


def pass_two_progress(first: Pass, choice: Choice, say: Callable[[str], None]
                      ) -> PassProgress:
    """Pass 2's progress, with a limit where pass 1 saw kernels of several processes, or
    ended its program at an optimizer step (profile's --stop-after): a training run of
    hours whose pass 2 went on past that step would be profiled for hours. The limit
    counts the ``choice``'s launches too, whose cost pass 1's time does not hold."""
    limit_s = (SEVERAL_PROCESSES_LIMIT * first.wall_s + SEVERAL_PROCESSES_MORE_S
               + choice.expected_s)
    over = f"more than {SEVERAL_PROCESSES_LIMIT}x pass 1's time: "
    expected_s = first.wall_s + choice.expected_s
    slow = PassProgress("pass 2", say, slow_after_s=SLOW_PASS_TWO * expected_s,
                        slow=f"past {SLOW_PASS_TWO}x the {expected_s:.0f} s that pass 1's run "
                             f"and its launches' estimate add up to: {SLOW_REPLAYS}")
    if first.processes > 1:
        return replace(
            slow, limit_s=limit_s,
            over=f"{over}the program's {first.processes} processes may wait on each other (a "
                 f"collective waits for its peers), which Nsight Compute, profiling one kernel "
                 f"at a time, never lets finish")
    step = stopped_at_step(first.trace) if first.trace else None
    if step:
        return replace(
            slow, limit_s=limit_s,
            over=f"{over}pass 1 ended the program after {step} optimizer steps "
                 f"(--stop-after), and pass 2's run has not ended")
    return slow


# Pass 2 of a program whose kernels ran in several processes (a launcher's ranks), or that
# pass 1 ended at an optimizer step, is stopped after this many times pass 1's time,
# SEVERAL_PROCESSES_MORE_S more and what its launches should take: ranks waiting on each
# other's collectives may never finish under Nsight Compute (a 2-rank DDP step, 21.7 s
# plain, had run 300 s when its user gave up; issue 49), and a training run that goes on
# past the step would run for hours. Pass 1's times are kept.
SEVERAL_PROCESSES_LIMIT = 5
SEVERAL_PROCESSES_MORE_S = 120.0
# Past this many times pass 1's time and its launches' estimate, pass 2's progress says
# once that it runs slow, and the likeliest why: pytorch/examples' imagenet on fake data
# had run 220 s after a pass 1 of 18 s (65 launches, "about 20 s"), each profiled launch
# taking 4.4 s while its DataLoader kept batches pinned (before pass 2 unpinned them,
# trace_bootstrap.DATALOADER_INIT; H200). The word language model's pass 2, which spent 88
# s on its 320,093 launches against a pass 1 of 34 s, is not slow by this.
SLOW_PASS_TWO = 3
SLOW_REPLAYS = ("Nsight Compute saves and restores the memory the program holds around each "
                "replay pass, pinned host memory too (docs/profiling.md#what-a-profile-costs)")


def _second(run: Callable[[], Pass], attached: bool = False) -> Pass:
    """Pass 2, or, when it fails or is interrupted, a Pass with no log whose ``stopped``
    says why: minutes of pass 1 are not thrown away for a crash or a Ctrl-C in pass 2.
    Only pass 2's own failures: ``plan``'s (pass 1's trace) are raised before it starts."""
    began = time.perf_counter()
    try:
        return run()
    except KeyboardInterrupt:
        stopped = Stopped("pass 2 was interrupted", interrupted=True)
    except PassTooLong as exc:
        stopped = Stopped(str(exc))
    except RooflintError as exc:
        stopped = Stopped(f"pass 2 failed: {exc}")
    return Pass("", time.perf_counter() - began, attached=attached, stopped=stopped)


def timing_pass(command: list[str], filters: Filters, logs: Path | None,
                say: Callable[[str], None]) -> Pass:
    """Pass 1: a Python program under PyTorch's profiler where it has one, any other under
    CUPTI's activity records (both at the program's own speed); else every launch under
    Nsight Compute, which also sees NVTX ranges neither of those sees (an --nvtx range not
    pushed through torch.cuda.nvtx)."""
    if is_python(command):
        traced = _torch_trace(command, filters, logs, say)
        if traced is not None:
            return traced
    return every_process_pass(command, filters, logs, say)


def every_process_pass(command: list[str], filters: Filters, logs: Path | None,
                       say: Callable[[str], None]) -> Pass:
    """Pass 1 of a program whose kernels may run in processes it starts (a launcher's
    ranks, a script's program): torchrun's ranks each under PyTorch's profiler, through
    the bootstrap (rank_trace_pass: their operators, lines and input shapes, as a program
    of one process gets them); else CUPTI's recorder, which the driver loads into every
    process, at the program's own speed; else Nsight Compute, which serialises every
    launch of every process, and sees NVTX ranges the recorder does not."""
    traced = rank_trace_pass(command, logs, say, filters.stop_after)
    if traced is not None and (not filters.nvtx or has_range(traced.trace, filters.nvtx)):
        return traced
    if not filters.nvtx:
        try:
            return kernel_trace_pass(command, logs / TRACE_LOG if logs else None, say)
        except KernelTraceUnavailable as exc:
            say(f"pass 1: {exc}: timing every launch with Nsight Compute instead")
    return duration_pass(command, filters, logs, say)


def _torch_trace(command: list[str], filters: Filters, logs: Path | None,
                 say: Callable[[str], None]) -> Pass | None:
    """The bootstrap's pass (PyTorch's profiler, or CUPTI's recorder for a program whose
    first GPU library is another: not with --nvtx, whose ranges its records do not hold),
    or None where it cannot serve (no PyTorch, a trace that is unreadable or lacks the
    --nvtx range, records that are), said when it ran."""
    recorder = None if filters.nvtx else recorder_if_built()   # its records hold no NVTX
    try:
        traced = trace_pass(command, logs, say, recorder, filters.stop_after)
    except (UnreadableTrace, KernelTraceUnavailable) as exc:
        say(f"{exc}: timing every launch another way")
        return None
    if traced is not None and filters.nvtx and not has_range(traced.trace, filters.nvtx):
        say(f"PyTorch's profiler saw no range {filters.nvtx!r} (only torch.cuda.nvtx "
            f"ranges reach it): timing every launch with Nsight Compute instead")
        return None
    return traced


# torchrun's options that take no value (the others take one, after "=" or as the next
# word), as torch.distributed.run's parser declares them; -m and --module make the training
# script a module, --no-python and --run-path run it other than as `python SCRIPT`.
TORCHRUN_FLAGS = frozenset({"--standalone", "--virtual-local-rank", "--virtual_local_rank"})
TORCHRUN_MODULE = frozenset({"-m", "--module"})
TORCHRUN_NOT_PYTHON = frozenset({"--no-python", "--no_python", "--run-path", "--run_path"})


@dataclass
class TorchrunCommand:
    """torchrun's command (or ``python -m torch.distributed.run``'s), read for running each
    rank through rooflint's own command: the launcher, its options as given (but ``-m``),
    the interpreter it runs its ranks under, and the script (or module) with its
    arguments."""

    launcher: list[str]
    options: list[str]
    python: list[str]
    module: bool
    script: list[str]

    @classmethod
    def of(cls, command: list[str]) -> TorchrunCommand | None:
        """None for any other launcher, for a training script that is not a Python file or
        module run as ``python`` would, or where the interpreter torchrun runs is not
        known."""
        if Path(command[0]).name == "torchrun":
            launcher, rest, python = command[:1], command[1:], interpreter_of(command[0])
        elif is_python(command) and command[1] == "-m" and LAUNCHER_MODULE.fullmatch(command[2]):
            launcher, rest, python = command[:3], command[3:], [command[0]]
        else:
            return None
        options, module, i = [], False, 0
        while i < len(rest) and rest[i].startswith("-"):
            flag = rest[i].split("=", 1)[0]
            if flag in TORCHRUN_NOT_PYTHON:
                return None
            if flag in TORCHRUN_MODULE:
                module = True
            else:
                takes = flag not in TORCHRUN_FLAGS and "=" not in rest[i]
                options += rest[i:i + 1 + takes]
                i += takes
            i += 1
        script = rest[i:]
        if python is None or not script or not (module or script[0].endswith(".py")):
            return None
        return cls(launcher, options, python, module, script)

    def each_rank(self, *runner: str) -> list[str]:
        """The launcher's command with each rank's command ``RUNNER... -- SCRIPT ARGS``."""
        return [*self.launcher, *self.options, "--no-python", *runner, "--",
                *(["-m"] if self.module else []), *self.script]

    @property
    def ranks_here(self) -> int | None:
        """How many ranks it starts on this host, where its options say so in a number and
        its rendezvous is on a port of its own (``--standalone``: one host, a free port,
        so a second run of the job beside the first cannot meet it); else None."""
        if "--standalone" not in self.options:
            return None
        for i, option in enumerate(self.options):
            flag, _, value = option.partition("=")
            if flag in ("--nproc_per_node", "--nproc-per-node"):
                value = value or (self.options[i + 1] if i + 1 < len(self.options) else "")
                return int(value) if value.isdigit() and int(value) > 0 else None
        return 1


def ranks_through_bootstrap(command: list[str], trace: str, steps: int = 0
                            ) -> list[str] | None:
    """torchrun's command (or ``python -m torch.distributed.run``'s) with each rank run
    through the bootstrap under PyTorch's profiler, writing its trace to ``trace`` (its pid
    for trace_bootstrap.PID), ended at its ``steps``-th optimizer step (0: its end):
    ``torchrun OPTIONS --no-python PYTHON BOOTSTRAP TRACE ... -- SCRIPT ARGS``. None where
    TorchrunCommand cannot read it."""
    job = TorchrunCommand.of(command)
    return job.each_rank(*job.python, str(BOOTSTRAP), trace, LINE_RANGE,
                         str(steps)) if job else None


def ranks_waiting_for_ncu(job: TorchrunCommand, port: int, steps: int = 0) -> list[str]:
    """The job with each rank under its own ``ncu --mode launch`` (rank_launch.py, from
    ``port``), running the rank's script through the bootstrap's pass 2 (which imports
    TorchDynamo while pass 1 runs and unpins its DataLoaders, as pass_two_command does, and
    ends the rank at its ``steps``-th optimizer step)."""
    return job.each_rank(*job.python, str(RANK_LAUNCH), str(port), str(PORTS),
                         ncu_executable(), *LAUNCH, "--", *job.python, str(BOOTSTRAP),
                         PASS_TWO, str(steps))


def interpreter_of(launcher: str) -> list[str] | None:
    """The interpreter a launcher script runs under, from its first line (``#!/usr/bin/env
    python3``: both words); None where it is not found or names none."""
    found = shutil.which(launcher)
    try:
        first = Path(found).read_bytes()[:256].split(b"\n", 1)[0].decode() if found else ""
    except (OSError, UnicodeDecodeError):
        return None
    words = first[2:].split() if first.startswith("#!") else []
    return words or None


def rank_trace_pass(command: list[str], logs: Path | None, say: Callable[[str], None],
                    steps: int = 0) -> Pass | None:
    """Pass 1 of torchrun's ranks, each under PyTorch's profiler (ranks_through_bootstrap),
    their traces merged into the job's (formats/ranks.merged), NCCL's logs of their calls
    kept; None where the command cannot be so run, or no rank wrote a trace (its
    PyTorch's profiler did not start: the program is then timed another way)."""
    with tempfile.TemporaryDirectory(prefix="rooflint-ranks-") as scratch:
        rewritten = ranks_through_bootstrap(command, str(Path(scratch) / f"trace.{PID}.json"),
                                            steps)
        if rewritten is None:
            return None
        nccl = Path(scratch) / NCCL_FOLDER
        began = time.perf_counter()
        done = output_of(rewritten, PassProgress("pass 1", say),
                         nccl_logs.log_environment(nccl))
        wall = time.perf_counter() - began
        if done.returncode != 0:
            raise command_failed(done)
        paths = sorted(Path(scratch).glob("trace.*.json"))
        if not paths:
            say("pass 1: no rank wrote PyTorch's trace: timing every launch another way")
            return None
        say_if_large(paths, say)
        try:
            traces = [_read_trace(path) for path in paths]
        except UnreadableTrace as exc:
            say(f"pass 1: a rank's {exc}: timing every launch another way")
            return None
        trace = merged(traces)
        if logs:
            (logs / TRACE_LOG).write_text(json.dumps(trace))
        calls = nccl_logs.logs_in(nccl, logs)
    return Pass("", wall, timer=Timer.torch, processes=len(traces), own_process=False,
                trace=trace, nccl_logs=calls)


def has_range(trace: dict | None, name: str) -> bool:
    """Whether the profiler's trace holds a range called ``name``."""
    return any(e.get("cat") == "user_annotation" and e.get("name") == name
               for e in (trace or {}).get("traceEvents", []) if isinstance(e, dict))


class UnreadableTrace(Exception):
    """PyTorch's profiler wrote a trace rooflint cannot read (its JSON export does not
    escape every name; a long program's trace can outgrow what rooflint holds)."""


PYTHON = re.compile(r"python[\d.]*")
# Commands whose kernels run in processes they start: launchers (one process a rank) and
# shells; and Python's module forms of PyTorch's launchers.
LAUNCHER = re.compile(r"torchrun|mpirun|mpiexec|srun|deepspeed|accelerate|horovodrun"
                      r"|(ba|z|da|k)?sh")
LAUNCHER_MODULE = re.compile(r"torch\.distributed\.(run|launch)")


def starts_its_program(command: list[str]) -> bool:
    """Whether ``command`` is a launcher or a shell (LAUNCHER, LAUNCHER_MODULE), whose
    program's kernels run in processes it starts."""
    if LAUNCHER.fullmatch(Path(command[0]).name):
        return True
    return is_python(command) and command[1] == "-m" and bool(
        LAUNCHER_MODULE.fullmatch(command[2]))


def is_python(command: list[str]) -> bool:
    """``python train.py ...``, ``python -m pkg ...`` or ``python -c CODE``: a program the
    bootstrap can start as the interpreter would (other interpreter options are not)."""
    if not PYTHON.fullmatch(Path(command[0]).name) or len(command) < 2:
        return False
    return command[1] in ("-m", "-c") and len(command) > 2 or not command[1].startswith("-")


BOOTSTRAP = Path(__file__).with_name("trace_bootstrap.py")
RANK_LAUNCH = Path(__file__).with_name("rank_launch.py")


def pass_two_command(command: list[str], steps: int = 0) -> list[str]:
    """Pass 2's command: a Python program started through the bootstrap, which imports
    TorchDynamo right after the program's torch (while pass 1 runs, where pass 2 is started
    early; else the program would import it on pass 2's clock:
    trace_bootstrap._import_dynamo), runs its DataLoaders unpinned (pinned batches make
    every replay pass slow: trace_bootstrap.DATALOADER_INIT) and ends it at its
    ``steps``-th optimizer step, as pass 1's was (0: at its own end); any other program as
    it is, a launcher's too (``python -m torch.distributed.run``: its ranks are its
    program, which the launcher starts itself)."""
    if is_python(command) and not starts_its_program(command):
        return [command[0], str(BOOTSTRAP), PASS_TWO, str(steps), "--", *command[1:]]
    return command


def trace_pass(command: list[str], logs: Path | None, say: Callable[[str], None],
               recorder: Path | None = None, steps: int = 0) -> Pass | None:
    """The program under PyTorch's profiler (see trace_bootstrap.py), ended at its first
    optimizer's ``steps``-th step (0: at its own end), or under CUPTI's ``recorder`` where
    one is offered and the program's first GPU library is not PyTorch's or Triton's; None
    if its interpreter has no PyTorch. Filters are applied to the trace afterwards."""
    with tempfile.TemporaryDirectory(prefix="rooflint-trace-") as scratch:
        trace = (logs or Path(scratch)) / TRACE_LOG
        records = Path(scratch) / "records"
        records.mkdir()
        offered = {RECORDER: str(recorder), RECORDS_FOLDER: str(records)} if recorder else {}
        nccl = Path(scratch) / NCCL_FOLDER
        began = time.perf_counter()
        done = output_of([command[0], str(BOOTSTRAP), str(trace), LINE_RANGE, str(steps), "--",
                          *command[1:]], PassProgress("pass 1", say),
                         {**offered, **nccl_logs.log_environment(nccl)})
        wall = time.perf_counter() - began
        if done.returncode == NO_PROFILER and not trace.exists():
            return None
        if done.returncode != 0:
            raise command_failed(done)
        if not trace.exists() and has_records(records):
            return recorded_pass(records, wall, logs / TRACE_LOG if logs else None, say,
                                 done.pid, nccl_logs.logs_in(nccl, logs))
        say_if_large([trace], say)
        document = _read_trace(trace)
        calls = nccl_logs.logs_in(nccl, logs)
    kernels = any(isinstance(e, dict) and e.get("cat") == "kernel"
                  for e in document.get("traceEvents", []))
    return Pass("", wall, timer=Timer.torch, processes=1 if kernels else 0, trace=document,
                nccl_logs=calls)


# The most trace rooflint reads (parsed, several times its size in memory). The compiled
# training step's is 12 MB for 2,000 launches; Triton's fused-softmax tutorial, a sweep of
# 98 sizes through do_bench, wrote 683 MB for about 600,000 (1.1 KB a launch) before
# do_bench's calls came to be recorded only at first. A trace's CPU operators take room
# too: attorch's regression example wrote 2.14 GiB for about 5,000 launches an epoch, its
# DataLoader's operators, before its batches came to be recorded only at first.
MAX_TRACE_BYTES = 1 << 30
# What Nsight Compute's pass 1 costs a launch, serialised (a GPT-2 step's 5,000 in 68 s, H100).
NCU_PASS1_S_PER_LAUNCH = 0.013
TRACE_BYTES_PER_LAUNCH = 1100


# Past this much trace, reading and analysing it takes a while, about READ_S_PER_MB a
# megabyte: the word language model's LSTM epoch (pytorch/examples) wrote 837 MB for its
# 320,093 launches, and its profile took 37.5 s from this line to pass 2's plan on an
# H200's host (each line stamped, 2026-11-30), 4 s more to judge pass 2's kernels; a 180
# MB copy of the training step's trace takes 14 s on a 2-core CPU. Said before, so that
# the wait is not silent and its cure is known.
LARGE_TRACE_BYTES = 100 << 20
READ_S_PER_MB = 0.05


def say_if_large(paths: list[Path], say: Callable[[str], None]) -> None:
    """A line before a large pass-1 trace is read (LARGE_TRACE_BYTES): its size, about how
    long reading it takes, and what makes it smaller; none where a file is past what
    rooflint reads at all (MAX_TRACE_BYTES: _read_trace refuses it, saying why)."""
    sizes = [path.stat().st_size for path in paths if path.is_file()]
    size = sum(sizes)
    if size > LARGE_TRACE_BYTES and max(sizes) <= MAX_TRACE_BYTES:
        say(f"pass 1: PyTorch's profiler wrote {format_bytes(size)} of trace; reading it "
            f"takes about {round(size / 2**20 * READ_S_PER_MB, -1):.0f} s: a shorter run of the "
            f"program (fewer steps, batches or evaluations) profiles sooner")


def _read_trace(path: Path) -> dict:
    """The profiler's trace, parsed; UnreadableTrace when it is missing or not JSON;
    RooflintError, said and final, when it is too large to hold: timing its launches with
    Nsight Compute instead would take hours."""
    try:
        size = path.stat().st_size
        if size > MAX_TRACE_BYTES:
            launches = size / TRACE_BYTES_PER_LAUNCH
            raise RooflintError(
                f"PyTorch's profiler wrote a {format_bytes(size)} trace of the program's "
                f"operators and kernel launches, up to {launches / 1e6:.1f} million "
                f"launches: more than rooflint reads ({format_bytes(MAX_TRACE_BYTES)}), and "
                f"Nsight Compute would take up to {launches * NCU_PASS1_S_PER_LAUNCH / 3600:.0f}"
                f" hours to time them one by one; profile a shorter run of the program "
                f"(fewer steps, sizes or repetitions)")
        document = parse_large(path.read_bytes())
    except FileNotFoundError:
        raise UnreadableTrace(f"PyTorch's profiler traced nothing (it starts at the program's "
                              f"first import of {', '.join(STARTING_IMPORTS)}: this program "
                              f"imported none, or its PyTorch failed to load)") from None
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
    args = [*ncu.CLOCKS_UNTOUCHED, *NAME_BASE, "--cache-control", "none",
            "--metrics", ncu.DURATION, *_filter_args(filters),
            "--launch-skip", str(filters.skip)]
    return run_ncu(args, command, logs, DURATIONS_LOG, PassProgress("pass 1", say))


# Launches profiled of each distinct launch configuration in pass 2.
LAUNCHES_PER_CONFIG = 1


def counter_pass(command: list[str], choice: Choice, logs: Path | None,
                 progress: PassProgress) -> Pass:
    """rooflint's counters on the first launch of each launch configuration of the chosen
    kernels (see selection); on every GPU again where those the choice names saw none
    (the ranks' device numbers are CUDA's, as each process counts its GPUs: a launcher
    that numbers them otherwise must not cost the counters)."""
    def profiled(on: Choice) -> Pass:
        args = [*ncu.CLOCKS_UNTOUCHED, "--cache-control", "all",
                "--metrics", ",".join(on.metrics), *on.selection]
        return run_ncu(args, command, logs, COUNTERS_LOG, progress, ending=on.ending)
    try:
        return profiled(choice)
    except NothingProfiled:
        if not choice.devices:
            raise
    progress.say(f"pass 2: Nsight Compute profiled no launch on GPU "
                 f"{', '.join(map(str, choice.devices))}: again, on every GPU")
    return profiled(replace(choice, devices=()))


def selection(patterns: list[str], skip: int = 0, devices: tuple[int, ...] = ()) -> list[str]:
    """Pass 2's launches, as ncu options: LAUNCHES_PER_CONFIG of each launch configuration
    of the kernels whose mangled names ``patterns`` match, after the program's first
    ``skip`` launches (of any kernel), on the GPUs numbered ``devices`` (all where none),
    names printed demangled. Kept in the result's settings, so the same launches can be
    profiled again (benchmarks/profile.sh's ``--set full``).

    By mangled name even under ``--kernel`` (which pass 1 applies, on demangled names as
    the user wrote it): Nsight Compute tells launch configurations apart by the name at
    ``--kernel-name-base``, and by demangled name two ``extern "C"`` kernels at one grid,
    block and register count were one configuration, the second never profiled (H100).
    Not ``--nvtx`` nor ``--skip``: an NVTX range holds only the launches of the thread that
    pushed it (PyTorch's backward runs on a thread of its own, whose kernels would all be
    left out), and the first launch of a configuration is often in the warm-up. Counters
    do not need the steady state: bytes, FLOPs and stalls are the kernel's own, and every
    profiled launch starts from flushed caches."""
    return ["--filter-mode", "per-launch-config", "--launch-count", str(LAUNCHES_PER_CONFIG),
            *(["--launch-skip-before-match", str(skip)] if skip else []),
            *(["--devices", ",".join(map(str, devices))] if devices else []),
            "--kernel-name-base", "mangled", *ncu.DEMANGLED_NAMES,
            "-k", f"regex:{'|'.join(patterns)}"]


# How often pass 2 attaches again to a waiting program that cannot be attached yet
# (pass_runner.NotAttachable).
ATTACH_AGAIN_S = 0.25


def _attach(waiting: Waiting, choice: Choice, logs: Path | None,
            progress: PassProgress) -> Pass:
    """counter_pass's selection, profiled by attaching to the waiting program, which then
    runs to its end (or to where pass 1's was ended, or the early end stops it)."""
    began = time.perf_counter()
    attached = _attached(waiting, waiting.port, choice, logs, progress)
    return Pass(attached.log, time.perf_counter() - began, attached=True)


def _attached(waiting: Waiting, port: int, choice: Choice, logs: Path | None,
              progress: PassProgress, log: str = COUNTERS_LOG) -> Pass:
    """counter_pass's selection, profiled by attaching to the process waiting on ``port``;
    attached again while the program runs but cannot be attached yet."""
    args = ["--mode", "attach", "--hostname", "127.0.0.1", "--port", str(port),
            "--max-connections", str(PORTS), *ncu.CLOCKS_UNTOUCHED,
            "--cache-control", "all", "--metrics", ",".join(choice.metrics),
            *choice.selection]
    said_why = False
    while True:
        try:
            return run_ncu(args, [], logs, log, progress, program_output=waiting.output,
                           program=waiting.process, ending=choice.ending)
        except NotAttachable:
            _still_running(waiting)
        if not said_why:
            progress.say(f"{progress.step}: waiting for the program to reach its first CUDA "
                         f"call")
            said_why = True
        time.sleep(ATTACH_AGAIN_S)
        progress.tick()


def _attach_ranks(waiting: Waiting, command: list[str], first: Pass, choice: Choice,
                  logs: Path | None, say: Callable[[str], None]) -> Pass:
    """counter_pass's selection in an early-started job: every rank attached at once (each
    waits for its peers' collectives), the choice's GPUs profiled, the others' ranks let
    run; their logs joined. Where none profiled a launch on those GPUs, pass 2 runs again
    on every GPU, as counter_pass does. The job is stopped where any attach fails, at its
    limit, or on an interrupt, and the other attaches with it (each at its progress's next
    tick): four FSDP2 ranks' pass 2, interrupted, had gone on to its limit, 172 s more."""
    abandoned = threading.Event()
    began = time.perf_counter()
    progress = replace(pass_two_progress(first, choice, say), abandoned=abandoned)
    quiet = PassProgress("pass 2", lambda _: None, limit_s=progress.limit_s, over=progress.over,
                         abandoned=abandoned)
    with ThreadPoolExecutor(waiting.ranks) as pool:
        runs = [pool.submit(_rank_log, waiting, port, choice, rank,
                            progress if rank == 0 else quiet)
                for rank, port in enumerate(waiting.ports)]
        try:
            ended, _ = wait(runs, return_when=FIRST_EXCEPTION)
            for run in ended:                # the first failure, raised before waiting on
                run.result()                 # the runs still going
            texts = [run.result() for run in runs]
        except BaseException:
            abandoned.set()
            stop(waiting.process)
            raise
    text = joined([t for t in texts if t])
    if not text:
        if not choice.devices:
            raise NothingProfiled(f"{' '.join(command)} launched no CUDA kernel that ncu "
                                  f"saw; check --nvtx and --kernel")
        progress.say(f"pass 2: Nsight Compute profiled no launch on GPU "
                     f"{', '.join(map(str, choice.devices))}: again, on every GPU")
        return counter_pass(command, replace(choice, devices=()), logs, progress)
    if logs:
        (logs / COUNTERS_LOG).write_text(text)
    return Pass(text, time.perf_counter() - began, attached=True,
                processes=processes_in(ncu.parse_rows(text)))


def _rank_log(waiting: Waiting, port: int, choice: Choice, rank: int,
              progress: PassProgress) -> str:
    """One rank's log of pass 2 ("" where it profiled nothing: its GPU is not chosen)."""
    try:
        return _attached(waiting, port, choice, None, progress,
                         f"{Path(COUNTERS_LOG).stem}.rank{rank}.csv").log
    except NothingProfiled:
        return ""


def _still_running(waiting: Waiting) -> None:
    """Nothing while the waiting program runs; once it has ended (before its first CUDA
    call: nothing attached to it), why, in its own words."""
    if waiting.process.poll() is not None:
        said = program_tail(waiting.output.read_text(errors="replace"), "")
        raise RooflintError(f"the program ended (exit {waiting.process.returncode}) before "
                            f"ncu could attach to it: {said}")


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
