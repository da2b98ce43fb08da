"""compare and gate decide time alike; compare says where a speedup came from; noisy
medians are flagged wherever they are shown; sampling goes on while the spread is wide.

All on the recorded H200 results (tests/fixtures/results/h200-bundled.json, the run of
2026-11-21) or on synthetic samples whose only purpose is to cover many pairs and gaps.
"""

import copy
import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from edges import cli_runner

from rooflint.output.depth import Depth
from rooflint.formats import baseline as baselines
from rooflint.formats.baseline import Baseline, Entry
from rooflint.commands.cli import app
from rooflint.judge.comparison import compare, decide, describe_movement
from rooflint.judge.gate import evaluate
from rooflint.measure import sampling
from rooflint.formats.jobs import TimingJob
from rooflint.output.family_table import render_family
from rooflint.output.tables import render_comparison
from rooflint.analysis.stats import NOISY_SPREAD, TimeStats
from rooflint.formats.results import read_result, write_result

RESULT = Path(__file__).parents[1] / "fixtures" / "results" / "h200-bundled.json"
runner = cli_runner()
# compare's decision and the gate outcome it must come to on the same pair and gap
GATE_OUTCOME = {"slower": "regressed", "faster": "improved", "same": "pass",
                "inconclusive": "inconclusive"}


@pytest.fixture(scope="module")
def result():
    return read_result(RESULT)


def variant(result, name):
    return next(v for f in result.families for v in f.variants if v.name == name)


def with_samples(v, samples):
    samples = [float(x) for x in samples]
    return replace(v, samples_s=samples, time=TimeStats.of(samples))


def slowed(result, name, factor):
    """A copy of the run in which one variant's samples are all ``factor`` times longer."""
    other = copy.deepcopy(result)
    v = variant(other, name)
    v.samples_s = [x * factor for x in v.samples_s]
    v.time = TimeStats.of(v.samples_s)
    return other


def text_of(render, *args) -> str:
    console = Console(record=True, width=200)
    render(console, *args)
    return console.export_text()


# -- 1. both sides' time, FLOP/s and GB/s ------------------------------------------------

def test_compare_shows_time_flops_and_bandwidth_of_both_sides(result):
    tiled, blocked = variant(result, "tiled"), variant(result, "blocked_2d")
    c = compare(tiled, blocked)
    assert c.figures["tiled"].time_s == tiled.time.median_s
    assert c.figures["blocked_2d"].flop_rate == pytest.approx(45.8e12, rel=0.01)
    assert c.figures["tiled"].flop_rate == pytest.approx(8.96e12, rel=0.01)
    assert c.figures["tiled"].bandwidth == pytest.approx(552e9, rel=0.01)
    assert c.figures["blocked_2d"].bandwidth == pytest.approx(207e9, rel=0.01)
    lines = text_of(render_comparison, c).splitlines()

    def row(label):
        [line] = [x.strip() for x in lines if x.strip().startswith(label)]
        return " ".join(line.removeprefix(label).split())
    assert row("time (median ± IQR)") == "15.3 ms ±0% (12 samples) 3 ms ±0% (16 samples)"
    assert row("FLOP/s") == "8.96 TFLOP/s 45.8 TFLOP/s"
    assert row("DRAM bandwidth") == "552 GB/s 207 GB/s"


def test_a_copy_has_no_flop_rate_but_its_bandwidth(result):
    c = compare(variant(result, "copy_scalar"), variant(result, "copy_float4"))
    assert c.figures["copy_scalar"].flop_rate is None
    assert c.figures["copy_float4"].bandwidth == pytest.approx(3.95e12, rel=0.01)
    assert c.attribution.flops is None
    assert c.attribution.sentence == ("the same DRAM bytes at 1.44x more GB/s (more work per "
                                      "second at the same bytes: an up move)")


def test_compare_json_carries_figures_attribution_and_warnings(result):
    outcome = runner.invoke(app, ["compare", f"{RESULT}:tiled", f"{RESULT}:blocked_2d",
                                  "--json", "-"])
    assert outcome.exit_code == 0, outcome.output
    [c] = json.loads(outcome.output)["comparisons"]
    assert set(c["figures"]) == {"tiled", "blocked_2d"}
    assert c["figures"]["tiled"]["flop_rate"] == pytest.approx(8.96e12, rel=0.01)
    assert c["attribution"]["sentence"].startswith("13.65x fewer DRAM bytes at 2.67x less GB/s")
    assert c["warnings"] == []


# -- 2. where the speedup came from ------------------------------------------------------

def test_tiled_to_blocked_2d_says_where_the_speedup_came_from(result):
    """5.11x faster with 13.65x fewer bytes: the time did not follow the bytes (tiled was
    chain-bound); the gain is FLOP/s at the same FLOPs. No bare "did not pay"."""
    c = compare(variant(result, "tiled"), variant(result, "blocked_2d"))
    assert c.sentence.startswith("blocked_2d is 5.11x faster than tiled")
    assert c.attribution.sentence == (
        "13.65x fewer DRAM bytes at 2.67x less GB/s; the same FLOPs at 5.11x more FLOP/s "
        "(the time did not follow the bytes: an up move)")
    assert c.notes == ["the byte cut did not set the time: 13.65x fewer DRAM bytes, 5.11x less "
                       "time; tiled was chain-bound (DRAM at 13% of its roof), so bytes were "
                       "not its limit"]


def test_a_byte_cut_that_paid_says_how_much_of_the_speedup_it_explains(result):
    c = compare(variant(result, "naive"), variant(result, "blocked_1d"))
    assert c.notes == ["the byte cut paid: 6.96x fewer DRAM bytes explain 6.96x of the 34.12x "
                       "less time; the rest is 4.90x more GB/s"]
    assert c.attribution.reading == "fewer bytes and more GB/s: right and up"
    stream = compare(variant(result, "strided_read"), variant(result, "copy_float4"))
    assert stream.notes == ["the byte cut paid: 8.50x fewer DRAM bytes, 8.63x less time"]
    assert stream.attribution.reading == "the time followed the bytes: a right move"


def test_every_recorded_pair_decomposes_exactly_and_never_contradicts_itself(result):
    """Over every ordered pair of every family: time ratio = bytes x bandwidth = FLOPs x
    FLOP/s; a byte-cut verdict states the same time change as the headline; "paid" exactly
    when the reading says the time followed the bytes (or bytes and GB/s both helped)."""
    judged = 0
    for family in result.families:
        timed = [v for v in family.variants if v.time]
        for a, b in itertools.permutations(timed, 2):
            c = compare(a, b)
            at = c.attribution
            assert at.speedup == pytest.approx(c.speedup.ratio, rel=1e-9)
            assert at.speedup == pytest.approx(at.bandwidth / at.bytes, rel=1e-9)
            if at.flops is not None:
                assert at.speedup == pytest.approx(at.flop_rate / at.flops, rel=1e-9)
            cut = [n for n in c.notes if n.startswith("the byte cut")]
            if not cut:
                continue
            judged += 1
            assert "did not pay" not in cut[0]
            if c.speedup.decision == "faster":
                assert f"{c.speedup.ratio:.2f}x less time" in cut[0], (a.name, b.name)
            paid = cut[0].startswith("the byte cut paid")
            assert paid == (at.reading.startswith("the time followed the bytes")
                            or at.reading.startswith("fewer bytes and more GB/s")), (a.name, b.name)
    assert judged >= 40


# -- 3. one decision for compare and gate --------------------------------------------------

def test_a_noisy_baseline_made_30_percent_slower_is_slower_in_compare_and_regressed_in_gate(
        result, tmp_path):
    """The w4a16 cuBLAS baseline (17.5 us, IQR ±88 %) against itself x1.3: the noise is
    flagged, not folded into a floor that hides the slowdown."""
    base = variant(result, "cublas_fp16")
    assert base.time.noisy and base.time.spread > 0.85
    slower = slowed(result, "cublas_fp16", 1.3)
    c = compare(base, variant(slower, "cublas_fp16"))
    assert c.speedup.decision == "slower"
    assert c.sentence.startswith("cublas_fp16 is 1.30x slower")
    assert [w.split(" is noisy")[0] for w in c.warnings] == ["side A, cublas_fp16,",
                                                             "side B, cublas_fp16,"]
    gated = evaluate(baselines.from_result(result), baselines.from_result(slower))
    row = next(r for r in gated.rows if r.variant == "cublas_fp16")
    assert row.outcome == "regressed" and row.reasons[0].startswith("time +30.0%")
    assert row.warnings[0].startswith("noisy baseline: IQR ±88% of the median over 200 samples")

    path = tmp_path / "slower.json"
    write_result(slower, path)
    shown = runner.invoke(app, ["compare", f"{RESULT}:cublas_fp16", f"{path}:cublas_fp16",
                                "--json", "-"])
    assert json.loads(shown.output)["comparisons"][0]["speedup"]["decision"] == "slower"
    base_file = tmp_path / "baseline.json"
    assert runner.invoke(app, ["gate", "--baseline", str(base_file), "--current", str(RESULT),
                               "--update"]).exit_code == 0
    gated = runner.invoke(app, ["gate", "--baseline", str(base_file), "--current", str(path)])
    assert gated.exit_code == 1 and "regressed" in gated.output


@pytest.mark.parametrize("ratio, low, high, gap, decision", [
    (1.30, 1.26, 1.34, 0.01, "faster"),         # the whole interval past the gap
    (1 / 1.30, 1 / 1.34, 1 / 1.26, 0.05, "slower"),
    (1.004, 0.95, 1.06, 0.01, "same"),          # estimate within the gap, however wide
    (1.04, 1.005, 1.08, 0.01, "inconclusive"),  # past the gap, the interval not: either side
    (1 / 1.04, 1 / 1.08, 1 / 1.005, 0.01, "inconclusive"),
    (1.06, 1.02, 1.10, 0.05, "inconclusive"),   # a gate gap of 5 %: a likely 6 % gain
    (1.0, 0.2, 5.0, 0.88, "same"),              # a gap is a gap, not noise
])
def test_the_one_time_decision(ratio, low, high, gap, decision):
    assert decide(ratio, low, high, gap) == decision


def gate_outcome(a: list[float], b: list[float], gap: float) -> str:
    def side(samples):
        return Baseline("NVIDIA H200", "h200", "570", None, None,
                        [Entry("f", "v", "ok", list(samples), None, None, None, None, None)])
    [row] = evaluate(side(a), side(b), {"max_slowdown": gap}).rows
    return row.outcome


def test_compare_and_gate_agree_on_many_pairs_and_gaps(result):
    """Synthetic sample pairs: every noise level, change and gap; compare at a gap decides
    what the gate decides with that gap as max_slowdown."""
    rng = np.random.default_rng(10)
    template = variant(result, "tiled")
    seen = set()
    for _ in range(250):
        n_a, n_b = rng.integers(5, 120, size=2)
        noise = rng.choice([0.002, 0.01, 0.03, 0.1, 0.4])
        change = rng.uniform(0.85, 1.2)
        gap = float(rng.choice([0.005, 0.01, 0.02, 0.05, 0.1]))
        a = 1e-3 * rng.lognormal(0, noise, n_a)
        b = 1e-3 * change * rng.lognormal(0, noise, n_b)
        decision = compare(with_samples(template, a), with_samples(template, b),
                           gap=gap).speedup.decision
        assert GATE_OUTCOME[decision] == gate_outcome(a, b, gap), (noise, change, gap)
        seen.add(decision)
    assert seen == set(GATE_OUTCOME)


# -- 4. noisy measurements ---------------------------------------------------------------

def test_noisy_is_one_threshold_on_the_spread():
    def stats(spread):
        return TimeStats(median_s=1.0, q1_s=1.0 - spread / 2, q3_s=1.0 + spread / 2,
                         min_s=0.5, n=200)
    assert stats(NOISY_SPREAD * 1.01).noisy and not stats(NOISY_SPREAD * 0.99).noisy
    assert stats(0.5).noise == ("IQR ±50% of the median over 200 samples (limit "
                                f"±{100 * NOISY_SPREAD:.0f}%)")


def test_the_run_table_flags_a_noisy_time_and_every_speed_against_it(result):
    w4a16 = next(f for f in result.families if f.name == "w4a16_gemv")
    text = text_of(render_family, w4a16, Depth.DETAIL)
    [cublas_row] = [line for line in text.splitlines() if line.startswith("cublas_fp16")]
    assert "17.5 us ±88% noisy" in cublas_row
    text = " ".join(text.split())       # notes sit in a grid: names are padded to one width
    assert "cublas_fp16: noisy time: IQR ±88% of the median over 200 samples" in text
    assert "naive_3b: 0.13x the speed of the baseline (a noisy baseline: cublas_fp16 spreads " \
           "±88%)" in text
    assert "ksplit_3c: 0.28x the speed of the baseline (a noisy baseline" in text
    gemm = next(f for f in result.families if f.name == "gemm_fp32")
    assert "noisy" not in text_of(render_family, gemm, Depth.DETAIL)      # cuBLAS there spreads ±0%


def test_compare_prints_a_warning_naming_the_noisy_side(result):
    c = compare(variant(result, "ksplit_3c"), variant(result, "cublas_fp16"))
    text = " ".join(text_of(render_comparison, c).split())
    assert "warning: side B, cublas_fp16, is noisy: IQR ±88% of the median over 200 samples" in text
    assert "ksplit_3c, is noisy" not in text
    assert "±88% (200 samples) noisy" in text


class FakeSession:
    """Times nothing: hands out samples drawn from ``draw``, in batches of 50."""

    def __init__(self, draw):
        self.draw = draw

    def warm_up(self, run, cold):
        return 1e-3

    def batch(self, run, cold, count, clocks):
        return [self.draw() for _ in range(count)]


def test_sampling_goes_past_max_samples_while_the_spread_is_wide():
    rng = np.random.default_rng(0)
    timing = TimingJob(min_samples=10, max_samples=200, target_spread=0.02, budget_s=1.0)

    def noisy():
        return rng.choice([17e-6, 50e-6])
    taken = [len(samples) for samples, _ in sampling.time_interleaved(
        [(FakeSession(noisy), None), (FakeSession(noisy), None)], timing)]
    assert taken == [sampling.NOISY_SAMPLES_FACTOR * timing.max_samples] * 2

    [(quiet, _)] = sampling.time_interleaved([(FakeSession(lambda: 20e-6), None)], timing)
    assert len(quiet) == 50                                  # settled after one batch

    def slow_and_noisy():
        return rng.choice([2e-3, 4e-3])
    [(budgeted, _)] = sampling.time_interleaved([(FakeSession(slow_and_noisy), None)], timing)
    assert timing.max_samples < len(budgeted) < sampling.NOISY_SAMPLES_FACTOR * timing.max_samples
    assert sum(budgeted[:-50]) <= timing.budget_s < sum(budgeted)   # stopped by the budget


# -- 5. the L2 roof ------------------------------------------------------------------------

def test_an_l2_bound_kernel_is_under_the_l2_roof_not_the_dram_roof(result):
    c = compare(variant(result, "v6a_more_warps"), variant(result, "v6b_bytes_in_flight"))
    assert (c.movement["roof_before"], c.movement["roof_after"]) == ("dram", "l2")
    assert "now under the L2 roof (was DRAM)" in describe_movement(c.movement)
    same = compare(variant(result, "l2_resident"), variant(result, "l2_resident"))
    text = describe_movement(same.movement)
    assert "the L2 roof applies" in text and "DRAM roof" not in text
    cut = compare(variant(result, "v6b_bytes_in_flight"), variant(result, "int8_kv"))
    assert cut.notes[-1].endswith("v6b_bytes_in_flight was bound by L2 (DRAM at 47% of its "
                                  "roof), so DRAM bytes were not its limit")


@pytest.mark.parametrize("factor", [1.03, 1.06, 1.08, 1.30])
def test_compare_and_gate_agree_by_default(result, factor):
    """With nobody choosing a gap, compare uses the gate's threshold: the same decision on
    the same pair (a 6 % slowdown was "slower" in compare and "inconclusive" in gate)."""
    base = variant(result, "cublas_fp16")
    slower = replace(base, samples_s=[s * factor for s in base.samples_s])
    decided = compare(base, slower).speedup.decision

    def side(v):
        return Baseline("NVIDIA H200", "h200", "570", None, None,
                        [Entry("f", "v", "ok", list(v.samples_s), None, None, None, None, None,
                               dict(v.gate))])
    [row] = evaluate(side(base), side(slower)).rows          # no overrides: the defaults
    assert GATE_OUTCOME[decided] == row.outcome, (decided, row.outcome)
