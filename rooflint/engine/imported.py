"""`rooflint import`: a profile's result from files a user already has, without running
anything again: a PyTorch profiler trace as pass 1 (every launch's time, the program's
timeline, the operators and lines behind each kernel, as far as it was recorded), an
Nsight Compute report (``.ncu-rep``, or its raw page as CSV) as pass 2, or both.

The files are told apart by what they hold (read_files), each judged by the code that
judges a profile's passes: the trace's kernels as engine/program.traced_kernels finds
them, the report's launches met with them by identity (judge/launch_matching.py), each
kernel made a result by engine/program.profile_result. A report alone is its own pass 1:
each kernel timed by the launches Nsight Compute replayed. The report's rows are made
into rooflint's metrics as far as they allow (measure/imported_report.py): a kernel
whose report lacks its time, DRAM bytes or FLOPs gets no roofline point, and every
kernel's result names the metrics its report lacked.

The roofs are the datasheet's: a calibration describes the GPU `rooflint calibrate` ran
on, and the files may come from another.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from dataclasses import dataclass
from pathlib import Path

from rooflint.analysis.counters import Counters
from rooflint.common.errors import RooflintError
from rooflint.common.paths import portable_path
from rooflint.common.units import format_bytes
from rooflint.common.vocabularies import CountersMode
from rooflint.engine.named_gpu import check_gpu_option
from rooflint.engine.program import (PassOne, counters_by_identity, device_from,
                                     device_from_trace, kernel_metrics, ncu_timed_kernels,
                                     profile_result, traced_kernels)
from rooflint.formats.gpus import load_specs
from rooflint.formats.ncu_log import BLOCK, DURATION, GRID, KERNEL_NAME, parse_rows
from rooflint.formats.results import RunResult
from rooflint.formats.settings import DEFAULT_COVERAGE, Settings
from rooflint.formats.trace_events import CALL_TIME, KERNEL, recorded_without
from rooflint.judge.kernel_choice import choose
from rooflint.judge.kernel_times import Identity, KernelTime
from rooflint.judge.launch_matching import launches_by_identity, missed
from rooflint.judge.measurement import device_spec
from rooflint.measure.imported_report import (filled, missing_metrics, point_lacks,
                                              report_rows, with_derived)
from rooflint.measure.program import MAX_TRACE_BYTES, Filters
from rooflint.measure.source_report import REPORT_SUFFIX
from rooflint.output.profile_words import (imported_missed_words, point_lacks_words,
                                           trace_alone_words)

# A report's raw page has these columns whatever its sections: each launch's kernel, its
# launch shape (what pass 1's kernels are met by) and its duration.
NEEDED_COLUMNS = (KERNEL_NAME, GRID, BLOCK, DURATION)
CSV_HEADER = '"ID",'
DETAILS_PAGE = "Metric Name"       # a column of the details page, which no raw page has
GZIP_MAGIC = b"\x1f\x8b"           # tensorboard_trace_handler(use_gzip=True)'s .json.gz
DRIVER_UNKNOWN = "unknown"         # neither file names the NVIDIA driver as NVML does


@dataclass
class ImportedFiles:
    """What the files given hold: a trace (PyTorch's profiler's chrome-trace JSON), an
    Nsight Compute report's launch rows, each with the path it came from."""

    trace: dict | None = None
    trace_path: Path | None = None
    rows: list[dict] | None = None
    report_path: Path | None = None

    @property
    def paths(self) -> list[Path]:
        return [p for p in (self.trace_path, self.report_path) if p is not None]


def read_files(paths: list[Path]) -> ImportedFiles:
    """The trace and the report among ``paths`` (at most one of each, in any order),
    each read and checked; one line naming the file where one is neither, or lacks what
    rooflint needs."""
    files = ImportedFiles()
    for path in paths:
        content = read_file(path)
        if isinstance(content, dict):
            if files.trace_path:
                raise RooflintError(f"import takes one trace: {files.trace_path} and {path} "
                                    f"are both PyTorch profiler traces")
            files.trace, files.trace_path = content, path
        else:
            if files.report_path:
                raise RooflintError(f"import takes one report: {files.report_path} and "
                                    f"{path} are both Nsight Compute reports")
            files.rows, files.report_path = content, path
    return files


def read_file(path: Path) -> dict | list[dict]:
    """One file: the parsed trace, or the report's launch rows."""
    if not path.is_file():
        raise RooflintError(f"{path}: {'not a file' if path.exists() else 'no such file'}")
    if path.suffix == REPORT_SUFFIX:
        return checked_rows(path, report_rows(path))
    size = path.stat().st_size
    if size > MAX_TRACE_BYTES:
        raise RooflintError(f"{path}: {format_bytes(size)}, more than rooflint reads "
                            f"({format_bytes(MAX_TRACE_BYTES)})")
    data = path.read_bytes()
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            raise RooflintError(f"{path}: a gzip file that does not decompress") from None
    text = data.decode("utf-8", errors="replace")
    if text.lstrip().startswith("{"):
        return checked_trace(path, text)
    if any(line.startswith(CSV_HEADER) for line in text.splitlines()):
        return checked_rows(path, csv_rows(path, text))
    raise RooflintError(f"{path}: neither an Nsight Compute report (.ncu-rep, or its raw page: "
                        f"ncu -i REPORT.ncu-rep --csv --page raw) nor a PyTorch profiler trace "
                        f"(chrome-trace JSON)")


def checked_trace(path: Path, text: str) -> dict:
    """The trace in ``text``, with kernels in it, their times numbers."""
    try:
        trace = json.loads(text)
    except (ValueError, RecursionError):
        raise RooflintError(f"{path}: not JSON, so not a PyTorch profiler trace") from None
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise RooflintError(f"{path}: JSON, but not a PyTorch profiler trace (no traceEvents)")
    for i, event in enumerate(trace["traceEvents"]):      # what every reader of it assumes
        if not isinstance(event, dict) or not isinstance(event.get("args", {}), dict):
            what = f"args {str(event['args'])[:40]!r}" if isinstance(event, dict) \
                else f"{str(event)[:40]!r}"
            raise RooflintError(f"{path}: traceEvents[{i}] is {what}, not an object")
    kernels = [e for e in trace["traceEvents"] if isinstance(e, dict) and e.get("cat") == KERNEL
               and isinstance(e.get("args"), dict) and "grid" in e["args"]]
    if not kernels:
        raise RooflintError(f"{path}: a trace with no GPU kernel in it (record it with "
                            f"ProfilerActivity.CUDA)")
    for kernel in kernels:
        for field, value in (("ts", kernel.get("ts", 0.0)), ("dur", kernel.get("dur", 0.0)),
                             (f"args.{CALL_TIME}", kernel["args"].get(CALL_TIME, 0.0))):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise RooflintError(f"{path}: kernel {str(kernel.get('name', ''))[:60]!r} has "
                                    f"{field} {str(value)[:40]!r}, not a number of microseconds")
    return trace


def csv_rows(path: Path, text: str) -> list[dict]:
    """The launch rows of an exported raw page; the details page is named as such."""
    header = next(line for line in text.splitlines() if line.startswith(CSV_HEADER))
    if f'"{DETAILS_PAGE}"' in header:
        raise RooflintError(f"{path}: Nsight Compute's details page; rooflint reads the raw "
                            f"page: ncu -i REPORT.ncu-rep --csv --page raw")
    return parse_rows(text)


def checked_rows(path: Path, rows: list[dict]) -> list[dict]:
    """A report's rows, each with the columns rooflint needs and the metrics it derives."""
    if not rows:
        raise RooflintError(f"{path}: an Nsight Compute report with no kernel launch in it")
    lacking = [c for c in NEEDED_COLUMNS if any(c not in row for row in rows)]
    if lacking:
        raise RooflintError(f"{path}: an Nsight Compute report without the columns rooflint "
                            f"needs: {', '.join(lacking)}")
    return [with_derived(row) for row in rows]


def import_result(paths: list[Path], gpu: str | None) -> RunResult:
    """The files' kernels judged as a profile's, in a result document marked as imported
    (its settings name the files)."""
    check_gpu_option(gpu)
    files = read_files(paths)
    rows = files.rows or []
    one = (traced_kernels(files.trace, Filters(), f"the trace {files.trace_path}")
           if files.trace is not None else ncu_timed_kernels(rows))
    chosen = imported_choice(one.kernels, rows)
    report = ReportCounters.of(chosen, rows, one.kernels)
    device = (device_from(rows, DRIVER_UNKNOWN) if rows else
              device_from_trace(files.trace or {}, DRIVER_UNKNOWN))
    spec = device_spec(device, gpu, load_specs())
    missing = report.why_none(chosen, rows, files.report_path is not None)
    first = files.trace_path or files.report_path
    result = profile_result(first.name, portable_path(first.parent), one.kernels, chosen,
                            report.counters, spec, device, None, imported_settings(files, one),
                            None, missing, report.missing, timing=one.timing)
    return result


def imported_choice(kernels: list[KernelTime], rows: list[dict]) -> list[KernelTime]:
    """The kernels given a result: those covering DEFAULT_COVERAGE of the GPU time (as
    profile chooses), and every one the report has launches of, the most time first."""
    covered = {k.identity for k in choose(kernels, DEFAULT_COVERAGE)}
    reported = set(launches_by_identity(kernels, rows, kernels, loosely=False))
    return [k for k in kernels if k.identity in covered | reported]


@dataclass
class ReportCounters:
    """The report's counters of the chosen kernels, and the metrics each one's launches
    lacked (those without which there is no roofline point leave it no counters)."""

    counters: dict[Identity, Counters]
    missing: dict[Identity, list[str]]

    @classmethod
    def of(cls, chosen: list[KernelTime], rows: list[dict],
           kernels: list[KernelTime]) -> "ReportCounters":
        mine = launches_by_identity(chosen, rows, kernels, loosely=False)
        # named as Hopper's chip names them (listed None): the report's own chip is known
        # here only by its rows, and an import needs no Nsight Compute to ask it
        missing = {k.identity: missing_metrics(mine[k.identity], kernel_metrics(k, None))
                   for k in chosen if k.identity in mine}
        counters = counters_by_identity(chosen, [filled(row) for row in rows], kernels,
                                        loosely=False)
        return cls({identity: c for identity, c in counters.items()
                    if not point_lacks(missing[identity])}, missing)

    def why_none(self, chosen: list[KernelTime], rows: list[dict],
                 has_report: bool) -> dict[Identity, str]:
        """Why each chosen kernel without counters has none."""
        return {k.identity: (point_lacks_words(point_lacks(self.missing[k.identity]))
                             if k.identity in self.missing else
                             imported_missed_words(k, missed(k, rows)) if has_report else
                             trace_alone_words())
                for k in chosen if k.identity not in self.counters}


def imported_settings(files: ImportedFiles, one: PassOne) -> Settings:
    """How the result was made: from which files, what the trace was recorded without,
    whose times, and the autotuners' trials left out."""
    return Settings(
        counters=CountersMode.NCU if files.rows else CountersMode.OFF,
        imported=[str(p) for p in files.paths],
        trace_lacks=(recorded_without(files.trace, one.launches) or None
                     if files.trace is not None else None),
        pass1_timer="torch" if files.trace is not None else "ncu",
        autotuning_launches=one.tuning.launches, autotuning_s=one.tuning.gpu_s,
        autotuners=list(one.tuning.tuners) or None, unrecorded=one.unrecorded or None)
