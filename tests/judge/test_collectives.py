"""Collectives on the interconnect's roof (issue 49, item 3), on the recorded trace of two
DDP ranks over NCCL on two H200s (pass 1's CUPTI records of examples/apps/ddp_train.py)
and the NCCL logs its two processes would have written (constructed to match it: see
their header): each rank's NCCL kernels matched to its calls, the job's collectives timed
by each call's shortest rank, their bus bandwidth against a roof, and what is left
unplaced. No two-GPU calibration is recorded yet: the roof here is a round 400 GB/s."""

from __future__ import annotations

import json
import lzma
from dataclasses import replace
from pathlib import Path

import pytest

from edges import REPO, rooflint
from rooflint.analysis.collectives import Collective
from rooflint.formats.calibration import BusRate, Interconnect
from rooflint.formats.collective_calls import CollectiveCalls, RankCollectives
from rooflint.formats.nccl_log import nccl_calls
from rooflint.formats.ranks import RankInfo, rank_path, ranks_of, trace_of
from rooflint.formats.results import read_result, write_result
from rooflint.judge import collectives as judge
from rooflint.judge.collectives import collective_kernels, placement, rank_collectives
from rooflint.judge.ranks import job_of
from rooflint.output.rank_view import NO_INTERCONNECT

FIXTURES = REPO / "tests" / "fixtures" / "ranks"
TRACE = FIXTURES / "h200x2-ddp-nccl-pass1-trace.json.xz"
JOB = REPO / "examples" / "profile" / "h200x2-profile-ddp-nccl.json"
ROOF = 400e9
H200X2 = Interconnect(gpus=2, link="NVLink, 18 links a GPU", method="made up for the tests",
                      roofs=[BusRate("all-reduce", 1 << 30, ROOF),
                             BusRate("all-gather", 1 << 30, ROOF)], sweep=[])
BUCKETS = (2_360_832, 7_087_872, 11_413_248)   # DDP's rebuilt buckets, in float32 elements


@pytest.fixture(scope="module")
def trace() -> dict:
    return json.loads(lzma.decompress(TRACE.read_bytes()))


def _calls(log: str = "nccl.vm.{pid}.log") -> dict[int, list]:
    return {pid: nccl_calls((FIXTURES / log.format(pid=pid)).read_text()) for pid in (890, 891)}


def _ranks(trace: dict, calls: dict[int, list], interconnect=H200X2) -> list[RankCollectives]:
    return [rank_collectives(calls[r.process], collective_kernels(trace_of(trace, r)),
                             interconnect) for r in ranks_of(trace)]


def _all_reduces(trace: dict, rank: RankInfo) -> list[float]:
    """A rank's all-reduce kernels' durations (us), in launch order, from the trace alone."""
    return [e["dur"] for e in sorted(trace_of(trace, rank)["traceEvents"],
                                     key=lambda e: e["args"]["correlation"])
            if e["name"].startswith("ncclDevKernel_AllReduce")]


def test_each_ranks_nccl_kernels_pair_one_to_one_with_the_calls_its_process_logged(trace):
    for rank, found in zip(ranks_of(trace), _ranks(trace, _calls())):
        assert found.unplaced == {} and found.interconnect == H200X2
        shapes = {(c.collective, c.datatype, c.count): c for c in found.calls}
        assert {shape: len(c.calls) for shape, c in shapes.items()} == {
            ("all-gather", "int64", 1): 1, ("broadcast", "int64", 140): 1,
            ("broadcast", "float32", 35_037_696): 1, ("all-reduce", "float32", 35_037_696): 1,
            ("broadcast", "int32", 53): 1, ("broadcast", "int32", 5): 1,
            ("all-reduce", "float32", BUCKETS[0]): 12, ("all-reduce", "float32", BUCKETS[1]): 36,
            ("all-reduce", "float32", BUCKETS[2]): 12, ("all-reduce", "float32", 1): 1}
        assert {c.comm for c in found.calls} == {0} and {c.ranks for c in found.calls} == {2}
        assert shapes["all-reduce", "float32", BUCKETS[0]].calls == list(range(6, 66, 5))
        first_step = shapes["all-reduce", "float32", 35_037_696]
        assert first_step.calls == [3]
        assert first_step.seconds == [pytest.approx(_all_reduces(trace, rank)[0] * 1e-6)]


def test_each_call_takes_its_shortest_ranks_time_the_rank_that_came_last_waited_least(trace):
    """Step 1's all-reduce of every gradient: rank 1 waited 109 ms in it for rank 0, whose
    own took 630 us; 140,150,784 bytes in 630 us is 222 GB/s of bus bandwidth (the factor
    2(n-1)/n is 1 on two ranks)."""
    rank_0, rank_1 = (_all_reduces(trace, r) for r in ranks_of(trace))
    job = placement(_ranks(trace, _calls()))
    placed = {(p.collective, p.datatype, p.count): p for p in job.collectives}
    first_step = placed[Collective.ALL_REDUCE, "float32", 35_037_696]
    assert (rank_0[0], rank_1[0]) == (pytest.approx(630.1, abs=0.1), pytest.approx(109059.8))
    assert first_step.seconds == pytest.approx(rank_0[0] * 1e-6)
    assert first_step.bus_bandwidth == pytest.approx(140_150_784 / (rank_0[0] * 1e-6))
    assert first_step.of_roof == pytest.approx(first_step.bus_bandwidth / ROOF)
    first_bucket = placed[Collective.ALL_REDUCE, "float32", BUCKETS[0]]
    shortest = sum(min(rank_0[i], rank_1[i]) for i in range(1, 61, 5)) * 1e-6
    assert first_bucket.calls == 12 and first_bucket.seconds == pytest.approx(shortest)
    assert first_bucket.bus_bandwidth == pytest.approx(BUCKETS[0] * 4 / (shortest / 12))
    assert job.collectives[0].count == BUCKETS[1]               # the most time first
    assert job.unplaced == {} and job.interconnect == H200X2


def test_a_broadcast_is_an_upper_bound_and_a_collective_without_a_roof_has_none(trace):
    """The parameters' broadcast at DDP's start: rank 1, the receiver, timed 177 us for
    140 MB, 793 GB/s, past any NVLink of an H200: the data was already in its buffers."""
    job = placement(_ranks(trace, _calls()))
    broadcast = next(p for p in job.collectives if p.collective is Collective.BROADCAST
                     and p.count == 35_037_696)
    assert broadcast.bus_bandwidth == pytest.approx(793e9, rel=1e-3) and broadcast.roof is None
    gather = next(p for p in job.collectives if p.collective is Collective.ALL_GATHER)
    assert gather.roof == H200X2.roofs[1]
    no_reduce_scatter = replace(H200X2, roofs=H200X2.roofs[:1])
    across_hosts = [RankCollectives([CollectiveCalls("all-reduce", "bfloat16", 1 << 20, 16, 0,
                                                     [0], [1e-3])], {}, H200X2)]
    assert placement(across_hosts).collectives[0].roof is None      # 16 ranks, 2 GPUs a host
    assert judge._roof(no_reduce_scatter, Collective.REDUCE_SCATTER, 2, 1 << 20) is None
    assert placement(_ranks(trace, _calls(), None)).interconnect is None


def test_a_call_smaller_than_any_the_calibration_swept_is_not_on_the_roof():
    """A DDP job's 4-byte all-reduce read 0 % of the roof NCCL reached at 1 GiB: below the
    sweep's smallest size (64 KiB here) a call's time is NCCL's latency, and it is placed
    on no roof; from that size on it is."""
    swept = replace(H200X2, sweep=[BusRate("all-reduce", size, ROOF / 4)
                                   for size in (1 << 16, 1 << 20, 1 << 30)])
    calls = [RankCollectives([CollectiveCalls("all-reduce", "float32", count, 2, 0, [0],
                                              [1e-5])], {}, swept)
             for count in (1, (1 << 14) - 1, 1 << 14, 1 << 18)]
    roofs = [placement([c]).collectives[0].roof for c in calls]
    assert roofs == [None, None, swept.roofs[0], swept.roofs[0]]
    assert [judge.latency_bound(swept, Collective.ALL_GATHER, 4)] == [False]   # not swept


def test_grouped_calls_leave_that_kinds_kernels_unplaced_and_the_rest_placed(trace, tmp_path):
    """Two all-reduces grouped (ncclGroupStart/End) launch one kernel: rank 0's log then
    holds 63 all-reduce calls for 62 kernels, and none of its all-reduces is placed."""
    text = (FIXTURES / "nccl.vm.890.log").read_text().splitlines()
    call = next(i for i, line in enumerate(text) if f"count {BUCKETS[0]} " in line)
    (tmp_path / "nccl.vm.890.log").write_text("\n".join([*text[:call + 1], *text[call:]]))
    (tmp_path / "nccl.vm.891.log").write_text((FIXTURES / "nccl.vm.891.log").read_text())
    calls = {pid: nccl_calls((tmp_path / f"nccl.vm.{pid}.log").read_text()) for pid in (890, 891)}
    rank_0, rank_1 = _ranks(trace, calls)
    assert rank_0.unplaced == {judge.UNPAIRED: 62} and rank_1.unplaced == {}
    assert {c.collective for c in rank_0.calls} == {"all-gather", "broadcast"}
    job = placement([rank_0, rank_1])
    assert job.unplaced == {judge.UNPAIRED: 62}
    first_step = next(p for p in job.collectives if p.count == 35_037_696
                      and p.collective is Collective.ALL_REDUCE)
    assert first_step.seconds == pytest.approx(0.1090598)      # rank 1's alone: it waited


def test_kernels_without_a_log_a_name_or_a_collective_are_counted_not_placed(trace):
    rank = ranks_of(trace)[0]
    kernels = collective_kernels(trace_of(trace, rank))
    assert rank_collectives(None, kernels, None).unplaced == {judge.NOT_READ: 67}
    assert rank_collectives([], kernels, None).unplaced == {judge.NO_LOG: 67}
    assert rank_collectives(_calls()[890], [], None) is None
    send = ("vm:890:890 [0] NCCL INFO Send: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4096 "
            "datatype 9 op 0 root 1 comm 0x5 [nranks=2] stream 0x7")
    sendrecv = {"cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                "ts": 1.0, "dur": 5.0, "args": {"correlation": 1}}
    generic = {**sendrecv, "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
               "args": {"correlation": 2}}
    found = rank_collectives(nccl_calls(send), [sendrecv, generic], None)
    assert found.calls == [] and found.unplaced == {judge.POINT_TO_POINT: 1, judge.UNNAMED: 1}


def _documents(trace: dict, tmp_path: Path, interconnect=H200X2, calls=None) -> list[Path]:
    """The recorded ranks' documents, each with its collectives (matched to ``calls``, by
    default the fixtures' logs), written to ``tmp_path``."""
    paths = []
    found_by_rank = _ranks(trace, calls or _calls(), interconnect)
    for rank, found in zip(ranks_of(trace), found_by_rank):
        document = read_result(rank_path(JOB, rank))
        document.collectives = found
        paths.append(rank_path(tmp_path / "r.json", rank))
        write_result(document, paths[-1])
    return paths


def test_a_ranks_document_keeps_its_collectives_and_roofs(trace, tmp_path):
    path = _documents(trace, tmp_path)[1]
    assert read_result(path).collectives == _ranks(trace, _calls())[1]
    assert job_of([read_result(path)], [str(path)]).collectives.interconnect == H200X2


def test_show_places_the_jobs_collectives_on_the_interconnects_roof(trace, tmp_path):
    paths = _documents(trace, tmp_path)
    shown = rooflint("show", *map(str, paths), env={"COLUMNS": "200"}).stdout
    buckets = next(line.split() for line in shown.splitlines()
                   if line.startswith("all-reduce float32    27 MiB"))
    assert buckets == ["all-reduce", "float32", "27", "MiB", "36", "131", "us", "216", "GB/s",
                       "54%"]                                   # 216 GB/s of 400
    assert "10 collectives by time, each call's the shortest of its ranks' kernels" in shown
    assert ("broadcast float32    134 MiB      1   177 us    <= 793 GB/s        -") in shown
    assert ("roofs: interconnect, 2 GPUs (NVLink, 18 links a GPU), NCCL's best bus bandwidth: "
            "all-reduce 400 GB/s at 1 GiB, all-gather 400 GB/s at 1 GiB") in shown
    assert "<=: a broadcast's or reduce's receivers send nothing" in shown
    assert "collectives by time" not in rooflint("show", *map(str, paths), "--summary").stdout


def test_show_leaves_calls_smaller_than_the_calibrations_sweep_off_the_roof():
    """The committed DDP job on its calibrated host (sweep from 64 KiB): its 4-byte
    all-reduce and 16-byte all-gather are said to be latency, not 0 % of the roof."""
    job = REPO / "examples" / "profile" / "h200x2-profile-ddp-nccl"
    shown = rooflint("show", f"{job}.rank0.json", f"{job}.rank1.json",
                     env={"COLUMNS": "200"}).stdout
    rows = [(tuple(line.split()[:4]), line.split()[-1]) for line in shown.splitlines()
            if line.startswith(("all-reduce", "all-gather"))]
    assert rows == [(("all-reduce", "float32", "27", "MiB"), "72%"),
                    (("all-reduce", "float32", "27", "MiB"), "71%"),
                    (("all-reduce", "float32", "25.5", "MiB"), "71%"),
                    (("all-reduce", "float32", "134", "MiB"), "65%"),
                    (("all-gather", "int64", "16", "B"), "-"),
                    (("all-reduce", "float32", "4", "B"), "-")]
    assert ("-: smaller than any size `rooflint calibrate` swept (64 KiB): its time is NCCL's "
            "latency, not the links' bandwidth") in shown


def test_without_a_calibration_the_collectives_say_how_to_get_one(trace, tmp_path):
    shown = rooflint("show", *map(str, _documents(trace, tmp_path, None)),
                     env={"COLUMNS": "200"}).stdout
    assert NO_INTERCONNECT in shown
    assert "all-reduce float32    27 MiB     36   131 us       216 GB/s        -" in shown


def test_kernels_left_unplaced_are_counted_in_one_line(trace, tmp_path):
    shown = rooflint("show", *map(str, _documents(trace, tmp_path, calls={890: [], 891: []})),
                     env={"COLUMNS": "200"}).stdout
    assert f"134 NCCL kernels not placed: 134 {judge.NO_LOG}" in shown
    assert "collectives by time" not in shown and NO_INTERCONNECT not in shown


RECORDED = FIXTURES / "recorded"


def test_nccls_own_logs_of_two_ranks_place_every_collective_of_their_trace():
    """NCCL 2.28.9's own logs of the two-H200 DDP job whose profile is committed
    (examples/profile/h200x2-profile-ddp-nccl.json; pass 1's trace and the logs `--logs`
    kept, from one run): each process's calls pair one-to-one with its NCCL kernels, none
    is left unplaced, and they are the rank documents' collectives; the job's gradient
    buckets (the all-reduces of 25.5-27 MiB, 60 calls a rank) ran at 235-236 GB/s, 71-72 %
    of the all-reduce roof the same host's `rooflint calibrate` measured (329 GB/s)."""
    trace = json.loads(lzma.decompress(
        (RECORDED / "h200x2-ddp-nccl-pass1-trace.json.xz").read_bytes()))
    documents = []
    for rank in ranks_of(trace):
        calls = nccl_calls((RECORDED / f"nccl.vm.{rank.process}.log").read_text())
        document = read_result(rank_path(JOB, rank))
        found = rank_collectives(calls, collective_kernels(trace_of(trace, rank)),
                                 document.collectives.interconnect)
        assert found.unplaced == {} and found == document.collectives
        documents.append(document)
    job = placement([d.collectives for d in documents])
    buckets = [c for c in job.collectives if c.collective is Collective.ALL_REDUCE
               and 25 << 20 <= c.size <= 28 << 20]
    assert sum(c.calls for c in buckets) == 60
    assert all(234e9 <= c.bus_bandwidth <= 237e9 and 0.71 <= c.of_roof <= 0.725
               for c in buckets)
    assert round(job.interconnect.roof(Collective.ALL_REDUCE).value / 1e9) == 329


def _collective(process: int, correlation: int, dur: float, name: str = "ncclDevKernel_AllReduce"
                ) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "ts": float(correlation), "dur": dur,
            "args": {"process": process, "correlation": correlation, "grid": [2, 1, 1]}}


def test_a_calls_own_time_is_its_shortest_ranks_kernel():
    """Three all-reduces on two ranks, the first waiting 5.2 s on rank 0 for rank 1 (its
    compile): each counts the shortest of its two kernels; a kind one rank launched more
    often than the other is left as it ran, as is a trace of one process."""
    waits = [_collective(0, 1, 5.2e6), _collective(0, 2, 120.0), _collective(0, 3, 90.0),
             _collective(1, 1, 118.0), _collective(1, 2, 300.0), _collective(1, 3, 95.0)]
    odd = [_collective(0, 4, 50.0, "ncclDevKernel_Broadcast"),
           _collective(0, 5, 60.0, "ncclDevKernel_Broadcast"),
           _collective(1, 4, 10.0, "ncclDevKernel_Broadcast")]
    trace = {"traceEvents": waits + odd}
    marked = judge.with_calls_own_time(trace)
    own = [e["args"].get(judge.CALL_TIME) for e in marked["traceEvents"]]
    assert own == [118.0, 120.0, 90.0, 118.0, 120.0, 90.0, None, None, None]
    assert [e["dur"] for e in marked["traceEvents"]] == [e["dur"] for e in trace["traceEvents"]]
    alone = {"traceEvents": [e for e in waits if e["args"]["process"] == 0]}
    assert judge.with_calls_own_time(alone) is alone


def test_a_jobs_collectives_count_their_calls_own_time_and_its_timing_their_waits(trace):
    """The recorded DDP job (CUPTI's records of its two ranks): its collectives' GPU time
    is each call's shortest kernel on both ranks, 17 ms where the kernels ran 237 ms (the
    ranks waiting for each other's hosts, and the first all-reduce for their start-up),
    while the program's exposed communication is read off the kernels as they ran."""
    from rooflint.engine.program import pass_one
    from rooflint.formats.trace_timing import program_timing
    from rooflint.measure.pass_runner import Pass, Timer
    from rooflint.measure.program import Filters
    ran: dict[tuple, list[float]] = {}
    for kernel in collective_kernels(trace):
        ran.setdefault((kernel["name"], kernel["args"]["process"]), []).append(kernel["dur"])
    names = {name for name, _ in ran}
    own_us = sum(2 * sum(map(min, zip(*(ran[n, p] for p in {p for m, p in ran if m == n}))))
                 for n in names)
    first = Pass("", 20.0, timer=Timer.cupti, processes=2, own_process=False, trace=trace)
    found, _ = pass_one(first, Filters())
    counted = sum(k.total_s for k in found.kernels if "nccl" in k.kernel)
    assert counted == pytest.approx(own_us * 1e-6, rel=1e-9)
    assert counted < 0.1 * sum(sum(d) for d in ran.values()) * 1e-6
    as_ran = program_timing(trace).communication
    job = found.timing.communication
    assert job.calls_s == pytest.approx(counted / 2, rel=1e-9)
    assert replace(job, calls_s=0.0) == replace(as_ran, calls_s=0.0)
    assert as_ran.counted_s == pytest.approx(as_ran.collective_s, rel=1e-5)   # as they ran
