"""The measurement worker: ``python -m rooflint.measure.worker``.

Protocol (one JSON object per line): the worker first writes ``{"event": "hello",
"device": {...}}`` or ``{"event": "fatal", "message": ...}``; then, for each family job
read from stdin, ``{"event": "start", "variant": name}`` and ``{"event": "measured",
"measurement": {...}}`` per variant, and ``{"event": "done"}``. After a CUDA fault the
context is unusable, so the worker reports the variant and exits with FAULT_EXIT; the
parent starts a fresh worker for the variants that remain.

Run by Nsight Compute with ``--profiler [MODULE...]``, the worker imports those modules,
says hello with no device and opens the GPU only at its first job: its start-up (ncu's
with it) runs while the timing worker has the GPU to itself.

Anything else that prints (CuPy warnings, user reference code) goes to stderr, so the
protocol stream stays clean.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import IO, TYPE_CHECKING

from rooflint.measure.nvml import Nvml
from rooflint.formats.jobs import DeviceInfo, Measurement, VariantJob
from rooflint.measure.protocol import PROFILER_ARG, send
from rooflint.measure.sampling import time_interleaved
from rooflint.formats.status import Status

if TYPE_CHECKING:   # launch imports CuPy: the worker imports it only once CuPy is there
    from rooflint.measure.launch import FamilySession

FAULT_EXIT = 3
NO_GPU_EXIT = 4


def protocol_stream() -> IO[str]:
    """A private copy of stdout for the protocol; fd 1 then points at stderr."""
    stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def main() -> int:
    out = protocol_stream()
    args = sys.argv[1:]
    try:
        import cupy  # noqa: F401 - its absence is the first thing to report
        device, nvml = (None, None) if PROFILER_ARG in args else open_device()
    except ImportError as exc:
        send(out, "fatal", message=f"CuPy is not installed ({exc}); install it with "
                                   "pip install -e '.[cuda13]' (or .[cuda12])")
        return NO_GPU_EXIT
    except Exception as exc:  # no driver, no device, CUDA too old
        send(out, "fatal", message=no_gpu_message(exc))
        return NO_GPU_EXIT
    if PROFILER_ARG in args:
        preload(args[args.index(PROFILER_ARG) + 1:])
        send(out, "hello", device=None)
        return serve_jobs(out, None, None)
    send(out, "hello", device=asdict(device))
    if "--calibrate" in args:
        from rooflint.measure.calibrate import calibrate  # imports CuPy: only once it is there
        return calibrate(out, device, nvml)
    return serve_jobs(out, device, nvml)


def open_device() -> tuple[DeviceInfo, Nvml | None]:
    """The first visible GPU (choose another with CUDA_VISIBLE_DEVICES), made current."""
    import cupy
    from rooflint.measure import gpu
    cupy.cuda.Device(0).use()
    nvml = gpu.open_nvml(0)
    return gpu.device_info(0, nvml), nvml


def preload(modules: list[str]) -> None:
    """Import what the profiler's jobs will need while it waits for its first (CPU work
    only: the GPU is the timing worker's until then); one not installed is reported when
    a variant needs it."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def no_gpu_message(exc: Exception) -> str:
    """Why there is no GPU to use. CUDA reports a machine with no NVIDIA driver at all as
    "driver version is insufficient", which would send its user off to upgrade a driver
    that does not exist."""
    reason = " ".join(str(exc).split())
    if not any(Path(p).exists() for p in ("/proc/driver/nvidia/version", "/dev/dxg")):
        return f"no NVIDIA GPU driver on this machine, so no GPU to measure on ({reason})"
    return f"no usable CUDA GPU: {reason}"


def serve_jobs(out: IO[str], device: DeviceInfo | None, nvml: Nvml | None) -> int:
    """Measure (or profile) each family job read from stdin until stdin closes; without a
    device yet (the profiler), the GPU is opened at the first job."""
    from rooflint.measure import gpu, launch
    from rooflint.measure.faults import CudaFault
    from rooflint.measure.inputs import read_only_hint
    from rooflint.formats.jobs import FamilyJob

    profiled = 0   # variants profiled so far: NVTX range indices count on across jobs
    for line in sys.stdin:
        if not line.strip():
            continue
        if device is None:   # the profiler's first job: now the GPU is its own
            try:
                device, nvml = open_device()
            except Exception as exc:
                send(out, "family_error", message=no_gpu_message(exc))
                return NO_GPU_EXIT
        message = json.loads(line)
        if "pair" in message:
            code = serve_pair([FamilyJob.from_json(j) for j in message["pair"]], out, device, nvml)
            if code:
                return code
            continue
        job = FamilyJob.from_json(message)
        try:
            session = launch.FamilySession(job, device, nvml)
        except CudaFault as exc:
            send(out, "family_error", message=f"CUDA error while preparing inputs: {exc}")
            return FAULT_EXIT
        except Exception as exc:
            send(out, "family_error", message=f"cannot prepare {job.family}: "
                                               f"{type(exc).__name__}: {exc}"
                                               f"{read_only_hint(exc)}")
            continue
        for index, variant in enumerate(job.variants, start=profiled):
            send(out, "start", variant=variant.name)
            try:
                measurement = (session.profile(variant, index) if job.mode == "profile"
                               else session.measure(variant))
            except CudaFault as exc:
                send(out, "measured", measurement=asdict(Measurement(
                    variant.name, Status.ERROR, f"CUDA fault: {exc}")))
                return FAULT_EXIT
            send(out, "measured", measurement=asdict(measurement))
        session.references.finish_writes()
        send(out, "done", phases=session.watch.seconds)
        if job.mode == "profile":
            profiled += len(job.variants)
        del session
        gpu.free_memory()
    return 0


def serve_pair(jobs: list, out: IO[str], device: DeviceInfo, nvml: Nvml | None) -> int:
    """Two one-variant jobs (the sides of `rooflint compare`), timed interleaved."""
    from rooflint.measure import launch
    from rooflint.measure.faults import CudaFault
    send(out, "start", variant=jobs[0].variants[0].name)
    try:
        sessions = [launch.FamilySession(job, device, nvml) for job in jobs]
        measurements = measure_pair(*[(s, j.variants[0]) for s, j in zip(sessions, jobs)])
    except CudaFault as exc:
        for job in jobs:
            send(out, "measured", measurement=asdict(Measurement(
                job.variants[0].name, Status.ERROR, f"CUDA fault: {exc}")))
        return FAULT_EXIT
    except Exception as exc:
        send(out, "family_error", message=f"cannot prepare the comparison: "
                                          f"{type(exc).__name__}: {exc}")
        return 0
    for measurement in measurements:
        send(out, "measured", measurement=asdict(measurement))
    for session in sessions:
        session.references.finish_writes()
    sessions[1].watch.add(sessions[0].watch.seconds)
    send(out, "done", phases=sessions[1].watch.seconds)
    return 0


def measure_pair(first: tuple[FamilySession, VariantJob], second: tuple[FamilySession, VariantJob]
                 ) -> list[Measurement]:
    """Two variants, each checked, then timed interleaved (for `rooflint compare`)."""
    checked = [session.checked_runner(variant) for session, variant in (first, second)]
    failed = [c for c in checked if isinstance(c, Measurement)]
    if failed:  # the other side is still measured, alone
        return [c if isinstance(c, Measurement) else session.measure(variant)
                for c, (session, variant) in zip(checked, (first, second))]
    with first[0].watch.phase("timing"):
        timed = time_interleaved([(first[0].timer, checked[0][0]),
                                  (second[0].timer, checked[1][0])], first[0].job.timing)
    return [session.finish(variant, run, checks, samples, clocks)
            for (session, variant), (run, checks), (samples, clocks)
            in zip((first, second), checked, timed)]


if __name__ == "__main__":
    sys.exit(main())
