"""Hand-computed roofline cases: each number below can be checked on paper."""

import pytest

from rooflint.analysis.diagnose import diagnose
from rooflint.analysis.evidence import LaunchFacts, classify
from rooflint.formats.gpus import find_spec
from rooflint.analysis.ceilings import roofs as roofs_for
from rooflint.analysis.roofline import Roofs, place

# A round machine: 100 TFLOP/s, 2 TB/s -> ridge at 50 FLOP/B.
ROUND = Roofs(precision="fp32", compute=100e12, dram_bandwidth=2e12, source="test",
              datasheet_compute=100e12, datasheet_dram_bandwidth=2e12)


def facts(**overrides):
    base = dict(grid_blocks=10_000, threads_per_block=256, launches=1, sms=100,
                precision="fp32", tensor_roof=None)
    return LaunchFacts(**{**base, **overrides})


def test_left_of_ridge_on_the_bandwidth_roof():
    # 1 GFLOP over 1 GB in 0.5 ms: AI 1, 2 TFLOP/s, 2 TB/s = the DRAM roof.
    p = place(0.5e-3, 1e9, 1e9, 1e9, ROUND)
    assert p.observed_ai == 1 and p.ridge == 50
    assert p.achieved_flops == pytest.approx(2e12)
    assert p.applicable_roof == pytest.approx(2e12)     # min(100 T, 1 x 2 T)
    assert p.limiting_roof == "dram"
    assert p.roof_fraction == pytest.approx(1.0) and p.dram_fraction == pytest.approx(1.0)
    assert p.compute_fraction == pytest.approx(0.02)
    assert classify(p) == "bandwidth"


def test_right_of_ridge_below_the_compute_roof():
    # 100 GFLOP over 1 GB in 2 ms: AI 100 (> ridge 50), 50 TFLOP/s = half the compute roof.
    p = place(2e-3, 100e9, 1e9, 0.5e9, ROUND)
    assert p.observed_ai == 100 and p.algorithmic_ai == 200
    assert p.applicable_roof == 100e12 and p.limiting_roof == "compute"
    assert p.roof_fraction == pytest.approx(0.5)
    assert p.traffic_fraction == pytest.approx(0.5)     # twice the compulsory bytes
    assert classify(p) == "chain"                        # 50% < 60% of either roof


def test_zero_flops_is_a_valid_point():
    p = place(1e-3, 0, 1.6e9, 1.6e9, ROUND)
    assert p.observed_ai == 0 and p.achieved_flops == 0 and p.applicable_roof == 0
    assert p.dram_fraction == pytest.approx(0.8) and p.roof_fraction == pytest.approx(0.8)
    assert classify(p) == "bandwidth"


def test_threshold_edges():
    at = place(1e-3, 0, 1.2e9, 1.2e9, ROUND)       # exactly 60% of DRAM
    below = place(1e-3, 0, 1.19e9, 1.19e9, ROUND)
    assert classify(at) == "bandwidth" and classify(below) == "chain"


def test_compute_bound_on_cuda_cores_is_offered_tensor_cores():
    p = place(1e-3, 80e9, 0.1e9, 0.1e9, ROUND)          # 80 TFLOP/s, 80% of compute
    half = diagnose(p, facts(tensor_roof=400e12, precision="fp16"))
    assert half.bound == "compute"
    assert half.moves[0].id == "tensor_cores" and half.moves[0].direction == "raise-the-roof"
    # FP32 data reaches the tensor roof as TF32: the same roof, traded for precision, so
    # after the move that keeps FP32
    single = diagnose(p, facts(tensor_roof=400e12))
    # at 80 % of its roof it is at it: no move up, only the higher roof (issue 47)
    assert [m.id for m in single.moves] == ["tf32_tensor_cores"]
    assert all(m.direction != "right" for m in half.moves + single.moves)


def test_bandwidth_bound_with_extra_traffic_moves_right_first():
    p = place(1e-3, 0, 2e9, 0.5e9, ROUND, "ncu")         # 4x the compulsory bytes at the roof
    v = diagnose(p, facts())
    assert v.bound == "bandwidth"
    assert v.moves[0].direction == "right" and "4.0x the compulsory DRAM bytes" in v.moves[0].reason
    assert len(v.moves) == 1                             # at the roof: no "up" headroom


def test_bandwidth_bound_at_compulsory_traffic_can_only_shrink_bytes():
    p = place(1e-3, 0, 1.4e9, 1.4e9, ROUND)              # 70% of the roof
    v = diagnose(p, facts())
    assert [m.direction for m in v.moves] == ["right", "up"]
    assert "quantize" in v.moves[0].action and "1.4x away" in v.moves[1].expect


def test_chain_grid_under_one_wave():
    p = place(1e-3, 0, 0.3e9, 0.3e9, ROUND)              # 15% of DRAM
    v = diagnose(p, facts(grid_blocks=16, sms=132))
    assert v.bound == "chain"
    assert v.causes[0].name == "grid_under_one_wave" and "16 blocks" in v.causes[0].detail
    assert v.moves[0].direction == "up" and "more parallelism" in v.moves[0].action


def test_chain_with_a_full_grid_gets_no_split_or_byte_cutting_advice():
    p = place(1e-3, 0, 0.3e9, 0.3e9, ROUND)
    v = diagnose(p, facts(grid_blocks=1000, sms=132))
    assert [c.name for c in v.causes] == ["exposed_memory_latency"]
    text = " ".join(m.action for m in v.moves)
    assert "parallelism" not in text and "quantize" not in text
    assert all(m.direction == "up" for m in v.moves)


def test_chain_right_of_the_ridge_is_a_dependency_chain():
    p = place(10e-3, 100e9, 0.1e9, 0.1e9, ROUND)         # 10 TFLOP/s, AI 1000
    v = diagnose(p, facts())
    assert [c.name for c in v.causes] == ["dependency_chain"]
    assert "10.0x away" in v.moves[0].expect


def test_launch_overhead():
    p = place(3e-6, 0, 1e6, 1e6, ROUND)
    v = diagnose(p, facts(grid_blocks=1000))
    assert "launch_overhead" in [c.name for c in v.causes]
    assert any("CUDA graphs" in m.action for m in v.moves)


# The three `explain` cases of the product brief, computed here by hand.

def test_book_decode_attention_v3_on_rtx4090_is_chain(specs):
    roofs = roofs_for(find_spec("rtx4090", specs), "fp32", None)
    p = place(0.713e-3, 537e6, 128 * 2**20, 128 * 2**20, roofs)
    assert p.achieved_bandwidth == pytest.approx(188.2e9, rel=0.01)   # book: 189 GB/s
    assert p.dram_fraction == pytest.approx(0.187, rel=0.01)          # book: 19% of HBM peak
    assert classify(p) == "chain"


def test_h200_copy_is_bandwidth(specs):
    roofs = roofs_for(find_spec("h200", specs), "fp32", None)
    p = place(2.1e-3, 0, 8 * 2**30, 8 * 2**30, roofs)
    assert p.achieved_bandwidth == pytest.approx(4.09e12, rel=0.01)
    assert classify(p) == "bandwidth"


def test_h100_sgemm_is_compute(specs):
    roofs = roofs_for(find_spec("h100-sxm", specs), "fp32", None)
    p = place(2.5e-3, 137.4e9, 201e6, 201e6, roofs)
    assert p.achieved_flops == pytest.approx(54.96e12)
    assert p.compute_fraction == pytest.approx(54.96 / 66.9, rel=0.01)
    assert classify(p) == "compute"


def test_each_memory_level_has_its_intensity_and_its_fraction_of_its_roof():
    """Hand-computed: 1 GFLOP in 1 ms over 100 MB of DRAM, 400 MB of L2 and 2 GB of L1
    traffic, on a 2 TB/s DRAM roof, an 8 TB/s calibrated L2 roof and a 25 TB/s L1 roof, L1
    at 70 % of its peak (ncu's throughput, shared memory included, not bytes / roof)."""
    from rooflint.analysis.roofline import levels
    roofs = Roofs("fp32", 50e12, 2e12, "datasheet", 50e12, 2e12)
    point = place(1e-3, 1e9, 1e8, 1e8, roofs, "ncu")
    dram, l2, l1 = levels(point, roofs, l2_bytes=4e8, l2_roof=8e12, l1_bytes=2e9,
                          l1_roof=25e12, l1_fraction=0.7)
    assert (dram.name, dram.intensity, dram.bandwidth, dram.fraction) == ("dram", 10.0, 1e11, 0.05)
    assert (l2.intensity, l2.bandwidth, l2.fraction) == (2.5, 4e11, 0.05)
    assert (l1.intensity, l1.bandwidth, l1.roof, l1.fraction) == (0.5, 2e12, 25e12, 0.7)
    _, uncalibrated_l2, uncalibrated_l1 = levels(point, roofs, 4e8, None, 2e9, None, 0.7)
    assert uncalibrated_l2.roof is None and uncalibrated_l2.fraction is None
    assert uncalibrated_l1.roof is None and uncalibrated_l1.fraction == 0.7


def test_a_level_most_of_the_data_went_around_is_bypassed():
    """The recorded H200 training step (examples/profile/h200-profile-train-eager.json):
    cuBLAS's nvjet_..._coopB_NTT GEMM moved 88,359,424 DRAM bytes and 1,984 L1 bytes (TMA
    takes its tiles from L2 to shared memory), an L1 intensity of 26 million FLOP/B that says
    nothing of its data; layer norm's backward moved 26,477,824 and 89,242,336, and the
    one-block bf16 cast 8,192 and 4,608 (0.56: still its data). No bytes at all is bypassed
    too (an infinite intensity)."""
    from rooflint.analysis.roofline import BYPASSED_BELOW, Level, bypassed

    def l1(moved: float) -> Level:
        return Level("l1", moved, 1.0, 1.0, None, None)
    assert bypassed(l1(1984), 88_359_424) and bypassed(l1(0), 12_600_576)
    assert not bypassed(l1(89_242_336), 26_477_824) and not bypassed(l1(4608), 8192)
    assert bypassed(l1(BYPASSED_BELOW * 1000 - 1), 1000)
    assert not bypassed(l1(BYPASSED_BELOW * 1000), 1000)


def test_launch_facts_of_a_kernel_whose_launch_is_not_known():
    """LaunchFacts.of, the one constructor: a launch not given is one launch of a grid not
    known, and every roof not given is unknown (explain and upside.best_fraction rely on it)."""
    assert LaunchFacts.of(132, "fp16") == LaunchFacts(
        grid_blocks=0, threads_per_block=0, launches=1, sms=132, precision="fp16",
        tensor_roof=None, l2_roof=None, fp8_roof=None, compute_capability="")
    assert LaunchFacts.of(100, "fp32", grid_blocks=10_000, threads_per_block=256) == facts()
