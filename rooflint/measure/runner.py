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
import subprocess
import sys
import tempfile
import threading
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from rooflint.errors import RooflintError
from rooflint.measure import ncu
from rooflint.measure.protocol import DeviceInfo, FamilyJob, Measurement
from rooflint.phases import COUNTER_PASS_PREFIX, Stopwatch

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
        return json.loads(line) if line is not None else None

    def send(self, job: FamilyJob) -> None:
        self._write(job.to_json())

    def send_pair(self, first: FamilyJob, second: FamilyJob) -> None:
        self._write({"pair": [first.to_json(), second.to_json()]})

    def _write(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def hello(self, timeout: float) -> DeviceInfo:
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
        return DeviceInfo(**message["device"])

    def last_error(self) -> str:
        lines = [l for l in self.stderr_tail if l.strip()]
        return lines[-1] if lines else f"exit code {self.process.poll()}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def close(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()


class WorkerPool:
    """Keeps one healthy worker; replaces it after a fault or a hang (if ``restart``)."""

    START_TIMEOUT = 120.0

    def __init__(self, prefix: list[str] | None = None, restart: bool = True,
                 env: dict[str, str] | None = None) -> None:
        self.prefix = prefix
        self.restart = restart
        self.env = env              # CUDA_VISIBLE_DEVICES for a worker pinned to one GPU
        self.worker: Worker | None = None
        self.device: DeviceInfo | None = None
        self.phases = Stopwatch()   # the workers' own phases, as each family reports them

    def start(self) -> DeviceInfo:
        if self.worker is None or self.worker.process.poll() is not None:
            self.worker = Worker(self.prefix, env=self.env)
            self.device = self.worker.hello(self.START_TIMEOUT)
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
            measurements.append(Measurement(variant.name, "error", "not measured: the worker "
                                                                   "stopped after the other side"))
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
                yield Measurement(name, "error", f"timed out after {timeout:.0f} s "
                                                 "(hang or deadlock?); worker restarted")
                return settled + 1
            if message is None:
                if current is None and settled > 0:
                    return settled  # it exited after reporting a fault: restart for the rest
                name = current or pending[settled].name
                yield Measurement(name, "error", f"worker died: {self.worker.last_error()}")
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
                    yield Measurement(variant.name, "error", message["message"])
                return len(pending)
            elif event == "done":
                self.phases.add(message.get("phases", {}))
                return len(pending)

    def close(self, timeout: float = 10.0) -> None:
        if self.worker:
            self.worker.close(timeout)


def profile(job: FamilyJob, timeout: float, progress: Progress,
            watch: Stopwatch | None = None, env: dict[str, str] | None = None
            ) -> dict[str, ncu.Counters]:
    """Counters for the job's variants from one worker run under Nsight Compute.

    One ncu process per family, no restarts (a second one would overwrite the log); a
    variant whose run fails there simply has no counters. CountersUnavailable says why
    when ncu yields nothing at all. The worker's phases go into ``watch``, prefixed.
    """
    with tempfile.TemporaryDirectory(prefix="rooflint-ncu-") as directory:
        log = Path(directory) / "ncu.csv"
        pool = WorkerPool(prefix=ncu.command(str(log), job.timing.cache), restart=False,
                          env=env)
        profiled = replace(job, mode="profile")
        try:
            pool.start()
            for _ in pool.measure(profiled, timeout, progress):
                pass
        except RooflintError:
            pass  # ncu refused to start the worker: the log and stderr say why
        finally:
            pool.close(timeout=120.0)
            if watch is not None:
                watch.add(pool.phases.seconds, COUNTER_PASS_PREFIX)
        text = log.read_text() if log.exists() else ""
        counters = ncu.counters_by_variant(text, [v.name for v in job.variants])
        if not counters:
            stderr = "\n".join(pool.worker.stderr_tail) if pool.worker else ""
            raise ncu.CountersUnavailable(ncu.failure_reason(text + "\n" + stderr))
        return counters


def calibrate(progress: Callable[[str, int], None]) -> tuple[DeviceInfo, list[dict], dict[str, str]]:
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
