"""The interconnect step of `rooflint calibrate` (measure/interconnect.py) where no GPU is:
its sweep's sizes and counts, bus bandwidths from made-up timings, the skip lines of a
host with one GPU or no PyTorch, and its ranks stood in for by small programs (their
environment, a rank that fails, ranks that never finish). The sweep itself runs on two
GPUs or more: tests/gpu/test_interconnect_sweep.py."""

from __future__ import annotations

import json
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from rooflint.analysis.collectives import Collective
from rooflint.measure import interconnect
from rooflint.measure.interconnect import (COLLECTIVES, SIZES, Timed, bus_steps, count_of,
                                           link_words)
from rooflint.measure.unavailable import Unavailable

GIB = 1 << 30


def bus_steps_of_a_made_up_sweep(gpus: int = 2) -> list[interconnect.BusStep]:
    """The steps of a sweep whose every call took 20 us plus its operation at 400 GB/s of
    algorithm bandwidth: the largest size comes closest."""
    timed = [Timed(c, count_of(c, size, gpus), 20e-6 + size / 400e9)
             for c in COLLECTIVES for size in SIZES]
    return bus_steps(timed, gpus, link_words(18))


def test_the_sweep_is_64_kib_to_1_gib_by_four_of_four_collectives():
    assert SIZES == (64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, GIB)
    assert COLLECTIVES == (Collective.ALL_REDUCE, Collective.ALL_GATHER,
                           Collective.REDUCE_SCATTER, Collective.ALL_TO_ALL)


@pytest.mark.parametrize("collective, gpus, count", [
    (Collective.ALL_REDUCE, 8, GIB // 4),            # every element
    (Collective.ALL_GATHER, 8, GIB // 4 // 8),       # NCCL's sendcount: a rank's share
    (Collective.REDUCE_SCATTER, 2, GIB // 4 // 2),
    (Collective.ALL_TO_ALL, 3, GIB // 4 // 3),       # what three ranks share evenly
])
def test_a_calls_count_is_ncclss_for_an_operation_of_the_size(collective, gpus, count):
    assert count_of(collective, GIB, gpus) == count


def test_each_timing_becomes_its_bus_bandwidth_and_size():
    """On 8 GPUs: a 1 GiB all-reduce in 4 ms is 268 GB/s of algorithm bandwidth, x 7/4;
    an all-gather of 2^25 float32 a rank is 1 GiB in all, in 3 ms, x 7/8."""
    steps = bus_steps([Timed("all-reduce", GIB // 4, 4e-3), Timed("all-gather", GIB // 32, 3e-3)],
                      8, "NVLink, 18 links a GPU")
    assert [(s.collective, s.size, s.gpus) for s in steps] == [("all-reduce", GIB, 8),
                                                               ("all-gather", GIB, 8)]
    assert steps[0].value == pytest.approx(GIB / 4e-3 * 7 / 4)
    assert steps[1].value == pytest.approx(GIB / 3e-3 * 7 / 8)
    assert {s.ceiling for s in steps} == {"interconnect"}
    assert steps[0].link == "NVLink, 18 links a GPU" and "CUDA events" in steps[0].method


def test_nvml_says_what_links_the_gpus(monkeypatch):
    """An H100's or H200's 18 NVLinks, one of them down here; NVML refuses the rest."""
    import pynvml
    from rooflint.measure.nvml import Nvml

    def state(handle, link):
        if link >= 18:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return pynvml.NVML_FEATURE_DISABLED if link == 3 else pynvml.NVML_FEATURE_ENABLED
    monkeypatch.setattr(pynvml, "nvmlDeviceGetNvLinkState", state)
    nvml = Nvml.__new__(Nvml)
    nvml.handle = "GPU 0"
    assert nvml.active_nvlinks() == 17
    assert link_words(18) == "NVLink, 18 links a GPU"
    assert link_words(0) == "no NVLink (NVML reports none up)"
    assert link_words(None) == ""


def test_one_gpu_or_no_pytorch_or_no_nccl_skips_the_step_saying_why(monkeypatch):
    with pytest.raises(Unavailable, match="^needs 2 GPUs or more, and this host shows 1$"):
        interconnect.steps(1, "")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(Unavailable, match="^PyTorch is not installed .*; the interconnect's "
                                          "collectives are measured through it$"):
        interconnect.steps(2, "")
    no_nccl = types.SimpleNamespace(distributed=types.SimpleNamespace(
        is_available=lambda: True, is_nccl_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", no_nccl)
    with pytest.raises(Unavailable, match="this PyTorch has no NCCL"):
        interconnect.steps(2, "")


def _ranks_stood_in(monkeypatch, code: str) -> None:
    """Each rank a ``python -c`` running ``code``, with ``rank``, ``ranks`` and ``folder``
    (a Path) set, as rank_command's arguments give them."""
    prelude = ("import json, os, sys, time; from pathlib import Path; "
               "rank, ranks, folder = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])\n")
    monkeypatch.setattr(interconnect, "rank_command", lambda rank, ranks, folder: [
        sys.executable, "-c", prelude + textwrap.dedent(code), str(rank), str(ranks),
        str(folder)])


def test_the_ranks_run_with_multicast_off_and_rank_0s_timings_are_the_sweeps(monkeypatch,
                                                                             tmp_path):
    seen = tmp_path / "seen"
    _ranks_stood_in(monkeypatch, f"""
        names = {sorted(interconnect.NO_MULTICAST)!r}
        Path({str(seen)!r} + str(rank)).write_text(json.dumps([os.environ[n] for n in names]))
        if rank == 0:
            (folder / {interconnect.TIMINGS!r}).write_text(json.dumps(
                [{{"collective": "all-reduce", "count": 1 << 28, "seconds": 4e-3}}]))
    """)
    assert interconnect.sweep_in_processes(4) == [Timed("all-reduce", 1 << 28, 4e-3)]
    expected = [interconnect.NO_MULTICAST[n] for n in sorted(interconnect.NO_MULTICAST)]
    assert [json.loads(Path(f"{seen}{rank}").read_text()) for rank in range(4)] == \
        [expected] * 4


def test_a_failing_rank_stops_the_others_and_says_its_last_words(monkeypatch):
    _ranks_stood_in(monkeypatch, """
        if rank == 1:
            print("NCCL WARN something", file=sys.stderr)
            print("torch.distributed.DistBackendError: NCCL error: unhandled system error",
                  file=sys.stderr)
            sys.exit(3)
        time.sleep(60)
    """)
    began = time.monotonic()
    with pytest.raises(Unavailable, match=r"^rank 1 failed \(exit 3\): torch.distributed."
                                          r"DistBackendError: NCCL error: unhandled system "
                                          r"error$"):
        interconnect.sweep_in_processes(2)
    assert time.monotonic() - began < 30


def test_ranks_that_never_finish_are_stopped_at_the_timeout(monkeypatch):
    monkeypatch.setattr(interconnect, "TIMEOUT_S", 1.0)
    _ranks_stood_in(monkeypatch, "time.sleep(60)")
    with pytest.raises(Unavailable, match="had not finished after 1 s"):
        interconnect.sweep_in_processes(2)
