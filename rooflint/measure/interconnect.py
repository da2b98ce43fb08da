"""The interconnect's roof, for `rooflint calibrate` (issue 49): NCCL's all-reduce,
all-gather, reduce-scatter and all-to-all over every GPU of the host, through
torch.distributed, one process per GPU, at a sweep of sizes from 64 KiB to 1 GiB. Each
size is called WARMUP times, then CALLS times between two CUDA events; a call's time is
the slowest rank's mean, its bus bandwidth nccl-tests' (analysis/collectives.py), and each
collective's best over the sweep is its roof (formats/calibration.interconnect_of).

The ranks are this module run once per GPU (``python -m rooflint.measure.interconnect RANK
RANKS FOLDER``), meeting through a file in FOLDER, where rank 0 writes the timings; the
worker that runs the calibration waits for them at most TIMEOUT_S, so a hung NCCL costs
this step, not the calibration. NVLink SHARP's multicast is off in them (NO_MULTICAST),
as it is on the machines rooflint is measured on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from rooflint.analysis.collectives import Collective, bus_bandwidth, operation_bytes
from rooflint.formats.calibration import INTERCONNECT
from rooflint.measure.unavailable import Unavailable, import_torch

COLLECTIVES = (Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER,
               Collective.ALL_TO_ALL)
SIZES = tuple(1 << bits for bits in range(16, 31, 2))      # 64 KiB to 1 GiB, by four
ELEMENT_BYTES = 4                                           # float32
WARMUP, CALLS = 5, 20
TIMEOUT_S = 300.0
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}
METHOD = (f"NCCL through torch.distributed, float32, one process per GPU; the mean of "
          f"{CALLS} calls after {WARMUP}, between CUDA events, the slowest rank's")
RENDEZVOUS, TIMINGS = "rendezvous", "timings.json"


@dataclass
class Timed:
    """One size of the sweep: NCCL's count of one call, and its time."""

    collective: str
    count: int
    seconds: float


@dataclass
class BusStep:
    """A figure of the sweep as the worker reports a calibration step (calibrate.Step's
    fields, and the collective's own), for formats/calibration.interconnect_of."""

    ceiling: str
    method: str
    value: float                # the bus bandwidth, bytes/s
    sm_clock_mhz: None
    collective: str
    size: int                   # bytes: the operation's (nccl-tests' S)
    gpus: int
    link: str


def steps(gpus: int, link: str) -> list[BusStep]:
    """The sweep over ``gpus`` GPUs (linked as ``link`` says), or Unavailable saying why
    not: one GPU, no PyTorch or no NCCL in it, a rank that failed or never finished."""
    if gpus < 2:
        raise Unavailable(f"needs 2 GPUs or more, and this host shows {gpus}")
    torch = import_torch("the interconnect's collectives are")
    if not (torch.distributed.is_available() and torch.distributed.is_nccl_available()):
        raise Unavailable("this PyTorch has no NCCL (torch.distributed.is_nccl_available())")
    return bus_steps(sweep_in_processes(gpus), gpus, link)


def bus_steps(timed: list[Timed], gpus: int, link: str) -> list[BusStep]:
    """Each timing as its bus bandwidth and the operation's size."""
    return [BusStep(INTERCONNECT, METHOD,
                    bus_bandwidth(Collective(t.collective), t.count, ELEMENT_BYTES, gpus,
                                  t.seconds),
                    None, t.collective,
                    operation_bytes(Collective(t.collective), t.count, ELEMENT_BYTES, gpus),
                    gpus, link)
            for t in timed]


def link_words(links: int | None) -> str:
    """What links the GPUs, from the NVLinks NVML says are up on the first (None: no NVML)."""
    if links is None:
        return ""
    return f"NVLink, {links} links a GPU" if links else "no NVLink (NVML reports none up)"


def count_of(collective: str, size: int, ranks: int) -> int:
    """NCCL's count for a call of ``collective`` of about ``size`` bytes over ``ranks``:
    per rank where NCCL's is (operation_bytes), so that the operation is ``size`` or just
    under it."""
    elements = size // ELEMENT_BYTES
    return elements if collective == Collective.ALL_REDUCE else elements // ranks


def rank_command(rank: int, ranks: int, folder: Path) -> list[str]:
    return [sys.executable, "-m", __name__, str(rank), str(ranks), str(folder)]


def sweep_in_processes(gpus: int) -> list[Timed]:
    """The sweep, one process per GPU (rank_command), each with NO_MULTICAST; rank 0's
    timings, or Unavailable with the first failing rank's last words."""
    with tempfile.TemporaryDirectory(prefix="rooflint-interconnect-") as scratch:
        folder = Path(scratch)
        errors = [folder / f"rank{rank}.err" for rank in range(gpus)]
        ranks = []
        for rank, error in enumerate(errors):
            with open(error, "w") as said:
                ranks.append(subprocess.Popen(rank_command(rank, gpus, folder),
                                              stdout=subprocess.DEVNULL, stderr=said,
                                              env={**os.environ, **NO_MULTICAST}))
        failed = _wait_for(ranks, errors)
        if failed:
            raise Unavailable(failed)
        return [Timed(**t) for t in json.loads((folder / TIMINGS).read_text())]


def _wait_for(ranks: list[subprocess.Popen], errors: list[Path]) -> str | None:
    """Until every rank has ended; why the sweep failed (a rank's failure, every rank
    then stopped, or TIMEOUT_S passed), None where none did."""
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while any(p.poll() is None for p in ranks):
            failed = next((r for r, p in enumerate(ranks) if p.poll()), None)
            if failed is not None:
                return _failure(failed, ranks[failed].returncode, errors[failed])
            if time.monotonic() > deadline:
                return f"NCCL's collectives had not finished after {TIMEOUT_S:.0f} s"
            time.sleep(0.1)
        failed = next((r for r, p in enumerate(ranks) if p.returncode), None)
        return None if failed is None else _failure(failed, ranks[failed].returncode,
                                                    errors[failed])
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
                p.wait()


def _failure(rank: int, code: int, error: Path) -> str:
    said = [line for line in error.read_text(errors="replace").splitlines() if line.strip()]
    return f"rank {rank} failed (exit {code}): {said[-1] if said else 'no output'}"


def main(argv: list[str]) -> int:
    """One rank of the sweep (rank_command): GPU RANK of RANKS, meeting the others in
    FOLDER; rank 0 writes the timings there."""
    rank, ranks, folder = int(argv[0]), int(argv[1]), Path(argv[2])
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{folder / RENDEZVOUS}", rank=rank,
                            world_size=ranks)
    try:
        timed = [Timed(c, count_of(c, size, ranks),
                       _seconds(torch, dist, _call(torch, dist, c, count_of(c, size, ranks),
                                                   ranks)))
                 for c in COLLECTIVES for size in SIZES]
    finally:
        dist.destroy_process_group()
    if rank == 0:
        (folder / TIMINGS).write_text(json.dumps([asdict(t) for t in timed]))
    return 0


def _call(torch: Any, dist: Any, collective: str, count: int, ranks: int
          ) -> Callable[[], Any]:
    """One call of ``collective`` with NCCL's ``count``, its buffers made here."""
    def buffer(elements: int) -> Any:
        return torch.ones(elements, dtype=torch.float32, device="cuda")
    if collective == Collective.ALL_REDUCE:
        data = buffer(count)
        return lambda: dist.all_reduce(data)
    whole, part = buffer(count * ranks), buffer(count)
    if collective == Collective.ALL_GATHER:
        return lambda: dist.all_gather_into_tensor(whole, part)
    if collective == Collective.REDUCE_SCATTER:
        return lambda: dist.reduce_scatter_tensor(part, whole)
    received = torch.empty_like(whole)
    return lambda: dist.all_to_all_single(received, whole)


def _seconds(torch: Any, dist: Any, call: Callable[[], Any]) -> float:
    """One call's time: WARMUP calls, the ranks met, then the mean of CALLS between two
    CUDA events (a collective's kernels run on NCCL's stream, which the caller's stream
    waits on), the slowest rank's."""
    for _ in range(WARMUP):
        call()
    torch.cuda.synchronize()
    dist.barrier()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(CALLS):
        call()
    end.record()
    end.synchronize()
    mean = torch.tensor([start.elapsed_time(end) * 1e-3 / CALLS], device="cuda")
    dist.all_reduce(mean, op=dist.ReduceOp.MAX)
    return float(mean.item())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
