"""`rooflint compare` on committed H200 results, with no GPU (`plot` is in test_plot.py)."""

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest
from edges import cli_runner

import rooflint
from rooflint.commands.cli import app
from rooflint.judge.comparison import compare, speedup
from rooflint.common.errors import RooflintError
from rooflint.formats.results import read_result, write_result
from rooflint.engine.compare_sides import gpu_warning, pairs_from_files

RESULT = Path(__file__).parents[1] / "fixtures" / "results" / "h200-bundled.json"
runner = cli_runner()


@pytest.fixture(scope="module")
def result():
    return read_result(RESULT)


def test_identical_samples_are_the_same():
    samples = [1.00e-3, 1.01e-3, 0.99e-3, 1.02e-3, 1.00e-3, 0.98e-3, 1.01e-3, 1.00e-3]
    s = speedup(samples, list(samples))
    assert s.decision == "same" and s.ratio == 1.0


def test_a_ten_percent_slowdown_is_called_slower():
    rng = __import__("numpy").random.default_rng(1)
    a = list(1e-3 * (1 + 0.005 * rng.standard_normal(30)))
    b = [x * 1.10 for x in a]
    s = speedup(a, b)
    assert s.decision == "slower" and s.ratio == pytest.approx(1 / 1.10, rel=1e-3)
    assert s.high < 1


def test_noise_wider_than_the_change_is_inconclusive():
    """A 3 % change inside 5 % noise: past the 1 % gap, but the interval reaches 1. The noise
    widens the interval, not the gap."""
    rng = __import__("numpy").random.default_rng(2)
    a = list(1e-3 * (1 + 0.05 * rng.standard_normal(12)))
    b = list(1e-3 * 1.02 * (1 + 0.05 * rng.standard_normal(12)))
    s = speedup(a, b, gap=0.01)
    assert s.decision == "inconclusive" and s.gap == 0.01
    assert s.ratio < 1 / 1.01 and s.low < 1 < s.high


def test_compare_tiled_with_blocked_2d(result):
    c = rooflint.compare(rooflint.variant(result, "tiled"), rooflint.variant(result, "blocked_2d"))
    assert c.speedup.decision == "faster"
    assert c.sentence.startswith("blocked_2d is 5.11x faster than tiled (95 % interval")
    assert c.sentence.endswith("; 5.0 % minimum clear gap)")     # gate's default threshold
    assert c.movement["right"] == pytest.approx(222 / 16.2, rel=0.02)
    assert (c.movement["verdict_before"], c.movement["verdict_after"]) == ("chain", "compute")
    assert c.bytes["tiled"]["ncu"] > 10 * c.bytes["blocked_2d"]["ncu"]


def test_a_stated_prediction_is_checked(result):
    v3, int8 = rooflint.variant(result, "v3_vectorized"), rooflint.variant(result, "int8_kv")
    int8 = replace(int8, expect={"bound": "chain", "faster_than": "v3_vectorized", "move": "right"})
    c = compare(v3, int8)
    assert "held" in c.expectation and "predicted to move right: held" in c.expectation


def test_compare_cli_on_two_files(tmp_path, result):
    slower = copy.deepcopy(result)
    for family in slower.families:
        for v in family.variants:
            v.samples_s = [x * 1.1 for x in v.samples_s]
    path = tmp_path / "slower.json"
    write_result(slower, path)
    outcome = runner.invoke(app, ["compare", f"{RESULT}:tiled", f"{path}:tiled", "--json", "-"])
    assert outcome.exit_code == 0, outcome.output
    doc = json.loads(outcome.output)
    assert doc["comparisons"][0]["speedup"]["decision"] == "slower"
    assert "1.10x slower" in doc["comparisons"][0]["sentence"]


def test_whole_files_pair_by_variant_name(tmp_path):
    pairs = pairs_from_files(str(RESULT), str(RESULT))
    assert len(pairs) == sum(1 for f in read_result(RESULT).families for _ in f.variants)
    assert pairs[0][0].label.endswith("(h200-bundled.json)")


def test_different_gpus_are_refused_unless_allowed(result, tmp_path):
    other = copy.deepcopy(result)
    other.gpu = replace(other.gpu, name="NVIDIA H100 80GB HBM3")
    path = tmp_path / "h100.json"
    write_result(other, path)
    pairs = pairs_from_files(f"{RESULT}:tiled", f"{path}:tiled")
    with pytest.raises(RooflintError, match="different GPUs"):
        gpu_warning(pairs, allow_different_gpu=False)
    assert "COMPARING DIFFERENT GPUs" in gpu_warning(pairs, allow_different_gpu=True)
    outcome = runner.invoke(app, ["compare", f"{RESULT}:tiled", f"{path}:tiled"])
    assert outcome.exit_code == 2


def test_int8_kv_against_v3_says_whether_the_byte_cut_paid(result):
    """The issue's bar: INT8 KV vs v3 reports bytes, intensity and time, and why the cut did
    not pay (v3 was chain-bound), from the committed H200 measurement."""
    c = compare(rooflint.variant(result, "v3_vectorized"), rooflint.variant(result, "int8_kv"))
    assert c.bytes["int8_kv"]["ncu"] < 0.55 * c.bytes["v3_vectorized"]["ncu"]
    assert c.movement["right"] == pytest.approx(1.93, rel=0.01)
    assert c.speedup.ratio == pytest.approx(1.07, rel=0.01)
    assert c.notes == ["the byte cut did not set the time: 1.93x fewer DRAM bytes, 1.07x less "
                       "time; v3_vectorized was chain-bound (DRAM at 1% of its roof), so bytes "
                       "were not its limit"]
