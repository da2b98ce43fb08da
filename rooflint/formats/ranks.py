"""The ranks of a program that ran in several processes (a launcher's: torchrun, mpirun,
srun), as pass 1's kernel records name them: each process's rank, host and GPU, and the
trace of one process alone.

A rank's own document (a profile of its kernels only) is what a job profiled on several
machines is merged from (judge/ranks.py): each node profiles its ranks, and the documents
meet afterwards. A rank is the number its launcher gave the process (RANK and its MPI and
Slurm names, read by the recorder); a process no launcher numbered is known by its pid.

Pure: a parsed trace in, ranks and traces out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflint.common.sense import Count

# Where launchers put a process's rank: torchrun, Open MPI, MPICH, PMIx, Slurm (the
# recorder, measure/kernel_trace_injection.cpp, reads the same, in this order).
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


@dataclass(frozen=True)
class RankInfo:
    """One process of a job: what the launcher called it and where it ran."""

    process: int                # its pid on its host (-1: not known)
    rank: Count | None = None   # its launcher's number; None where none was set
    host: str = ""
    device: Count | None = None  # the CUDA device its kernels ran on (its ordinal there)

    @property
    def label(self) -> str:
        """``rank 1``, or ``process 4242`` for a process no launcher numbered."""
        return f"rank {self.rank}" if self.rank is not None else f"process {self.process}"


def ranks_of(trace: dict[str, Any]) -> list[RankInfo]:
    """The processes whose kernels ``trace`` holds, by rank (then pid), each with the
    device its first kernel ran on."""
    named = {p["pid"]: p for p in trace.get("processes", [])}
    devices: dict[int, int | None] = {}
    for event in trace.get("traceEvents", []):
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if event.get("cat") == "kernel" and "process" in args:
            devices.setdefault(args["process"], args.get("device"))
    ranks = [RankInfo(process=pid, rank=named.get(pid, {}).get("rank"),
                      host=named.get(pid, {}).get("host", ""), device=device)
             for pid, device in devices.items()]
    return sorted(ranks, key=lambda r: (r.rank is None, r.rank or 0, r.process))


def trace_of(trace: dict[str, Any], rank: RankInfo) -> dict[str, Any]:
    """``trace`` with only ``rank``'s kernels: the trace one process alone would have left."""
    mine = [e for e in trace.get("traceEvents", [])
            if (e.get("args") or {}).get("process") == rank.process]
    return {**trace, "traceEvents": mine,
            "processes": [p for p in trace.get("processes", []) if p["pid"] == rank.process]}


def rank_path(job: Path, rank: RankInfo | None) -> Path:
    """Where a rank's own document goes beside its job's ``job``: ``r.json`` ->
    ``r.rank1.json`` (``r.process4242.json`` for a process no launcher numbered)."""
    assert rank is not None
    tag = f"rank{rank.rank}" if rank.rank is not None else f"process{rank.process}"
    return job.with_name(f"{job.stem}.{tag}{job.suffix}")


# Where the bootstrap (measure/trace_bootstrap.py, which imports nothing of rooflint) writes
# which process a rank's PyTorch trace is of, at the trace's top level: {"pid", "rank",
# "host"}, as JSON text.
PROCESS_KEY = "rooflint_process"
# Each rank's correlation ids are moved this far past the last rank's: one trace's ids tie
# its kernels to their launches, and two ranks' traces number theirs alike.
CORRELATION_SPAN = 1 << 40
BASE_TIME = "baseTimeNanoseconds"


def merged(traces: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranks' own PyTorch traces as one trace of the job, as the recorder's records
    make it (kernel_records.read_records): each event marked with its process, each
    rank's correlation ids apart from the others', its times on the first trace's clock
    (PyTorch's profiler writes them from the process's own base time,
    ``baseTimeNanoseconds``), the processes listed; the first trace's metadata and
    devices kept (the ranks ran one program on one kind of GPU)."""
    events: list[Any] = []
    processes = []
    first = traces[0] if traces else {}
    for i, trace in enumerate(traces):
        process = _process_of(trace)
        pid = process.get("pid", -1 - i)
        processes.append({"pid": pid, "rank": process.get("rank"),
                          "host": process.get("host", "")})
        later_us = (_base_ns(trace) - _base_ns(first)) / 1000
        for event in trace.get("traceEvents", []):
            if not isinstance(event, dict):
                continue
            args = event.get("args") if isinstance(event.get("args"), dict) else {}
            moved = {"correlation": args["correlation"] + i * CORRELATION_SPAN} \
                if isinstance(args.get("correlation"), int) else {}
            at = {"ts": event["ts"] + later_us} \
                if later_us and isinstance(event.get("ts"), (int, float)) else {}
            events.append({**event, **at, "args": {**args, **moved, "process": pid}})
    return {**{k: v for k, v in first.items() if k not in ("traceEvents", PROCESS_KEY)},
            "traceEvents": events, "processes": processes}


def _base_ns(trace: dict[str, Any]) -> int:
    """The time a PyTorch trace's times count from, in nanoseconds (0 where not written)."""
    base = trace.get(BASE_TIME)
    return base if isinstance(base, int) else 0


def _process_of(trace: dict[str, Any]) -> dict[str, Any]:
    """What the bootstrap wrote of a trace's process (PyTorch's profiler keeps metadata as
    the text it was given); nothing where it wrote none or what it holds is not a record."""
    value = trace.get(PROCESS_KEY)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}
