"""Drive measurement workers from the parent process (no CuPy here).

Each family runs in a worker process that stays alive across its variants (CuPy's
import and context creation are paid once). A variant that hangs past the timeout or
faults the CUDA context loses only its own row: the worker is replaced and the
remaining variants are sent to the new one.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from rooflint.common.errors import RooflintError
from rooflint.measure import ncu
from rooflint.measure.devices import VISIBLE
from rooflint.formats.jobs import DeviceInfo, FamilyJob, Measurement
from rooflint.measure.protocol import PROFILER_ARG
from rooflint.common.phases import COUNTER_PASS_PREFIX, Stopwatch
from rooflint.formats.status import Status

Progress = Callable[[str, str], None]  # (event, variant name)


class Worker:
    """One ``python -m rooflint.measure.worker`` process and its line protocol."""

    def __init__(self, prefix: list[str] | None = None, args: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [*(prefix or []), sys.executable, "-m", "rooflint.measure.worker", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1, env={**os.environ, **(env or {})})
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self.output_ended = False   # its standard output closed: it exited, or is exiting
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()

    def _pump_stdout(self) -> None:
        for line in self.process.stdout:
            if line.startswith('{"event"'):
                self.lines.put(line)
            else:  # a profiler wrapping the worker may print here too
                self.stderr_tail.append(line.rstrip())
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr_tail.append(line.rstrip())

    def receive(self, timeout: float) -> dict | None:
        """The next message, or None if the worker exited; TimeoutError if it is silent."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None
        if line is None:
            self.output_ended = True
            return None
        return json.loads(line)

    def exited(self) -> bool:
        """Whether it is gone. Its output's end says so before the process can be reaped
        (poll() may still say running a moment after the worker closed its streams, more so
        under ncu, which outlives the worker to write its report): a job sent then would
        meet a broken pipe."""
        return self.output_ended or self.process.poll() is not None

    def send(self, job: FamilyJob) -> None:
        self._write(job.to_json())

    def send_pair(self, first: FamilyJob, second: FamilyJob) -> None:
        self._write({"pair": [first.to_json(), second.to_json()]})

    def _write(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def hello(self, timeout: float) -> DeviceInfo | None:
        """The worker's greeting: its GPU (None from a profiler, which opens it later)."""
        try:
            message = self.receive(timeout)
        except TimeoutError:
            self.kill()
            raise RooflintError(f"the GPU worker did not start within {timeout:.0f} s") from None
        if message is None:
            raise RooflintError(f"the GPU worker exited at start: {self.last_error()}")
        if message["event"] == "fatal":
            raise RooflintError(f"{message['message']} (without a GPU, `explain` and `specs` "
                                "work, and so do `show`, `plot`, `compare` and `gate --current` "
                                "on result files)")
        return DeviceInfo(**message["device"]) if message["device"] else None

    def last_error(self) -> str:
        lines = [line for line in self.stderr_tail if line.strip()]
        return lines[-1] if lines else f"exit code {self.process.poll()}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def end_input(self) -> None:
        """No more jobs: the worker exits once it has answered the last one."""
        if not self.process.stdin.closed:
            self.process.stdin.close()

    def close(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            self.end_input()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()


class WorkerPool:
    """Keeps one healthy worker; replaces it after a fault or a hang (if ``restart``)."""

    START_TIMEOUT = 120.0

    def __init__(self, prefix: list[str] | None = None, restart: bool = True,
                 env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> None:
        self.prefix = prefix
        self.restart = restart
        self.env = env              # CUDA_VISIBLE_DEVICES for a worker pinned to one GPU
        self.args = args
        self.worker: Worker | None = None
        self.greeted = False        # the worker's hello has been read
        self.device: DeviceInfo | None = None
        self.phases = Stopwatch()   # the workers' own phases, as each family reports them

    def spawn(self) -> None:
        """Start a worker process, not waiting for its hello; one that exited after its
        hello is replaced (one that exited before it is left for ``start`` to report)."""
        if self.worker is None or (self.greeted and self.worker.exited()):
            self.worker = Worker(self.prefix, self.args, env=self.env)
            self.greeted = False

    def start(self) -> DeviceInfo | None:
        """A worker that has said hello: its device (None for a profiler)."""
        self.spawn()
        if not self.greeted:
            self.device = self.worker.hello(self.START_TIMEOUT)
            self.greeted = True
        return self.device

    def measure(self, job: FamilyJob, timeout: float, progress: Progress) -> Iterator[Measurement]:
        """Measurements for every variant of the job, in order; failures become error rows."""
        pending = list(job.variants)
        while pending:
            self.start()
            self.worker.send(replace(job, variants=pending))
            done = yield from self._drain(pending, timeout, progress)
            pending = pending[done:]
            if not self.restart:
                return

    def measure_pair(self, first: FamilyJob, second: FamilyJob, timeout: float,
                     progress: Progress) -> list[Measurement]:
        """Both sides' single variants, timed interleaved in one worker."""
        self.start()
        self.worker.send_pair(first, second)
        pending = [first.variants[0], second.variants[0]]
        measurements = list(self._drain(pending, 2 * timeout, progress))
        for variant in pending[len(measurements):]:
            measurements.append(Measurement(variant.name, Status.ERROR, "not measured: the "
                                            "worker stopped after the other side"))
        return measurements

    def _drain(self, pending: list, timeout: float, progress: Progress):
        """Read this worker's answers; returns how many pending variants are settled."""
        settled, current = 0, None
        while True:
            try:
                message = self.worker.receive(timeout if current else self.START_TIMEOUT)
            except TimeoutError:
                self.worker.kill()
                name = current or pending[settled].name
                yield Measurement(name, Status.ERROR, f"timed out after {timeout:.0f} s "
                                                      "(hang or deadlock?); worker restarted")
                return settled + 1
            if message is None:
                if current is None and settled > 0:
                    return settled  # it exited after reporting a fault: restart for the rest
                name = current or pending[settled].name
                yield Measurement(name, Status.ERROR, f"worker died: {self.worker.last_error()}")
                return settled + 1
            event = message["event"]
            if event == "start":
                current = message["variant"]
                progress("start", current)
            elif event == "measured":
                measurement = Measurement.from_json(message["measurement"])
                progress("measured", measurement.variant)
                yield measurement
                settled, current = settled + 1, None
            elif event == "family_error":
                for variant in pending[settled:]:
                    yield Measurement(variant.name, Status.ERROR, message["message"])
                return len(pending)
            elif event == "done":
                self.phases.add(message.get("phases", {}))
                return len(pending)

    def close(self, timeout: float = 10.0) -> None:
        if self.worker:
            self.worker.close(timeout)

    def kill(self) -> None:
        if self.worker:
            self.worker.kill()


def timing_pools(devices: list[str] | None) -> list[WorkerPool]:
    """A timing worker for each of ``devices`` (the default GPU for None), started now and
    not waited for: its start-up (CuPy's import and the GPU's context, about a second)
    overlaps whatever the caller does before it needs it."""
    pools = [WorkerPool(env={VISIBLE: d} if d is not None else None) for d in devices or [None]]
    for pool in pools:
        pool.spawn()
    return pools


class Collection(Protocol):
    """What a profiler session collects (ncu.Counting, source_report.SourceCounting): the ncu
    command that profiles a worker into ``output``, and the reading of it afterwards, by
    NVTX range index, with the text ncu wrote there (which says why, if it is empty)."""

    suffix: str

    def command(self, output: Path, cache: str) -> list[str]: ...

    def read(self, output: Path) -> tuple[dict[int, Any], str]: ...


@dataclass
class _Session:
    """One ncu process and its output; ``entries`` names the variant behind each NVTX range
    index, in the order the worker numbered them (one count across the session's jobs);
    ``failures`` are the profiled runs the worker could not make, with its reason."""

    pool: WorkerPool
    output: Path
    entries: list[tuple[int, str]] = field(default_factory=list)   # (ticket, variant)
    refused: bool = False                                           # ncu did not start it
    failures: list[str] = field(default_factory=list)


class Profiler:
    """One worker under Nsight Compute for a whole run on one GPU.

    ncu prints its CSV (or writes its report) only when its session ends (an H100 showed
    nothing in the log while the profiled process lived), so every family's counters come
    at ``close``; one session per run rather than per family saves ncu's start-up, about
    3 s, for each family after the first. A worker that dies (a fault) ends its session:
    the next family starts a new one, in a new output. Each ``profile`` call returns a
    ticket; ``close`` returns what the collection read for each ticket's variants.
    """

    def __init__(self, cache: str, collection: Collection, env: dict[str, str] | None = None,
                 preload: tuple[str, ...] = ()):
        self.cache, self.collection, self.env, self.preload = cache, collection, env, preload
        self.directory = Path(tempfile.mkdtemp(prefix="rooflint-ncu-"))
        self.sessions: list[_Session] = []
        self.tickets = 0

    def start(self) -> None:
        """Start a session, not waiting for it, unless one is alive (or ncu refused one:
        it would again). Its worker touches the GPU only at its first job, so it may
        start while kernels are being timed."""
        if self.sessions and (self.sessions[-1].refused or not self._ended(self.sessions[-1])):
            return
        output = self.directory / f"ncu-{len(self.sessions)}{self.collection.suffix}"
        pool = WorkerPool(prefix=self.collection.command(output, self.cache),
                          restart=False, env=self.env, args=(PROFILER_ARG, *self.preload))
        self.sessions.append(_Session(pool, output))
        pool.spawn()

    @staticmethod
    def _ended(session: _Session) -> bool:
        """Its worker exited after its hello (a fault): the next job needs a new session."""
        worker = session.pool.worker
        return session.pool.greeted and (worker is None or worker.exited())

    def profile(self, job: FamilyJob, timeout: float, progress: Progress,
                watch: Stopwatch | None = None) -> int:
        """Profile the job's variants (each once, in its NVTX range); the worker's phases
        go into ``watch``, prefixed. Returns the ticket ``close`` keys its counters by."""
        ticket, self.tickets = self.tickets, self.tickets + 1
        self.start()
        session = self.sessions[-1]
        try:
            session.pool.start()
        except RooflintError:
            session.refused = True   # ncu did not run the worker: its log and output say why
        if session.refused:
            return ticket
        session.entries += [(ticket, v.name) for v in job.variants]
        session.pool.phases = Stopwatch()
        for measurement in session.pool.measure(replace(job, mode="profile"), timeout, progress):
            if measurement.status != Status.OK:
                session.failures.append(f"{measurement.variant}: {measurement.message}")
        if watch is not None:
            watch.add(session.pool.phases.seconds, COUNTER_PASS_PREFIX)
        return ticket

    def close(self, timeout: float = 120.0) -> dict[int, dict[str, Any]]:
        """End the sessions and read what they collected. CountersUnavailable says why when
        ncu gave nothing at all; a variant whose run failed simply has nothing."""
        try:
            found: dict[int, dict[str, Any]] = {}
            texts = []
            for session in self.sessions:
                if not session.entries and not session.refused:
                    session.pool.kill()   # never given a job (every family's counters were
                    continue              # cached): no teardown of ncu's to wait for, 1.4 s
                session.pool.close(timeout=timeout)
                by_index, text = self.collection.read(session.output)
                worker = session.pool.worker
                texts.append(text + "\n" + "\n".join(worker.stderr_tail if worker else []))
                for index, value in by_index.items():
                    if index < len(session.entries):
                        ticket, name = session.entries[index]
                        found.setdefault(ticket, {})[name] = value
            asked = any(session.entries or session.refused for session in self.sessions)
            if asked and not found:
                failures = [f for session in self.sessions for f in session.failures]
                raise ncu.CountersUnavailable(ncu.failure_reason("\n".join(texts), failures))
            return found
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def kill(self) -> None:
        for session in self.sessions:
            session.pool.kill()
        shutil.rmtree(self.directory, ignore_errors=True)


def profile(job: FamilyJob, timeout: float, progress: Progress, metrics: list[str],
            watch: Stopwatch | None = None) -> dict[str, ncu.Counters]:
    """Counters for one job's variants, in a session of its own (`compare`'s sides)."""
    profiler = Profiler(job.timing.cache, ncu.Counting(tuple(metrics)))
    try:
        ticket = profiler.profile(job, timeout, progress, watch)
    except BaseException:
        profiler.kill()
        raise
    return profiler.close().get(ticket, {})


def calibrate(progress: Callable[[str, int], None]
              ) -> tuple[DeviceInfo, list[dict], dict[str, str]]:
    """Run ``rooflint.measure.calibrate`` in a worker: the device, its steps, what was skipped."""
    worker = Worker(args=("--calibrate",))
    try:
        device = worker.hello(WorkerPool.START_TIMEOUT)
        steps, skipped = [], {}
        while (message := worker.receive(timeout=600.0)) is not None:
            if message["event"] == "start":
                progress(message["variant"], message["total"])
            elif message["event"] == "steps":
                steps += message["steps"]
            elif message["event"] == "skipped":
                skipped[message["variant"]] = message["message"]
            elif message["event"] == "done":
                break
        else:
            raise RooflintError(f"calibration worker died: {worker.last_error()}")
        return device, steps, skipped
    except TimeoutError:
        raise RooflintError("calibration step took over 600 s; giving up") from None
    finally:
        worker.close()
