"""NCCL's log of a process's calls (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=COLL): the calls of
the DDP job's rank 0 (tests/fixtures/ranks/nccl.vm.890.log, constructed to match the
recorded trace: its header says how), every other line passed over, and the collective
each NCCL kernel's name names."""

from pathlib import Path

import pytest

from rooflint.analysis.collectives import Collective
from rooflint.formats.nccl_log import nccl_calls, kernel_word

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ranks"
CALL = ("vm:890:931 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x7f2a10000000 recvbuff "
        "0x7f2a10000000 count 7087872 datatype 7 op 0 root 0 comm 0x55d3c4a12e40 [nranks=2] "
        "stream 0x55d3c4b09a00")


def test_a_ranks_log_reads_as_its_calls_in_order():
    calls = nccl_calls((FIXTURES / "nccl.vm.890.log").read_text())
    assert len(calls) == 67 and {c.process for c in calls} == {890}
    assert [(c.operation, c.count, c.datatype) for c in calls[:6]] == [
        ("AllGather", 1, 4), ("Broadcast", 140, 4), ("Broadcast", 35_037_696, 7),
        ("AllReduce", 35_037_696, 7), ("Broadcast", 53, 2), ("Broadcast", 5, 2)]
    assert [c.count for c in calls[6:11]] == [2_360_832, 7_087_872, 7_087_872, 7_087_872,
                                               11_413_248]
    assert {(c.ranks, c.comm) for c in calls} == {(2, "0x55d3c4a12e40")}
    assert calls[0].collective is Collective.ALL_GATHER and calls[0].kernel == "AllGather"
    assert all(c.launches for c in calls)


@pytest.mark.parametrize("line", [
    "vm:890:890 [0] NCCL INFO NCCL version 2.27.5+cuda12.9",
    "vm:890:890 [0] NCCL INFO Channel 00/24 :    0   1",
    "vm:890:890 [0] NCCL INFO comm 0x55d3c4a12e40 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
    "18000 commId 0x5a2f3e1c9b7d4e21 - Init COMPLETE",
    "vm:890:890 [0] enqueue.cc:1234 NCCL WARN Cuda failure 'out of memory'",
    CALL[:120],                                              # cut short: a process killed
    CALL.replace("count 7087872", "count -1"),
    CALL.replace("AllReduce:", "PutSignal:"),                # no collective of a kernel
    "",
    "\x00\x00\x00 garbage",
])
def test_a_line_that_is_no_whole_call_is_passed_over(line):
    assert nccl_calls(f"{line}\n{CALL}\n") == nccl_calls(CALL)
    assert len(nccl_calls(CALL)) == 1


def test_a_call_after_a_timestamp_and_p2p_and_empty_calls_are_read():
    """NCCL_DEBUG_TIMESTAMP_LEVELS puts a timestamp before the prefix; point-to-point calls
    have no collective; an empty call and one on a communicator of one rank launch no kernel."""
    send = CALL.replace("AllReduce:", "Send:").replace("root 0", "root 1")
    empty = CALL.replace("count 7087872", "count 0")
    alone = CALL.replace("[nranks=2]", "[nranks=1]")
    calls = nccl_calls("\n".join([f"[2026-12-01 10:00:00] {CALL}", send, empty, alone]))
    assert [c.operation for c in calls] == ["AllReduce", "Send", "AllReduce", "AllReduce"]
    assert calls[1].collective is None and calls[1].kernel == "SendRecv"
    assert [c.launches for c in calls] == [True, True, False, False]


@pytest.mark.parametrize("name, word", [
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "AllReduce"),
    ("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "Broadcast"),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "SendRecv"),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "Generic"),
    ("ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "ReduceScatter"),                                       # NCCL before 2.19
    ("ncclSymkDevKernel_AllGather_ST(ncclSymkDevWorkArgs4K)", "AllGather"),
    ("ncclDevKernel_AllGatherV_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "AllGather"),
    ("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_NNT", None),
])
def test_an_nccl_kernels_name_names_its_collective(name, word):
    assert kernel_word(name) == word


def test_the_constructed_logs_calls_are_those_nccls_own_log_recorded():
    """NCCL 2.28.9's own log of ``ddp_train.py --steps 3`` (one rank on one H200, recorded
    under `rooflint profile -- torchrun --nproc_per_node=1`, 2026-11-29): its 32 calls are,
    call for call, the constructed two-rank log's first 31 (start-up's broadcasts, the
    gradient buckets of the warm-up and timed steps) and its last (the slowest step's max),
    but for the rank count and the pointers; NCCL wrote opCount 0 for every call."""
    recorded = nccl_calls((FIXTURES / "recorded" / "nccl-h200-1rank-steps3.log").read_text())
    made = nccl_calls((FIXTURES / "nccl.vm.890.log").read_text())
    def call(c):
        return c.operation, c.count, c.datatype
    assert len(recorded) == 32 and {c.ranks for c in recorded} == {1}
    assert [call(c) for c in recorded[:31]] == [call(c) for c in made[:31]]
    assert call(recorded[-1]) == call(made[-1]) == ("AllReduce", 1, 7)
