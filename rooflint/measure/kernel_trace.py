"""Pass 1 of `rooflint profile` for a program PyTorch's profiler cannot enter (a C++ or
CUDA binary, a Python program without PyTorch): CUPTI's activity records of every kernel,
at the program's own speed, where Nsight Compute would serialise every launch (SGEMM_CUDA's
runner: 16.5 s against 3.8 s plain on an H100).

The recorder (kernel_trace_injection.cpp) is a small library the CUDA driver loads into
every process of the program (CUDA_INJECTION64_PATH). It is built once per toolkit with
that toolkit's nvcc, against its own CUPTI, and kept in rooflint's cache. Where it cannot be
built or loaded (no nvcc, no CUPTI headers, the user's own injection already set, CUPTI
refusing), KernelTraceUnavailable says why and pass 1 falls back to Nsight Compute.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from rooflint.common.paths import cache_dir
from rooflint.common.toolkit import find_nvcc, toolkit_roots
from rooflint.formats.kernel_records import UnreadableRecords, read_records
from rooflint.measure import nccl_logs, trace_bootstrap
from rooflint.measure.pass_runner import Pass, PassProgress, Timer, command_failed, output_of

SOURCE = Path(__file__).with_name("kernel_trace_injection.cpp")
LIBRARY = "librooflint_kernel_trace.so"
# The variable that names the library to the driver, and the one naming the folder the
# library writes into (the .cpp reads it): the bootstrap's names, which it sets in pass 1.
INJECTION, RECORDS_FOLDER = trace_bootstrap.INJECTION, trace_bootstrap.RECORDS
KERNEL_RECORD = re.compile(r"\bCUpti_ActivityKernel(\d+)\b")
NCCL_FOLDER = "nccl"                # within the pass's folder: NCCL's logs (nccl_logs.py)
BUILD_TIMEOUT_S = 120


class KernelTraceUnavailable(Exception):
    """Why CUPTI's records cannot time this program's launches: the fallback's reason."""


def kernel_trace_pass(command: list[str], trace_log: Path | None,
                      say: Callable[[str], None]) -> Pass:
    """The program with the recorder loaded into each of its processes; its kernels as a
    trace of the shape PyTorch's profiler writes, kept as ``trace_log`` where given (the
    records themselves go to a folder of rooflint's own: nothing the user named is
    written by the program's processes, nor NCCL's logs: nccl_logs.py)."""
    library = injection_library()
    with tempfile.TemporaryDirectory(prefix="rooflint-kernels-") as scratch:
        nccl = Path(scratch) / NCCL_FOLDER
        began = time.perf_counter()
        done = output_of(command, PassProgress("pass 1", say),
                         {INJECTION: str(library), RECORDS_FOLDER: scratch,
                          **nccl_logs.log_environment(nccl)})
        wall = time.perf_counter() - began
        if done.returncode != 0:
            raise command_failed(done)
        return recorded_pass(Path(scratch), wall, trace_log, say, done.pid,
                             nccl_logs.logs_in(nccl, trace_log.parent if trace_log else None))


def has_records(folder: Path) -> bool:
    """Whether a process of the program loaded the recorder and wrote into ``folder``."""
    return any(folder.glob("*.tsv"))


def recorded_pass(folder: Path, wall: float, trace_log: Path | None,
                  say: Callable[[str], None], started: int,
                  nccl: list[str] | None = None) -> Pass:
    """Pass 1 from the records the recorder wrote into ``folder`` (one file a process) of
    the program whose process rooflint ``started``, with NCCL's logs of its calls
    (``nccl``: Pass.nccl_logs); what it lost said; the trace kept as ``trace_log`` where
    given."""
    texts = [path.read_text(errors="replace") for path in sorted(folder.glob("*.tsv"))]
    if not texts:
        raise KernelTraceUnavailable("no process of the program loaded CUPTI's recorder")
    try:
        records = read_records(texts)
    except UnreadableRecords as exc:
        raise KernelTraceUnavailable(f"CUPTI's records are unreadable: {exc}") from None
    if records.refused and not records.pids:
        raise KernelTraceUnavailable(f"CUPTI recorded nothing: {records.refused[0]}")
    if records.dropped:
        say(f"pass 1: CUPTI dropped {records.dropped} kernel records: those launches are not "
            f"counted")
    if records.unfinished:
        say(f"pass 1: {records.unfinished} process(es) ended before CUPTI's records were "
            f"written out: their last launches may be missing")
    if trace_log:
        trace_log.write_text(json.dumps(records.trace))
    return Pass("", wall, timer=Timer.cupti, processes=len(records.pids),
                own_process=set(records.pids) <= {started}, trace=records.trace,
                nccl_logs=nccl)


def injection_library() -> Path:
    """The recorder, built for this toolkit's CUPTI unless the cache holds it already."""
    built, build = _recorder()
    if not built.exists():
        build()
    return built


def recorder_if_built() -> Path | None:
    """The recorder where the cache holds it; else None, and the recorder built meanwhile
    in a thread of its own, for the next profile (None too where it cannot be built). A
    Python program's pass 1 is offered it only then: a PyTorch program, which never loads
    it, then never waits for nvcc."""
    try:
        built, build = _recorder()
    except KernelTraceUnavailable:
        return None
    if built.exists():
        return built
    threading.Thread(target=_quietly, args=(build,), daemon=True).start()
    return None


def _quietly(build: Callable[[], None]) -> None:
    try:
        build()
    except KernelTraceUnavailable:   # said when a pass needs the recorder, not here
        pass


def _recorder() -> tuple[Path, Callable[[], None]]:
    """Where this toolkit's recorder is cached, and how to build it there."""
    if os.environ.get(INJECTION):
        raise KernelTraceUnavailable(f"{INJECTION} is set already (another tool's injection)")
    nvcc = find_nvcc()
    if nvcc is None:
        raise KernelTraceUnavailable("no nvcc to build CUPTI's recorder with")
    include, lib = cupti_dirs(toolkit_roots())
    record = kernel_record(include)
    key = hashlib.sha256("\0".join([SOURCE.read_text(), str(nvcc.resolve()), str(include),
                                    str(lib), record]).encode()).hexdigest()[:16]
    built = cache_dir() / "kernel-trace" / key / LIBRARY
    return built, lambda: _build(nvcc, include, lib, record, built)


def cupti_dirs(roots: list[Path]) -> tuple[Path, Path]:
    """CUPTI's header and library folders in the first toolkit of ``roots`` that has them:
    under extras/CUPTI (the toolkit installer's layout), else beside the toolkit's own."""
    for root in roots:
        pairs = [(root / "extras" / "CUPTI" / "include", root / "extras" / "CUPTI" / "lib64"),
                 (root / "include", root / "lib64"),
                 *((target / "include", target / "lib") for target in
                   sorted((root / "targets").glob("*")))]
        for include, lib in pairs:
            if (include / "cupti.h").is_file() and any(lib.glob("libcupti.so*")):
                return include, lib
    raise KernelTraceUnavailable(f"no CUDA toolkit here has CUPTI (cupti.h and libcupti.so; "
                                 f"looked in {', '.join(map(str, roots)) or 'none found'})")


def kernel_record(include: Path) -> str:
    """The newest kernel record this CUPTI declares (``CUpti_ActivityKernel12``): the layout
    its library writes. Older ones move to a header of their own as they are deprecated."""
    try:
        text = (include / "cupti_activity.h").read_text(errors="replace")
    except OSError as exc:
        raise KernelTraceUnavailable(f"cannot read CUPTI's cupti_activity.h: "
                                     f"{exc.strerror}") from None
    versions = [int(n) for n in KERNEL_RECORD.findall(text)]
    if not versions:
        raise KernelTraceUnavailable("CUPTI's cupti_activity.h declares no kernel record")
    return f"CUpti_ActivityKernel{max(versions)}"


def _build(nvcc: Path, include: Path, lib: Path, record: str, built: Path) -> None:
    build_library(nvcc, [f"-DKERNEL_RECORD={record}", f"-I{include}"], SOURCE,
                  [f"-L{lib}", "-lcupti", "-ldl", "-Xlinker", f"-rpath={lib}"], built,
                  "CUPTI's recorder")


def build_library(nvcc: Path, flags: list[str], source: Path, libraries: list[str],
                  built: Path, what: str) -> None:
    """nvcc ``source`` into the shared library ``built``, written whole or not at all (a
    concurrent build's library is never seen half-written); KernelTraceUnavailable says
    why ``what`` could not be built."""
    built.parent.mkdir(parents=True, exist_ok=True)
    partial = built.with_name(f".{built.name}.{os.getpid()}")
    args = [str(nvcc), "-shared", "-O2", "-std=c++17", "-Xcompiler", "-fPIC", *flags,
            str(source), *libraries, "-o", str(partial)]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        partial.unlink(missing_ok=True)
        raise KernelTraceUnavailable(f"nvcc could not build {what}: {exc}") from None
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        first = next((line for line in done.stderr.splitlines() if "error" in line),
                     done.stderr.strip()[:200])
        raise KernelTraceUnavailable(f"nvcc could not build {what}: {first}")
    shutil.move(partial, built)
