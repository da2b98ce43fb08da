"""A right move for every verdict: the cause registry, the catalog over the whole space of
evidence flags, and the four cases issue 14 names, on recorded numbers.

Recorded numbers: benchmarks/results/h100/all.json is the bundled run with counters on an
H100 (2026-11-22); the other cases are the kernels of the unseen-kernel study (H100 and
H200, 2026-11-21) as their Nsight Compute figures were reported there.
"""

import itertools
import json
import re
from pathlib import Path

import pytest

from rooflint.output.depth import Depth
from rooflint.analysis import causes as registry
from rooflint.analysis import moves as catalog
from rooflint.analysis.ceilings import roofs as roofs_for
from rooflint.analysis.counters import Counters
from rooflint.analysis.diagnose import diagnose
from rooflint.formats.calibration import load as load_calibration
from rooflint.analysis.evidence import (AT_ROOF, EMPTY_KERNEL_S, Evidence, LaunchFacts,
                                       l1_fraction)
from rooflint.formats.gpus import find_spec
from rooflint.measure import ncu
from rooflint.analysis.observation import Model, Observation, analyse
from rooflint.analysis.roofline import place

ROOT = Path(__file__).parents[2]
H100_RUN = json.loads((ROOT / "benchmarks" / "results" / "h100" / "all.json").read_text())


def moves(verdict):
    return [m.id for m in verdict.moves]


def recorded(family: str, variant: str, spec, threads: int, calibration=None, **changes):
    """The H100 run's variant, analysed again by this code (``changes`` edit its counters)."""
    v = next(v for f in H100_RUN["families"] if f["name"] == family
             for v in f["variants"] if v["name"] == variant)
    counters = Counters(**{**v["counters"], **changes})
    observation = Observation(variant, v["precision"], v["samples_s"], counters,
                              Model(v["flops"]["model"], v["dram_bytes"]["model"]),
                              counters.grid_size, threads, 1)
    return analyse(observation, spec, spec.sms, calibration).verdict


# -- the registry is the one table the rest derives from --------------------------------

def test_every_cause_enables_moves_that_exist():
    ids = {rule.id for rule in catalog.CATALOG}
    for rule in registry.CAUSES:
        assert rule.enables and set(rule.enables) <= ids, rule


def test_the_metric_list_and_the_flag_map_come_from_the_registry():
    assert set(registry.STALL_FLAGS) == set(ncu.STALL_REASONS)
    for reason in ncu.STALL_REASONS:
        assert f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio" in \
            ncu.BASE_METRICS
    assert len(set(registry.CAUSE_FLAGS)) == len(registry.CAUSES)


# -- the four cases ---------------------------------------------------------------------

def square_gemm(spec, precision: str, n: int, element_bytes: int, fraction: float,
                **measured):
    """An n^3 GEMM at ``fraction`` of the precision's roof, moving its compulsory bytes,
    with the counters ``measured`` gives (the rest as for any such GEMM)."""
    roofs = roofs_for(spec, precision, None)
    flops, compulsory = 2 * n**3, 3 * element_bytes * n**2
    point = place(flops / (fraction * roofs.compute), flops, compulsory, compulsory, roofs,
                  "ncu")
    counters = Counters(kernels=["gemm"], duration_s=point.time_s,
                        dram_read=2 * element_bytes * n**2, dram_write=element_bytes * n**2,
                        l2_bytes=10 * compulsory, l1_bytes=10 * compulsory, local_bytes=0,
                        flops={precision: flops}, **measured)
    return point, counters


def test_a_saturated_mma_sync_kernel_is_told_wgmma_not_more_parallelism(specs):
    """mma.sync (HMMA) at 85 % of the fp16 tensor roof, its pipe 97 % busy, 528 blocks on
    132 SMs at 0.4 waves (occupancy): more warps cannot help a saturated pipe; on Hopper
    warpgroup MMA raises the roof."""
    h100 = find_spec("h100-sxm", specs)
    point, counters = square_gemm(h100, "fp16-tensor", 8192, 2, 0.85, occupancy_pct=12.0,
                                  waves=0.4, registers_per_thread=232, grid_size=528,
                                  stalls={"math_pipe_throttle": 3.1, "short_scoreboard": 0.4},
                                  tensor_pipe_pct=97.0, hmma_instructions=4.2e9)
    facts = LaunchFacts(grid_blocks=528, threads_per_block=256, launches=1, sms=132,
                        precision="fp16-tensor", fp8_roof=h100.peaks["fp8-tensor"].flops_per_s,
                        compute_capability="9.0")
    v = diagnose(point, facts, counters)
    assert v.bound == "compute"
    # fp8's roof, up to 2.4x, is ranked by its expected gain and says its trade (issue
    # 48); wgmma, up to the fp16 tensor roof 1.2x away, is the first that keeps fp16
    assert moves(v)[0] == "fp8_tensor_cores" and "accuracy allows" in v.moves[0].action
    assert next(m for m in moves(v) if catalog.keeps_precision(m)) == "warpgroup_mma"
    assert "fill_the_gpu" not in moves(v) and "compute_efficiency" not in moves(v)
    assert "97%" in v.evidence["pipe_saturated"]
    # the same kernel already on wgmma is not told to switch
    v = diagnose(point, facts, Counters(**{**counters.__dict__, "gmma_instructions": 1e8}))
    assert "warpgroup_mma" not in moves(v)


@pytest.mark.parametrize("spec_id", ["h100-sxm", "h200"])
def test_a_shared_memory_bound_tile_is_register_blocked_on_either_side_of_the_ridge(
        specs, spec_id):
    """gemm_fp32/tiled on the H100 (mio_throttle 21.6 warps per issue, 59 % of stalls;
    observed AI 16.2, left of the H100's ridge of 20) got no move at all; on the H200
    (ridge 14) it got register-block. Which side of the DRAM ridge the dot falls does not
    decide whether register blocking helps. Read with the L1 level (the run of
    benchmarks/results/h100 has it: L1 90 % busy, 0.8 FMAs per shared load), it is
    bound by its shared-memory traffic."""
    v = recorded("gemm_fp32", "tiled", find_spec(spec_id, specs), threads=1024)
    assert v.bound == "bandwidth" and "shared_memory_bound" in v.evidence
    assert "mio_throttle stalls: 21.6" in v.evidence["shared_memory_stalls"]
    assert moves(v) == ["register_blocking"]
    without_l1 = recorded("gemm_fp32", "tiled", find_spec(spec_id, specs), threads=1024,
                          l1_pct=0.0)
    assert without_l1.bound == "chain" and moves(without_l1)[0] == "register_blocking"


def test_a_register_blocked_sgemm_is_not_told_to_register_block_again(specs):
    """8x8 outputs per thread from float4 loads: 16 FMAs per shared-memory load,
    short_scoreboard its top stall, 49 % of the fp32 roof; its shared loads collide in
    banks. What helps is removing the conflicts, then warp tiling."""
    point, counters = square_gemm(find_spec("h100-sxm", specs), "fp32", 4096, 4, 0.49,
                                  occupancy_pct=24.0, waves=2.0, registers_per_thread=128,
                                  grid_size=1024,
                                  stalls={"short_scoreboard": 2.6, "mio_throttle": 0.9,
                                          "wait": 0.7},
                                  shared_loads=2 * 4096**3 / 2 / 32 / 16,
                                  shared_wavefronts=2.4e8, bank_conflicts=1.2e8)
    facts = LaunchFacts(grid_blocks=1024, threads_per_block=256, launches=1, sms=132,
                        precision="fp32")
    v = diagnose(point, facts, counters)
    assert v.bound == "chain" and "register_blocked" in v.evidence
    assert "register_blocking" not in moves(v)
    assert moves(v)[0] == "bank_conflicts_off"
    assert "2.0 shared-memory wavefronts per request" in v.moves[0].expect
    conflict_free = Counters(**{**counters.__dict__, "bank_conflicts": 0.0})
    assert moves(diagnose(point, facts, conflict_free))[0] == "warp_tiling"


def test_a_naive_sgemm_is_bound_by_l1_not_a_chain(specs):
    """Nsight Compute: memory throughput 98 % (L1), DRAM 1 %, L2 low. With the L1 level it
    is bandwidth-bound at L1, and the move is to tile, not to cut DRAM bytes."""
    v = recorded("gemm_fp32", "naive", find_spec("h100-sxm", specs), threads=1024, l1_pct=98.0)
    assert v.bound == "bandwidth" and "l1_bound" in v.evidence
    assert v.summary.startswith("L1 at 98% of its peak")
    assert moves(v)[0] == "cut_l1_traffic"
    assert "fewer_bytes_per_element" not in moves(v)
    assert any("served from L1" in trap for trap in v.ruled_out)


def test_an_l1_percentage_on_a_few_sms_is_not_a_level_at_its_roof(specs):
    """ncu's L1 throughput is a percentage of the active SMs' cycles: the naive SGEMM's
    98 % on a grid of 1 block (one SM of 132: a one-warp kernel read 108 %) is under 1 %
    of the GPU's L1, so L1 does not bind and no L1 move is offered; on its full grid it
    binds, and a reading over 100 % counts as the peak, never above it."""
    spec = find_spec("h100-sxm", specs)
    one_sm = recorded("gemm_fp32", "naive", spec, threads=1024, l1_pct=108.0, grid_size=1)
    assert one_sm.bound != "bandwidth" and "l1_bound" not in one_sm.evidence
    assert not {"cut_l1_traffic", "fewer_l1_wavefronts"} & set(moves(one_sm))
    full = recorded("gemm_fp32", "naive", spec, threads=1024, l1_pct=108.0)
    assert full.bound == "bandwidth" and "l1_bound" in full.evidence
    assert full.summary.startswith("L1 at 100% of its peak")


def test_one_memory_level_binds_the_highest_against_its_roof(specs):
    """With the H100's calibrated L2 roof, naive's L2 runs at 1 % of it: L1 binds, and
    only L1's trap is printed, not L2's ("the data already lives in L2")."""
    calibration = load_calibration(ROOT / "examples" / "h100-calibration.json")
    v = recorded("gemm_fp32", "naive", find_spec("h100-sxm", specs), threads=1024,
                 calibration=calibration, l1_pct=98.0)
    assert "l1_bound" in v.evidence and "l2_bound" not in v.evidence and v.level == "l1"
    assert not any("lives in L2" in trap for trap in v.ruled_out)


# -- the whole space of evidence flags ----------------------------------------------------

MODIFIERS = ("left_of_ridge", "dram_headroom", "compute_headroom", "idle_math",
             "extra_traffic", "pipe_saturated", "register_blocked", "bank_conflicts",
             "shared_memory_tiles", "shared_memory_bound", "l1_bound", "l2_bound")
# Every cause alone under every mix of the other flags, and every pair of causes under the
# flags that interact with them: 4e4 consistent verdicts in two seconds.
SINGLE_CAUSES = [()] + [(flag,) for flag in registry.CAUSE_FLAGS]
CAUSE_PAIRS = list(itertools.combinations(registry.CAUSE_FLAGS, 2))
PAIR_MODIFIERS = ("idle_math", "extra_traffic", "pipe_saturated", "register_blocked")
PARALLELISM = {"fill_the_gpu"}
BYTE_CUTS = {"cut_redundant_traffic", "fewer_bytes_per_element"}
MORE_FLOPS = {"tensor_cores", "tf32_tensor_cores", "compute_efficiency", "more_ilp",
              "fp8_tensor_cores"}


def evidence_space():
    for bound in ("bandwidth", "compute", "chain"):
        for causes, modifiers in [*((c, MODIFIERS) for c in SINGLE_CAUSES),
                                  *((c, PAIR_MODIFIERS) for c in CAUSE_PAIRS)]:
            for chosen in itertools.product((False, True), repeat=len(modifiers)):
                flags = {f"{bound}_bound", *causes, *(m for m, on in zip(modifiers, chosen) if on)}
                if bound != "bandwidth" and flags & {"l1_bound", "l2_bound"}:
                    continue                       # a memory level binds only when it is the bound
                if {"l1_bound", "l2_bound"} <= flags:
                    continue                       # one level binds: the highest against its roof
                if ("shared_memory_bound" in flags
                        and not {"l1_bound", "shared_memory_tiles"} <= flags):
                    continue                       # L1-bound with shared-memory tiles, by def.
                if "left_of_ridge" not in flags:
                    flags.add("right_of_ridge")
                yield bound, flags


def test_every_verdict_gets_a_move_and_none_contradicts_its_evidence():
    checked = 0
    for bound, flags in evidence_space():
        evidence = Evidence(bound=bound, flags={f: f for f in flags})
        chosen = {rule.id for rule, *_ in catalog.select(evidence)[0]}
        where = (bound, sorted(flags))
        assert chosen, where
        if bound != "chain" or "pipe_saturated" in flags:
            assert not chosen & PARALLELISM, where     # at a roof, or its pipe full
        if "pipe_saturated" in flags:
            assert not chosen & {"more_ilp", "compute_efficiency"}, where
        if "register_blocked" in flags:
            assert "register_blocking" not in chosen, where
        if bound != "bandwidth":
            assert not chosen & BYTE_CUTS, where       # the book's INT8-KV trap
        if bound == "bandwidth":
            assert not chosen & MORE_FLOPS, where      # the math units are not the limit
        if flags & {"l1_bound", "l2_bound"}:
            assert not chosen & {"cut_redundant_traffic"}, where
        checked += 1
    assert checked > 35_000


def test_every_move_names_the_level_that_binds_and_no_fallback_hides_a_cause():
    """Over the whole evidence space: where L1 or L2 binds, no chosen move (fallback
    included) expects anything of the DRAM roof, and a bandwidth-bound kernel left with
    only a fallback gets its binding level's (L1's for an L1-bound tile); and where a
    cause's flag holds, the verdict's moves are not only the bound's
    fallback, unless every move the cause enables is ruled out by the evidence."""
    for bound, flags in evidence_space():
        evidence = Evidence(bound=bound, flags={f: f for f in flags},
                            values={"l1_pct": 90.0, "l2_pct": 90.0, "dram_pct": 3.0})
        moves, _ = catalog.select(evidence)
        where = (bound, sorted(flags))
        texts = [f"{rule.action} {expect}" for rule, _, expect, _ in moves]
        if flags & {"l1_bound", "l2_bound"}:
            assert not any("DRAM roof" in text for text in texts), where
        ids = {rule.id for rule, *_ in moves}
        if bound == "bandwidth" and ids <= set(catalog.FALLBACK.values()):
            assert ids == {catalog.fallback(evidence)}, where
            assert "l1_bound" not in flags or ids == {"fewer_l1_wavefronts"}, where
        for cause in registry.CAUSES:
            usable = [m for m in cause.enables if m not in catalog.FALLBACK_ONLY
                      and catalog.rule_for(m).applies(evidence)]
            if cause.flag in flags and usable:
                assert ids - set(catalog.FALLBACK.values()), (where, cause.flag)


def test_profile_ranks_an_l1_bound_kernel_by_its_l1_roof(specs):
    """`rooflint profile` ranks kernels by the time a fix could save, 1 - the fraction of
    the nearest roof: for a naive SGEMM that is L1 (98 %), not DRAM (1 %)."""
    from rooflint.judge.upside import best_fraction
    h100 = find_spec("h100-sxm", specs)
    point, counters = square_gemm(h100, "fp32", 4096, 4, 0.05, occupancy_pct=90.0, waves=8.0,
                                  registers_per_thread=32, grid_size=16384, l1_pct=98.0)
    assert point.dram_fraction < 0.1
    assert best_fraction(point, counters, None, "fp32", 132) == pytest.approx(0.98)


def test_a_result_carries_its_levels_and_names_the_one_that_binds(specs, tmp_path):
    """The H100 run's naive SGEMM with its L1 reading, through a whole result document:
    DRAM, L2 and L1 each with its intensity, L1 marked as binding in what `show` prints,
    and the levels read back from the file."""
    import io

    from rich.console import Console

    from rooflint.output.family_table import render_family
    from rooflint.formats.results import FamilyResult, RunResult, read_result, write_result
    from rooflint.judge.measurement import family_result
    from rooflint.formats.family_job import resolve
    from rooflint.formats.manifest import load_manifest
    from rooflint.formats.jobs import Clocks, Measurement, TimingJob
    from test_run import H100

    v = next(v for f in H100_RUN["families"] if f["name"] == "gemm_fp32"
             for v in f["variants"] if v["name"] == "naive")
    family = resolve(load_manifest("gemm_fp32"), {}, {"num_sms": 132}, TimingJob(), ["naive"])
    measured = Measurement("naive", "ok", "", [], v["samples_s"], Clocks(), {}, [])
    counters = {"naive": Counters(**{**v["counters"], "l1_pct": 98.0})}
    result: FamilyResult = family_result(family, [measured], counters,
                                         find_spec("h100-sxm", specs), H100)
    naive = result.variants[0]
    assert naive.verdict.level == "l1"
    assert [level.name for level in naive.levels] == ["dram", "l2", "l1"]
    dram, l2, l1 = naive.levels
    assert l1.intensity < l2.intensity < dram.intensity          # the traffic grows inward
    assert l1.fraction == pytest.approx(0.98) and l2.fraction is None   # no L2 calibration
    console = Console(file=io.StringIO(), width=100)
    render_family(console, result, Depth.DETAIL)
    assert "AI" in console.file.getvalue() and "(binds)" in console.file.getvalue()
    path = tmp_path / "r.json"
    write_result(RunResult(gpu=H100, spec_id="h100-sxm", families=[result]), path)
    assert read_result(path).families[0].variants[0].levels == naive.levels


# -- moves ranked by their estimated gain -----------------------------------------------

def test_an_uncoalesced_read_is_told_first_the_move_its_wasted_bytes_price(specs):
    """strided_read at 86 % of DRAM moves 8.5x its compulsory bytes: cutting them could make
    it 8.5x faster (a move right is not capped by the DRAM roof it leaves behind), more
    than the 1.2x left below that roof, which at the roof is no move at all (issue 47)."""
    v = recorded("stream", "strided_read", find_spec("h100-sxm", specs), threads=256)
    (first,) = v.moves
    assert (first.id, first.gain_from) == ("cut_redundant_traffic", "evidence")
    assert first.gain == pytest.approx(8.5, rel=0.02)


def test_a_grid_that_fills_few_of_the_gpus_warps_is_told_to_fill_it_up_to_its_waves(specs):
    """w4a16 naive_3b on the H100: 128 blocks, 0.03 of the waves the GPU could hold, 54x
    below the DRAM roof. Split-K is the move, "up to" the warps it could add: a bound from
    its own evidence (split 4 ways it realised 2.2x on an H200), ranked before the
    roof-bounded bytes in flight."""
    v = recorded("w4a16_gemv", "naive_3b", find_spec("h100-sxm", specs), threads=256)
    assert [m.id for m in v.moves] == ["fill_the_gpu", "bytes_in_flight"]
    fill = v.moves[0]
    assert (fill.gain_from, fill.gain_low) == ("up_to", 1.0)
    assert fill.gain == pytest.approx(min(1 / 0.03, v.moves[1].gain), rel=0.05)


def test_precision_changing_moves_rank_by_their_expected_gain(specs):
    """fp8 promises up to 2.4x to the mma.sync kernel, wgmma up to 1.2x: ranked by what
    each is expected to buy (the geometric middle of its range, issue 48), fp8 first,
    saying what it trades."""
    h100 = find_spec("h100-sxm", specs)
    point, counters = square_gemm(h100, "fp16-tensor", 8192, 2, 0.85, occupancy_pct=12.0,
                                  waves=0.4, registers_per_thread=232, grid_size=528,
                                  tensor_pipe_pct=97.0, hmma_instructions=4.2e9)
    facts = LaunchFacts(grid_blocks=528, threads_per_block=256, launches=1, sms=132,
                        precision="fp16-tensor", fp8_roof=h100.peaks["fp8-tensor"].flops_per_s,
                        compute_capability="9.0")
    fp8, wgmma = diagnose(point, facts, counters).moves
    assert (fp8.id, wgmma.id) == ("fp8_tensor_cores", "warpgroup_mma")
    assert fp8.gain > 2 > wgmma.gain
    assert "where the accuracy allows" in fp8.action


def test_explain_prints_each_moves_gain_and_its_basis(specs):
    import io

    from rich.console import Console

    from rooflint.output.roofs import render_verdict
    console = Console(file=io.StringIO(), width=200)
    spec = find_spec("h100-sxm", specs)
    render_verdict(console, recorded("stream", "strided_read", spec, threads=256))
    render_verdict(console, recorded("w4a16_gemv", "naive_3b", spec, threads=256))
    text = " ".join(console.file.getvalue().split())
    # an estimate and the band the corpus's errors allow (ESTIMATE_SPREAD either side)
    assert "about 8.5x faster (5.67x to 12.8x, from its evidence)" in text
    assert re.search(r"up to 3\d(\.\d)?x faster \(from its evidence\)", text)  # 1 / waves
    assert re.search(r"up to 5\d(\.\d)?x faster \(from the nearest roof\)", text)  # DRAM 2 %


# -- the whole space of observations: caps (issue 47) ------------------------------------

UP_TO = re.compile(r"up to ([\d.]+)x")


def observation_space(spec):
    """Kernels over the input space, as diagnose sees them: CUDA-core fp32 and bf16 tensor
    work at each fraction of its compute roof and of DRAM's, L1 readings, grids under one
    wave to many waves, each stall reason on top, few or many resident warps and busy or
    idle issue slots, a 4 us kernel and a 1 ms one."""
    stalls = [{}, *({reason: 3.0, "wait": 0.5} for reason in registry.STALL_REASONS)]
    for precision, compute, dram, l1_pct, waves, stall, (theoretical, issue), time_s in \
            itertools.product(("fp32", "bf16-tensor"), (0.02, 0.3, 0.65, 0.83, 0.95),
                              (0.01, 0.41, 0.7, 0.95), (0.0, 40.0, 73.0, 98.0),
                              (0.1, 0.91, 1.5, 8.0), stalls, ((12.0, 40.0), (100.0, 92.0)),
                              (4e-6, 1e-3)):
        roofs = roofs_for(spec, precision, None)
        flops, moved = compute * roofs.compute * time_s, dram * roofs.dram_bandwidth * time_s
        point = place(time_s, flops, moved, None, roofs, "ncu")
        grid = max(1, round(waves * spec.sms))
        counters = Counters(kernels=["k"], duration_s=time_s, dram_read=moved, dram_write=0.0,
                            l2_bytes=2 * moved, l1_bytes=2 * moved, local_bytes=0.0,
                            flops={precision: flops}, occupancy_pct=theoretical / 2,
                            waves=waves, registers_per_thread=64, grid_size=grid,
                            stalls=stall, l1_pct=l1_pct, issue_active_pct=issue,
                            theoretical_occupancy_pct=theoretical, blocks_per_sm=1,
                            instructions=flops / 64 / 0.3 + 1.0)
        facts = LaunchFacts.of(spec.sms, precision, grid_blocks=grid, threads_per_block=256,
                               fp8_roof=spec.peaks["fp8-tensor"].flops_per_s,
                               compute_capability=spec.compute_capability)
        yield point, counters, facts, diagnose(point, facts, counters)


def cap_of(move, point, counters, facts) -> float:
    """What a move may promise at most, from the point itself: a move up the distance to
    the nearest roof whose traffic it does not cut, and no faster than an empty launch; a
    move right or up-and-right the compute roof's distance."""
    rule = catalog.rule_for(move.id)
    if rule.direction != "up":
        return 1 / point.compute_fraction
    fractions = {"dram": point.dram_fraction, "compute": point.compute_fraction,
                 "l1": l1_fraction(counters, facts.sms)}
    nearest = max(f for roof, f in fractions.items() if roof not in rule.cuts)
    return max(1.0, min(1 / nearest, point.time_s / EMPTY_KERNEL_S))


def test_no_move_promises_more_than_the_roof_it_would_meet(specs):
    """A GEMM at 83 % of its compute roof was told "up to 7.59x if the idle issue slots
    fill", a one-warp 4 us kernel "up to 132x": over every observation, a move's gain and
    every "up to Nx" its expectation prints stay within the roof it moves toward."""
    checked = 0
    for point, counters, facts, verdict in observation_space(find_spec("h100-sxm", specs)):
        for move in verdict.moves:
            if catalog.rule_for(move.id).direction not in ("up", "right", "up+right"):
                continue                 # a higher roof, or less work: its own arithmetic
            cap = cap_of(move, point, counters, facts) * 1.001
            where = (move.id, move.expect, point.compute_fraction, point.dram_fraction,
                     counters.l1_pct, counters.waves, point.time_s)
            assert move.gain is None or move.gain <= cap, where
            assert all(float(n) <= cap + 0.01 for n in UP_TO.findall(move.expect)), where
            checked += 1
    assert checked > 15_000     # a launch-bound kernel's moves are its launch's alone


def test_a_kernel_whose_time_is_its_launch_gets_the_launch_move_alone(specs):
    """Issue 48: a one-warp kernel of 4 us was told "more parallelism, up to 132x" beside
    amortising its launch. Over every observation, a verdict that offers the launch move
    offers nothing else, its gain no more than an empty launch's time allows."""
    launch_bound = 0
    for point, _counters, _facts, verdict in observation_space(find_spec("h100-sxm", specs)):
        ids = [m.id for m in verdict.moves]
        if "launch_amortise" in ids:
            assert ids == ["launch_amortise"], ids
            gain = verdict.moves[0].gain
            assert gain is None or gain <= point.time_s / EMPTY_KERNEL_S * 1.001
            launch_bound += 1
    assert launch_bound > 100


def test_a_kernel_at_its_roof_gets_no_move_up_and_a_callers_reason_is_its_own_move(specs):
    """A cuBLAS GEMM at 102 % of its compute roof ("done") was told "move up: shape the
    GEMM for cuBLAS's tiles; why: ... fp8 tensor cores". Over every observation and every
    library: at AT_ROOF of its nearest roof, no move goes up unless it cuts that roof's own
    traffic (fewer L1 wavefronts at L1's peak), and a caller's move gives as its reason a
    kernel-level move in its own direction, or none."""
    from rooflint.analysis.caller_moves import EVERY_LIBRARY, with_caller_moves
    at_roof = 0
    for point, counters, facts, verdict in observation_space(find_spec("h100-sxm", specs)):
        fractions = {"dram": point.dram_fraction, "compute": point.compute_fraction,
                     "l1": l1_fraction(counters, facts.sms)}
        roof = max(fractions, key=fractions.get)
        for library in EVERY_LIBRARY:
            called = with_caller_moves(verdict, library)
            for move in called.moves:
                where = (library, move.id, move.reason, fractions)
                if fractions[roof] >= AT_ROOF and move.direction == "up":
                    rule = catalog.rule_for(move.id)
                    assert rule is not None and roof in rule.cuts, where
                if "; in the kernel: " in move.reason:
                    action = move.reason.split("; in the kernel: ", 1)[1]
                    assert any(k.action == action and k.direction == move.direction
                               for k in verdict.moves), where
        at_roof += fractions[roof] >= AT_ROOF
    assert at_roof > 5_000


def test_no_move_is_contradicted_by_a_line_printed_under_it(specs):
    """'move right: fuse the element-wise chain around it with torch.compile' was printed
    above 'not fewer bytes (... fuse for traffic): DRAM runs at 41 % of its roof'. Over
    every observation and every library: no move (the kernel's or its caller's) is one a
    printed "not ..." line rules out, and no such line names fusion, which removes a
    kernel's launch and round trip whatever fraction of DRAM it runs at."""
    from rooflint.analysis.caller_moves import EVERY_LIBRARY, with_caller_moves
    patterns = [(re.compile(re.sub(r"\\\{[^}]*\\\}", ".*", re.escape(trap.text))), trap)
                for trap in catalog.TRAPS]
    printed = 0
    for _, _, _, verdict in observation_space(find_spec("h100-sxm", specs)):
        said = [next(trap for pattern, trap in patterns if pattern.fullmatch(text))
                for text in verdict.ruled_out]
        assert not any("fus" in trap.text for trap in said), verdict.ruled_out
        excluded = {move for trap in said for move in trap.rules_out}
        for library in (None, *EVERY_LIBRARY):
            chosen = {m.id for m in with_caller_moves(verdict, library).moves}
            assert not chosen & excluded, (library, chosen & excluded, verdict.ruled_out)
        printed += bool(said)
    assert printed > 5_000


# -- a memory level binds only on the bytes that crossed it (issue 47, item 6) ------------

def test_a_wgmma_gemm_is_judged_on_its_tensor_roof_not_on_its_l1_percentage(specs):
    """nanoGPT's cuBLAS nvjet GEMM on an H100 (recorded, examples/profile): ncu read 72.6 %
    L1 throughput while 2 KB crossed L1 (TMA brings its tiles to shared memory, wgmma
    reads them there), and it was called bandwidth-bound at L1 ('L1 111 MB/s (73 % of its
    peak) (binds)'). L1 moved no share of its traffic, so it cannot bind: the GEMM at
    66 % of its tensor roof is compute-bound. Bytes through L1 make the same reading bind."""
    document = json.loads((ROOT / "examples" / "profile" / "h100-profile-nanogpt-eager.json")
                          .read_text())
    v = next(v for f in document["families"] for v in f["variants"]
             if v["name"].startswith("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coo")
             and v["counters"]["l1_pct"] > 70)
    spec = find_spec("h100-sxm", specs)
    calibration = load_calibration(ROOT / "examples" / "h100-calibration.json")

    def judged(**changes):
        counters = Counters(**{**v["counters"], **changes})
        observation = Observation(v["name"], v["precision"], v["samples_s"], counters, None,
                                  counters.grid_size, 0, 1, point_time_s=counters.duration_s,
                                  cached=True)
        return analyse(observation, spec, spec.sms, calibration)

    tma = judged()
    assert tma.counters.l1_bytes < 1e4 and tma.counters.gmma_instructions
    assert (tma.verdict.bound, tma.verdict.level) == ("compute", None)
    assert "l1_bound" not in tma.verdict.evidence and tma.levels[2].fraction == 0.0
    through_l1 = judged(l1_bytes=tma.counters.l2_bytes)       # the same % on real L1 bytes
    assert (through_l1.verdict.bound, through_l1.verdict.level) == ("bandwidth", "l1")


def test_a_move_worth_under_five_percent_never_tops_a_larger_one():
    """Over every order of three moves with gains around MIN_TOP_GAIN (from evidence, or
    bounded by the roof alone), the top move is worth MIN_TOP_GAIN or more whenever some
    move is; the order among the rest is kept."""
    from rooflint.analysis.moves import CATALOG, MIN_TOP_GAIN, Gain, worth_topping
    rules = [r for r in CATALOG][:3]
    choices = [Gain(1.01, True), Gain(1.04, True), Gain(1.3, True), Gain(8.3, True),
               Gain(2.0, False), Gain(None, False)]
    for gains in itertools.product(choices, repeat=3):
        for order in itertools.permutations(rules):
            estimates = {r.id: g for r, g in zip(rules, gains)}
            ranked = worth_topping(list(order), estimates)
            assert sorted(r.id for r in ranked) == sorted(r.id for r in order)
            top = estimates[ranked[0].id]
            some_larger = any((g.speedup or 0) >= MIN_TOP_GAIN for g in gains)
            if some_larger:
                assert not (top.from_evidence and (top.speedup or 0) < MIN_TOP_GAIN)
            else:
                assert ranked == list(order)


@pytest.mark.parametrize("line, refuted", [
    ("cuda::memcpy_async(block, tile, src, bytes, pipe);", True),
    ('asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(s));', True),
    ("<Unable to open source file> cuda_pipeline_helpers.h:190", True),   # inlined header
    ("__pipeline_memcpy_async(&tile[i], &src[i], 16);", True),
    ("acc = fmaf(a[k], b[k], acc);", False),
    ("__syncthreads();", False),
    ("", False),
])
def test_an_async_copy_on_the_top_stall_line_refutes_the_async_copy_trap(line, refuted):
    heads = catalog.refuted_traps(line)
    assert heads == (("not cp.async / more asynchronous loads",) if refuted else ())
