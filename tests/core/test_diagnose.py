"""The verdict rules on real measurements: each cause and trap is checked on a kernel that
shows it, measured on our H200 with Nsight Compute counters (2026-11-21).

tests/fixtures/results/h200-stream-gemm_fp32.json is a `rooflint run` result of the
stream and gemm_fp32 families; only its raw numbers (times, counters, model) are used
here, and the analysis is re-run on them, so the rules are tested, not the file.
"""

import json
from pathlib import Path

import pytest

from recorded import counters_of

from rooflint.analysis.ceilings import roofs as roofs_for
from rooflint.analysis.counters import Counters
from rooflint.analysis.diagnose import diagnose
from rooflint.analysis.evidence import LaunchFacts
from rooflint.formats.gpus import find_spec
from rooflint.measure import ncu
from rooflint.analysis.roofline import place

FIXTURES = Path(__file__).parents[1] / "fixtures"
RESULT = json.loads((FIXTURES / "results" / "h200-stream-gemm_fp32.json").read_text())
GRIDS = {"naive": 16384, "coalesced": 16384, "tiled": 16384, "blocked_1d": 4096,
         "blocked_2d": 1024, "cublas": 0, "copy_scalar": 524288, "copy_float4": 1056,
         "triad": 1056, "strided_read": 524288, "copy_few_blocks": 16}


def verdict(name, specs):
    variant = next(v for f in RESULT["families"] for v in f["variants"] if v["name"] == name)
    counters = Counters(**variant["counters"])
    h200 = find_spec("h200", specs)
    roofs = roofs_for(h200, "fp32", None)
    point = place(variant["time"]["median_s"], variant["flops"]["model"],
                  variant["dram_bytes"]["ncu"], variant["dram_bytes"]["model"], roofs, "ncu")
    facts = LaunchFacts(grid_blocks=GRIDS[name], threads_per_block=256, launches=1, sms=132,
                        precision="fp32", tensor_roof=h200.peaks["tf32-tensor"].flops_per_s)
    return diagnose(point, facts, counters)


def causes(v):
    return [c.name for c in v.causes]


def moves(v):
    return [m.id for m in v.moves]


def traps(v):
    return " | ".join(v.ruled_out)


def test_naive_gemm_waits_on_its_memory_instruction_queue(specs):
    v = verdict("naive", specs)
    assert v.bound == "chain"
    assert causes(v) == ["memory_instruction_queue"]       # lg_throttle: 434 warps per issue
    assert "lg_throttle stalls: 433.9" in v.causes[0].detail
    assert moves(v)[0] == "tile_for_reuse"                  # 42x the compulsory bytes
    assert "42.3x the compulsory DRAM bytes" in v.moves[0].reason


def test_tiled_gemm_is_held_by_shared_memory(specs):
    v = verdict("tiled", specs)
    assert causes(v) == ["shared_memory_pipe"]              # mio_throttle 20.5 of 37.5
    assert "register_blocking" in moves(v)


def test_a_grid_under_one_wave(specs):
    v = verdict("copy_few_blocks", specs)
    assert v.bound == "chain"
    assert causes(v)[0] == "grid_under_one_wave" and "116 SMs idle" in v.causes[0].detail
    assert moves(v)[0] == "fill_the_gpu"
    assert "not split-K" not in traps(v)                    # here more SMs is the right move


def test_scalar_copy_exposes_memory_latency_against_the_datasheet_roof(specs):
    v = verdict("copy_scalar", specs)                       # 2.73 TB/s = 57 % of 4.8
    assert v.bound == "chain"
    assert causes(v) == ["exposed_memory_latency"]          # long_scoreboard 41 of 46
    assert "bytes_in_flight" in moves(v)
    assert "not cp.async" not in traps(v)                   # memory waits ARE the top stall


def test_uncoalesced_read_is_bandwidth_bound_on_wasted_bytes(specs):
    v = verdict("strided_read", specs)
    assert v.bound == "bandwidth"
    assert moves(v)[0] == "cut_redundant_traffic" and "8.5x" in v.moves[0].reason
    assert "not more FLOP/s" in traps(v)


def test_the_copy_at_the_roof_can_only_shrink_its_bytes(specs):
    v = verdict("copy_float4", specs)
    assert v.bound == "bandwidth" and moves(v)[0] == "fewer_bytes_per_element"
    assert "cut_redundant_traffic" not in moves(v)


def test_compute_bound_gemm_is_offered_tensor_cores_and_no_byte_cutting(specs):
    v = verdict("blocked_2d", specs)
    assert v.bound == "compute"
    # FP32 data: the tensor roof is TF32's, a precision trade, ranked by its expected gain
    # (issue 48: the geometric middle of "up to" the TF32 roof is above what the FP32 moves
    # bounded by the FP32 roof can buy) and saying what it trades
    assert moves(v)[0] == "tf32_tensor_cores" and "tensor_cores" not in moves(v)
    assert v.moves[0].gain_from == "up_to" and v.moves[0].gain_low == 1.0
    assert "relative error near 1e-3" in v.moves[0].action
    assert "not fewer bytes" in traps(v)
    assert not any(m.direction == "right" for m in v.moves)


def test_chain_bound_with_a_full_grid_rules_out_split_k_and_byte_cutting(specs):
    v = verdict("blocked_1d", specs)                        # 15.5 waves, DRAM 3 %
    assert v.bound == "chain"
    assert "not split-K / more SMs: the grid already fills the GPU (15.5 waves)" in traps(v)
    assert "not fewer bytes" in traps(v)
    assert "fill_the_gpu" not in moves(v) and "fewer_bytes_per_element" not in moves(v)


def test_async_copy_is_ruled_out_when_memory_is_not_the_top_stall(specs):
    v = verdict("naive", specs)
    assert "not cp.async" in traps(v) and "lg_throttle" in traps(v)


def test_register_spills_from_the_recorded_spilling_kernel(specs):
    log = (FIXTURES / "ncu" / "h100-probe-5-variants.csv").read_text()
    names = ["copy", "sgemm", "hgemm", "spill", "two_halves"]
    counters = counters_of(log, names)["spill"]
    point = place(counters.duration_s, counters.counted_flops, counters.dram_bytes,
                  counters.dram_bytes, roofs_for(find_spec("h100-sxm", specs), "fp32", None), "ncu")
    facts = LaunchFacts(grid_blocks=132, threads_per_block=256, launches=1, sms=132,
                        precision="fp32")
    v = diagnose(point, facts, counters)
    assert "register_spills" in causes(v) and "fix_spills" in moves(v)
    assert "exposed_memory_latency" in causes(v)            # the spilled loads are what it waits on


@pytest.mark.parametrize("graph_time, expected", [(2e-6, True), (9e-6, False)])
def test_launch_overhead_from_graph_replay(specs, graph_time, expected):
    h200 = find_spec("h200", specs)
    point = place(12e-6, 0, 1e6, 1e6, roofs_for(h200, "fp32", None), "ncu")
    facts = LaunchFacts(grid_blocks=1000, threads_per_block=256, launches=1, sms=132,
                        precision="fp32")
    v = diagnose(point, facts, graph_time_s=graph_time)
    assert ("launch_overhead" in causes(v)) is expected
    assert ("launch_amortise" in moves(v)) is expected


BUNDLED = json.loads((FIXTURES / "results" / "h200-bundled.json").read_text())


def bundled_verdict(family, name, specs, threads=32, launches=1, l2_roof=None):
    """The verdict re-derived from one variant's raw numbers in the committed run (graph
    replay time included where the run measured it)."""
    fam = next(f for f in BUNDLED["families"] if f["name"] == family)
    variant = next(v for v in fam["variants"] if v["name"] == name)
    counters = Counters(**variant["counters"])
    h200 = find_spec("h200", specs)
    point = place(variant["time"]["median_s"], variant["flops"]["model"],
                  variant["dram_bytes"]["ncu"], variant["dram_bytes"]["model"],
                  roofs_for(h200, variant["precision"], None), "ncu")
    facts = LaunchFacts(grid_blocks=counters.grid_size, threads_per_block=threads,
                        launches=launches, sms=132, precision=variant["precision"],
                        l2_roof=l2_roof)
    graph = variant["graph_time"]["median_s"] if variant["graph_time"] else None
    return diagnose(point, facts, counters, graph)


L2_ROOF = BUNDLED["settings"]["l2_bandwidth"]   # calibrated in the same session: 8.33 TB/s


def test_decode_v5_cp_async_waits_on_its_shared_memory_chain_not_memory(specs):
    """The book's v5 trap, measured: the cp.async variant's stalls are short_scoreboard and
    wait (the shared-memory hop and the dependent math), not memory."""
    v = bundled_verdict("decode_attention", "v5_cp_async", specs)
    assert "dependency_chain" in causes(v) and "shared_memory_pipe" in causes(v)
    assert "not cp.async" in traps(v)
    assert "more_ilp" in moves(v)


def test_decode_v3_on_the_h200_needs_parallelism_not_fewer_bytes(specs):
    v = bundled_verdict("decode_attention", "v3_vectorized", specs)
    assert causes(v) == ["grid_under_one_wave", "exposed_memory_latency"]
    assert "0.06 of a full wave" in v.causes[0].detail
    assert moves(v)[0] == "fill_the_gpu"
    assert "not fewer bytes" in traps(v) and "not split-K" not in traps(v)


def test_warp_shuffle_reduction_is_at_the_dram_roof(specs):
    v = bundled_verdict("reduction", "warp_shuffle", specs, threads=256)
    # 4.05 TB/s: 84% of the 4.8 TB/s datasheet roof: at it, so fewer bytes, not a move up
    # toward it (issue 47: a kernel at its roof gets no move up)
    assert v.bound == "bandwidth" and moves(v) == ["fewer_bytes_per_element"]
    assert "not more FLOP/s" in traps(v)


# -- the causes family: one kernel per cause, measured (H200, 2026-11-21) ----------------

def test_barrier_stalls_name_synchronization(specs):
    """Warp 0 runs a dependent chain while 7 warps wait at __syncthreads."""
    v = bundled_verdict("causes", "barrier_bound", specs, threads=256)
    assert v.bound == "chain" and causes(v) == ["synchronization"]
    assert "barrier stalls: 18.7 warps per issued instruction, 78% of stalls" in v.causes[0].detail
    assert moves(v) == ["sync_off_the_path"]               # memory is not waited on: no hoist
    assert "not split-K" in traps(v) and "not cp.async" in traps(v)


def test_eight_tiny_launches_are_launch_bound_by_graph_replay(specs):
    """24 us eager against 15.5 us replayed as a CUDA graph: launch cost is on the path."""
    v = bundled_verdict("causes", "launch_bound", specs, threads=256, launches=8)
    assert causes(v)[0] == "launch_overhead"
    assert "eager 24.3 us vs CUDA-graph replay 15.5 us" in v.causes[0].detail
    assert moves(v)[0] == "launch_amortise"


def test_a_busy_special_function_unit_is_a_math_pipe_not_shared_memory(specs):
    """EX2 instructions queue in MIO, so the stall reads mio_throttle like shared memory
    does; the XU pipe at 98% tells them apart."""
    v = bundled_verdict("causes", "math_pipe_bound", specs, threads=256)
    assert v.bound == "chain" and causes(v) == ["math_pipe"]
    assert "(XU) pipe at 98% of its peak" in v.causes[0].detail
    assert moves(v) == ["fewer_special_functions"]
    assert "register_blocking" not in moves(v) and "more_ilp" not in moves(v)


def test_the_same_stalls_without_the_xu_reading_are_shared_memory(specs):
    """Recorded before rooflint read the XU pipe, the same counters point at shared memory:
    the reason the XU metric was added."""
    fam = next(f for f in BUNDLED["families"] if f["name"] == "causes")
    raw = next(x for x in fam["variants"] if x["name"] == "math_pipe_bound")["counters"]
    counters = Counters(**{**raw, "xu_pipe_pct": 0.0})
    point = place(counters.duration_s, counters.counted_flops, counters.dram_bytes,
                  counters.dram_bytes, roofs_for(find_spec("h100-sxm", specs), "fp32", None), "ncu")
    facts = LaunchFacts(grid_blocks=1056, threads_per_block=256, launches=1, sms=132,
                        precision="fp32")
    assert causes(diagnose(point, facts, counters)) == ["shared_memory_pipe"]


def test_data_that_lives_in_l2_is_bandwidth_bound_at_the_l2_roof(specs):
    v = bundled_verdict("causes", "l2_resident", specs, threads=256, l2_roof=L2_ROOF)
    assert v.bound == "bandwidth" and v.summary.startswith("L2 at 96% of its calibrated roof")
    assert moves(v) == ["reuse_on_chip"]
    assert "not fewer DRAM bytes" in traps(v) and "not fewer bytes (quantize" not in traps(v)
    without_l2_roof = bundled_verdict("causes", "l2_resident", specs, threads=256)
    assert without_l2_roof.bound == "chain"                 # DRAM at 12%: no roof explains it


# -- decode v6: rooflint's moves from v4, step by step (H200, 2026-11-21) ----------------

@pytest.mark.parametrize("name, bound, first_move", [
    ("v4_split_k", "chain", "fill_the_gpu"),                # 0.48 waves
    ("v6a_more_warps", "chain", "bytes_in_flight"),         # 1.3 waves, long_scoreboard
    ("v6b_bytes_in_flight", "bandwidth", "reuse_on_chip"),  # L2 at the roof, DRAM at 47%
    ("v6_gqa_group", "bandwidth", "fewer_bytes_per_element"),  # DRAM 68%, as SDPA
])
def test_each_v6_step_is_the_move_rooflint_named_for_the_one_before(specs, name, bound, first_move):
    v = bundled_verdict("decode_attention", name, specs, threads=128, l2_roof=L2_ROOF)
    assert v.bound == bound and moves(v)[0] == first_move


def test_a_kernel_at_a_roof_is_not_told_to_add_parallelism(specs):
    """v6 runs under one wave (0.5) but at 68 % of DRAM: more blocks would not raise a roof
    it already presses; more bytes in flight per warp might."""
    v = bundled_verdict("decode_attention", "v6_gqa_group", specs, threads=128, l2_roof=L2_ROOF)
    assert "grid_under_one_wave" in v.evidence
    assert "fill_the_gpu" not in moves(v) and "bytes_in_flight" in moves(v)


# Every stall reason Nsight Compute can report, as named in its metric list
# (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio on Hopper).
ALL_STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss",
                     "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar",
                     "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
                     "short_scoreboard", "sleeping", "tex_throttle", "wait")


@pytest.mark.parametrize("reason", sorted({*ALL_STALL_REASONS, *ncu.STALL_REASONS}))
def test_every_stall_reason_gives_a_cause_and_a_move(reason, specs):
    """A chain-bound kernel whose top stall is any reason at all (membar once crashed the
    diagnosis with KeyError) gets a cause naming it and at least one move."""
    h200 = find_spec("h200", specs)
    point = place(1e-3, 1e9, 1e8, 1e8, roofs_for(h200, "fp32", None), "ncu")  # 2 % / 0.1 %
    counters = Counters(**{**RESULT["families"][0]["variants"][0]["counters"],
                               "stalls": {reason: 20.0, "wait": 1.0}})
    facts = LaunchFacts(grid_blocks=4096, threads_per_block=256, launches=1, sms=132,
                        precision="fp32")
    v = diagnose(point, facts, counters)
    assert v.bound == "chain"
    assert any(reason in c.detail for c in v.causes), v.causes
    assert v.moves


def _recorded(family: str, variant: str):
    from rooflint.formats.results import read_result
    result = read_result(FIXTURES.parent.parent / "examples" / "h100-bundled.json")
    return next(v for f in result.families if f.name == family for v in f.variants
                if v.name == variant)


def test_the_compilers_half_precision_moves_are_not_held_against_the_model():
    """stream's strided read (``x[j] * 2.0f``, fp32) counted 268 MFLOP of fp16 and no fp32
    on the H100: HFMA2.MMA register moves, not work. No note blames its model, and the
    mismatch note compares the declared precision only (decode_attention's naive online
    softmax still reads as redundant work, on its fp32 FLOPs alone)."""
    from rooflint.analysis.counters import traffic
    strided = _recorded("stream", "strided_read")
    assert strided.counters.flops.get("fp16", 0) > 2e8 and "fp32" not in strided.counters.flops
    for model_flops in (0.0, 1.34e8, 8.9e7):
        notes = traffic(strided.counters, model_flops, 1e9, 5e8, "fp32").notes
        assert not any("FLOPs are" in n for n in notes), notes
    online = _recorded("decode_attention", "v1_online_naive")
    fp32 = online.counters.flops["fp32"]
    notes = traffic(online.counters, fp32 / 8, 1e9, 1e6, "fp32").notes
    assert any(n.startswith("counted fp32 FLOPs are 8.00x the model's (redundant work")
               for n in notes)
    assert not any("FLOPs are" in n for n in traffic(online.counters, fp32, 1e9, 1e6, "fp32").notes)


def test_a_fill_at_the_dram_roof_is_not_told_to_register_block_or_approach_compute(specs):
    """nanoGPT's step under CUDA graphs (H100): PyTorch's fill at 96 % of DRAM's roof,
    short_scoreboard its top stall and no shared-memory instruction, was told to
    register-block "fewer shared-memory loads per FMA", expecting "up toward the compute
    roof (1000000000.0x away)": it counts no FLOP."""
    recorded = json.loads((Path(__file__).parents[2] / "examples" / "profile" /
                           "h100-profile-nanogpt-graphs.json").read_text())
    fill = next(v for v in recorded["families"][0]["variants"] if "FillFunctor" in v["name"])
    counters = Counters(**fill["counters"])
    assert counters.stalls["short_scoreboard"] > 20 and not counters.shared_loads
    h100 = find_spec("h100-sxm", specs)
    point = place(fill["point"]["time_s"], 0.0, fill["point"]["dram_bytes"], None,
                  roofs_for(h100, "fp32", None), "ncu")
    facts = LaunchFacts(grid_blocks=counters.grid_size, threads_per_block=128, launches=1,
                        sms=132, precision="fp32",
                        tensor_roof=h100.peaks["tf32-tensor"].flops_per_s)
    v = diagnose(point, facts, counters)
    assert v.bound == "bandwidth"
    assert "shared_memory_pipe" not in causes(v)
    assert not {"register_blocking", "warp_tiling"} & set(moves(v))
    assert not any("1000000000" in m.expect or "compute roof" in m.expect for m in v.moves)
