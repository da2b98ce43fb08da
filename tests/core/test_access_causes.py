"""Issue 24's causes on recorded counters: Nsight Compute's access-pattern, bank-conflict,
tail-effect, occupancy and issue-slot rules, as rooflint's evidence with a gain each.

tests/fixtures/ncu/h100-gemm-walk-counters.csv is an H100 (2026-11-26) log of the program
beside it (probe-gemm-walk.py) over the FP32 4096^3 GEMM walk of examples/gemm_walk:
scalar 2D register blocking (a warp's C stores 32 bytes apart, its B-tile reads
conflicted), its conflict-free interleave, the float4 version, and cuBLAS. Nsight
Compute's --set full on the first said: "only 4.0 of the 32 bytes transmitted per sector
are utilized" by global stores, and "a 5.0-way bank conflict across all 134217728 shared
load requests". The draft log beside it holds the kernels as first written, among them a
float4 version whose transposing shared stores collide.
"""

from pathlib import Path

import pytest

from rooflint.analysis.ceilings import roofs as roofs_for
from rooflint.analysis.counters import Counters
from rooflint.analysis.diagnose import diagnose
from rooflint.analysis.evidence import LaunchFacts
from rooflint.analysis.roofline import place
from rooflint.formats.gpus import find_spec
from rooflint.measure import ncu

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ncu"
LOG = FIXTURES / "h100-gemm-walk-counters.csv"
KERNELS = ["blocked_2d", "conflict_free", "vectorized", "cublas"]
DRAFT = FIXTURES / "h100-gemm-walk-draft-counters.csv"
DRAFT_KERNELS = ["blocked_2d", "vectorized", "conflict_free", "double_buffered", "cublas"]
N = 4096
NEW_CAUSES = ("bank_conflicts", "uncoalesced_access", "partial_wave", "occupancy_limited",
              "issue_bound")


def walk_verdicts(specs, log: Path = LOG, kernels: list[str] = KERNELS) -> dict:
    h100 = find_spec("h100-sxm", specs)
    return {kernels[index]: verdict_of(counters, h100)
            for index, counters in ncu.counters_by_index(log.read_text()).items()}


def verdict_of(counters: Counters, spec, flops: float = 2 * N**3, compulsory: float = 12 * N**2):
    point = place(counters.duration_s, flops, counters.dram_bytes, compulsory,
                  roofs_for(spec, "fp32", None), "ncu")
    facts = LaunchFacts.of(spec.sms, "fp32", grid_blocks=counters.grid_size,
                           threads_per_block=256,
                           tensor_roof=spec.peak("tf32-tensor").flops_per_s)
    return diagnose(point, facts, counters)


@pytest.fixture(scope="module")
def walk(specs):
    return walk_verdicts(specs)


def test_the_log_is_read_per_direction(walk):
    counters = ncu.counters_by_index(LOG.read_text())
    blocked = counters[0]
    assert (blocked.global_store_sectors, blocked.global_store_requests) == (16_777_216, 524_288)
    assert blocked.global_load_sectors / blocked.global_load_requests == 4   # coalesced
    assert blocked.shared_stores == 33_554_432 and blocked.store_bank_conflicts > 0
    assert (blocked.blocks_per_sm, blocked.occupancy_limiter) == (2, "registers")
    assert blocked.theoretical_occupancy_pct == 25.0 and 50 < blocked.issue_active_pct < 60
    assert counters[3].blocks_per_sm == 1                       # cuBLAS: 254 registers


@pytest.mark.parametrize("flag, kernels", [
    ("bank_conflicts", {"blocked_2d"}),                         # 38 % of wavefronts
    ("uncoalesced_access", {"blocked_2d"}),                     # stores: 32 sectors a request
    ("partial_wave", set()),                                    # 3.88 waves: 1.03x at most
    ("occupancy_limited", set()),                               # 25 %, but no latency stalls
    ("issue_bound", set()),                                     # FFMA 82-91 % of the issue
])
def test_each_cause_fires_on_the_recorded_kernels_that_have_it_and_no_other(walk, flag, kernels):
    assert {name for name, v in walk.items() if flag in v.evidence} == kernels


def test_the_conflicted_side_is_named_as_nsight_computes_rule_names_it(walk, specs):
    said = walk["blocked_2d"].evidence["bank_conflicts"]
    assert "loads 5.0 wavefronts per instruction" in said      # ncu: "a 5.0 - way bank conflict"
    assert "stores 1.1" in said
    draft = walk_verdicts(specs, DRAFT, DRAFT_KERNELS)
    assert "stores 2.6" in draft["vectorized"].evidence["bank_conflicts"]  # transposing stores
    assert {name for name, v in draft.items() if "bank_conflicts" in v.evidence} == \
        {"blocked_2d", "vectorized"}                            # 38 % and 40 %


def test_the_scalar_tile_is_told_its_conflicts_first_with_the_gain_and_not_a_fallback(walk):
    """ncu ranks the 4-of-32-byte stores first (est. 60.8 %: their share of sectors times
    L1's throughput); their unused sectors are a few % of L1's work, the conflicts 38 %.
    The gain is the conflicts' share of the shared-memory waits, out of a warp's cycles per
    issue (hand-computed from the log's stalls), not the 1.62x of the wavefronts' ratio:
    the conflict-free tile was 1.04x faster on an H200."""
    moves = walk["blocked_2d"].moves
    assert [m.id for m in moves] == ["bank_conflicts_off", "coalesce_global"]
    counters = ncu.counters_by_index(LOG.read_text())[0]
    share = counters.bank_conflicts / counters.shared_wavefronts
    waits = sum(counters.stalls.values())
    shared = counters.stalls.get("short_scoreboard", 0) + counters.stalls.get("mio_throttle", 0)
    assert moves[0].gain == pytest.approx((1 + waits) / (1 + waits - shared * share))
    assert 1.05 < moves[0].gain < 1.15 and moves[0].gain_from == "evidence"
    assert 1.0 < moves[1].gain < 1.02
    assert "32.0 sectors of 32 bytes per warp request" in moves[1].reason


def test_uncoalesced_stores_are_found_by_hardware_counters_as_ncus_rule_finds_them(specs):
    """The draft log holds the bytes per sector ncu's rule reads by instrumenting the
    kernel (4 for the scalar stores, 16 for float4 stores two floats apart, 32 for the
    conflict-free layout); the sectors per request rooflint reads instead tell the first
    from a coalesced access, and leave the second (16, as a coalesced 16-byte store's)."""
    draft = ncu.counters_by_index(DRAFT.read_text())
    measured = ncu.counters_by_index(LOG.read_text())
    assert draft[0].global_store_requests == 0                  # not read that day: no cause
    draft_verdicts = walk_verdicts(specs, DRAFT, DRAFT_KERNELS)
    assert "uncoalesced_access" not in draft_verdicts["blocked_2d"].evidence
    per_request = [c.global_store_sectors / c.global_store_requests for c in measured.values()]
    assert per_request == [32, 4, 16, 4]


def test_cublas_is_not_told_to_issue_fewer_instructions_and_is_told_tf32_first(walk):
    """cuBLAS at 81 % of the FP32 roof: 1.2x more FMAs in flight is all FP32 leaves; TF32's
    roof, 8x up, is ranked by its expected gain (issue 48) and says its trade."""
    ids = [m.id for m in walk["cublas"].moves]
    assert "more_fmas_per_instruction" not in ids
    assert ids[:2] == ["tf32_tensor_cores", "compute_efficiency"]
    assert "traded for the precision" in walk["cublas"].moves[0].expect


CAUSES_LOG = FIXTURES / "h100-causes-probe.csv"
# probe-causes.py beside it (H100, 2026-11-26): one kernel for each cause the GEMM walk
# does not show: 1.5 waves of fixed FMA chains; a pointer chase holding 128 floats a thread
# (137 registers: one block per SM, 12.5 %), its issue slots 17 % busy on long_scoreboard;
# an integer hash with one FMA a round (FFMA 9 % of the issue, 83 % busy).
CAUSE_KERNELS = ["tail_fma", "chase_wide", "hash_mix"]


@pytest.fixture(scope="module")
def probes(specs):
    h100 = find_spec("h100-sxm", specs)
    return {CAUSE_KERNELS[index]: verdict_of(c, h100, flops=c.counted_flops,
                                             compulsory=c.dram_bytes)
            for index, c in ncu.counters_by_index(CAUSES_LOG.read_text()).items()}


@pytest.mark.parametrize("flag, kernel, move, gain", [
    ("partial_wave", "tail_fma", "whole_waves", 2 / 1.5),
    ("occupancy_limited", "chase_wide", "more_resident_warps", None),
    ("issue_bound", "hash_mix", "more_fmas_per_instruction", None),
])
def test_each_cause_fires_on_its_recorded_probe_and_on_no_other_kernel(probes, walk, flag,
                                                                      kernel, move, gain):
    assert {name for name, v in {**probes, **walk}.items() if flag in v.evidence} == {kernel}
    chosen = next(m for m in probes[kernel].moves if m.id == move)
    # a gain from its own evidence: the tail's an estimate, the idle slots' and the FFMA
    # share's the most they could buy
    assert chosen.gain_from == ("evidence" if gain else "up_to")
    if gain:
        assert chosen.gain == pytest.approx(gain)


def test_the_probes_name_their_numbers(probes):
    assert probes["tail_fma"].evidence["partial_wave"].startswith(
        "1584 blocks are 1.5 waves of 1056 on 132 SMs: the last wave is 50% full")
    assert probes["chase_wide"].evidence["occupancy_limited"].startswith(
        "registers allow 1 block per SM: 12% of the resident warps")
    assert "FFMA 9% of issued instructions" in probes["hash_mix"].evidence["issue_bound"]
    assert probes["hash_mix"].moves[0].id == "more_fmas_per_instruction"
    assert probes["tail_fma"].moves[0].id == "whole_waves"


def with_changes(specs, index: int, **changes) -> tuple:
    counters = ncu.counters_by_index(LOG.read_text())[index]
    for name, value in changes.items():
        setattr(counters, name, value)
    return verdict_of(counters, find_spec("h100-sxm", specs))


def test_a_partial_wave_is_priced_at_whole_waves_over_the_waves_run(specs):
    """The conflict-free tile at N = 2560 would run 400 blocks as 1.52 waves of 264: the
    last wave half full, so sizing the grid to two whole waves gains 2 / 1.52."""
    v = with_changes(specs, 2, waves=400 / 264, grid_size=400)
    assert "partial_wave" in v.evidence
    assert "400 blocks are 1.52 waves of 264" in v.evidence["partial_wave"]
    move = next(m for m in v.moves if m.id == "whole_waves")
    assert move.gain == pytest.approx(2 / (400 / 264))


def test_occupancy_is_the_cause_only_where_warps_wait_on_latency(specs):
    v = with_changes(specs, 2, stalls={"long_scoreboard": 3.0, "barrier": 0.5})
    assert "occupancy_limited" in v.evidence
    assert "registers allow 2 blocks per SM: 25%" in v.evidence["occupancy_limited"]
    move = next(m for m in v.moves if m.id == "more_resident_warps")
    assert move.gain == pytest.approx(100 / 72.76, rel=1e-3)


def test_issue_bound_work_is_priced_at_the_fma_share_a_tuned_kernel_reaches(specs):
    v = with_changes(specs, 2, issue_active_pct=92.0, instructions=2.147e9 / 0.4)
    assert "issue_bound" in v.evidence and "FFMA 40% of issued" in v.evidence["issue_bound"]
    move = next(m for m in v.moves if m.id == "more_fmas_per_instruction")
    # FFMA at 90 % of the slots would be 2.25x, past the nearest roof (L1 at 67 % of its
    # peak, compute at 65 %): the gain and the text it prints are both capped there
    assert "up to 1.50x with FFMA at 90% of the issue slots instead of 40%" in move.expect
    assert move.gain == pytest.approx(1.50, rel=1e-2)


def test_results_from_before_these_counters_get_none_of_these_causes(specs):
    """An older result has none of the counters these causes read (their fields 0): no
    cause fires from an absence."""
    old = {"shared_stores": 0.0, "shared_store_wavefronts": 0.0, "store_bank_conflicts": 0.0,
           "global_load_sectors": 0.0, "global_store_sectors": 0.0,
           "global_load_requests": 0.0, "global_store_requests": 0.0,
           "theoretical_occupancy_pct": 0.0, "blocks_per_sm": 0, "occupancy_limiter": "",
           "issue_active_pct": 0.0, "instructions": 0.0,
           "stalls": {"long_scoreboard": 3.0}}
    v = with_changes(specs, 0, **old)
    assert not set(NEW_CAUSES[1:]) & set(v.evidence)
    assert "bank_conflicts" in v.evidence and "loads 5.0" not in v.evidence["bank_conflicts"]
