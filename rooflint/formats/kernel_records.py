"""The kernel records CUPTI's activity API wrote for a program (pass 1 of `rooflint profile`
for a program PyTorch's profiler cannot enter: measure/kernel_trace_injection.cpp, one file
per process), as a trace in the shape PyTorch's profiler writes, so one reader
(trace_events.py) serves both.

A file's lines, tab-separated: a header (MAGIC, the format's version, the process id, which
each of its kernels keeps as ``process``, then its launcher's rank or ``-`` and its host,
which the trace's ``processes`` keep: formats/ranks.py); ``K``
per kernel (start and end in ns, device, stream, grid, block, correlation id, demangled
name); ``D`` per device used (SMs, memory, compute capability, name); ``L`` with the
records CUPTI dropped, written last; ``E`` when CUPTI refused to record.

Pure: the files' texts in, a trace out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAGIC = "rooflint-kernel-trace"
VERSION = "1"
KERNEL, DEVICE, LAST, REFUSED = "K", "D", "L", "E"
KERNEL_FIELDS = 13
DEVICE_FIELDS = 7


class UnreadableRecords(Exception):
    """A file that is not the injection's: the trace cannot be trusted."""


@dataclass
class KernelRecords:
    """What the processes' files say together."""

    trace: dict[str, Any]                       # {"traceEvents": [...], "deviceProperties": [...]}
    pids: list[int] = field(default_factory=list)   # the processes that launched a kernel
    unfinished: int = 0                         # files with no LAST line: a process that died
    dropped: int = 0                            # records CUPTI dropped (its buffers were full)
    refused: list[str] = field(default_factory=list)   # CUPTI's refusals, one per process


def read_records(texts: list[str]) -> KernelRecords:
    """The kernels of every process's file, in one trace."""
    events: list[dict[str, Any]] = []
    processes: list[dict[str, Any]] = []
    devices: dict[int, dict[str, Any]] = {}
    records = KernelRecords({})
    for text in texts:
        lines = text.splitlines()
        if not lines or lines[0].split("\t")[:2] != [MAGIC, VERSION]:
            raise UnreadableRecords(f"not a {MAGIC} file of version {VERSION}")
        try:
            mine = [_kernel_event(parts) for parts in _lines_of(lines, KERNEL, KERNEL_FIELDS)]
            for parts in _lines_of(lines, DEVICE, DEVICE_FIELDS):
                devices[int(parts[1])] = _device(parts)
            last = _lines_of(lines, LAST, 2)
            records.dropped += sum(int(parts[1]) for parts in last)
        except ValueError as exc:
            raise UnreadableRecords(f"a line with a field that is not a number ({exc})") \
                from None
        if mine:
            records.pids.append(_pid(lines[0]))
            processes.append(_process(lines[0]))
            for event in mine:                # which process (a rank) launched it
                event["args"]["process"] = records.pids[-1]
        events += mine
        records.unfinished += not last
        records.refused += [parts[1] for parts in _lines_of(lines, REFUSED, 2)]
    records.trace = {"traceEvents": sorted(events, key=lambda e: e["ts"]),
                     "deviceProperties": list(devices.values()), "processes": processes}
    return records


def _pid(header: str) -> int:
    """The process id a file's header names (-1 where it names none that is a number)."""
    parts = header.split("\t")
    return int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else -1


def _process(header: str) -> dict[str, Any]:
    """The process a file's header names: its pid, its rank (None where its launcher set
    none, or a file from before ranks were written) and its host."""
    parts = header.split("\t")
    rank = parts[3] if len(parts) > 3 else ""
    return {"pid": _pid(header), "rank": int(rank) if rank.isdigit() else None,
            "host": parts[4] if len(parts) > 4 else ""}


def _lines_of(lines: list[str], kind: str, fields: int) -> list[list[str]]:
    """The lines of one kind, split; a line cut short (a process killed mid-write) is not."""
    found = []
    for line in lines[1:]:
        parts = line.split("\t", fields - 1)
        if parts[0] == kind and len(parts) == fields:
            found.append(parts)
    return found


def _kernel_event(parts: list[str]) -> dict[str, Any]:
    """A ``K`` line as PyTorch's profiler writes a kernel: microseconds, grid and block."""
    start, end, device, stream, *dims, correlation = (int(p) for p in parts[1:12])
    return {"ph": "X", "cat": "kernel", "name": parts[12], "ts": start / 1000,
            "dur": max(end - start, 0) / 1000,
            "args": {"device": device, "stream": stream, "grid": dims[:3],
                     "block": dims[3:], "correlation": correlation}}


def _device(parts: list[str]) -> dict[str, Any]:
    """A ``D`` line as PyTorch's profiler writes a device's properties."""
    ordinal, sms, memory, major, minor = (int(p) for p in parts[1:6])
    return {"id": ordinal, "name": parts[6], "numSms": sms, "totalGlobalMem": memory,
            "computeMajor": major, "computeMinor": minor}
