"""`rooflint gate` on committed H200 results: pass, slower, more bytes, wrong, new, missing,
another GPU; exit codes, Markdown and JUnit."""

import copy
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from edges import cli_runner

from rooflint.formats import baseline as baselines
from rooflint.commands.cli import app
from rooflint.common.errors import RooflintError
from rooflint.common.vocabularies import GpuMismatch
from rooflint.judge.gate import evaluate
from rooflint.formats.results import read_result, write_result

RESULT = Path(__file__).parents[1] / "fixtures" / "results" / "h200-bundled.json"
runner = cli_runner()


@pytest.fixture(scope="module")
def result():
    return read_result(RESULT)


def variant(result, name):
    return next(v for f in result.families for v in f.variants if v.name == name)


def changed(result, name, **fields):
    other = copy.deepcopy(result)
    v = variant(other, name)
    for key, value in fields.items():
        setattr(v, key, value(getattr(v, key)) if callable(value) else value)
    return other


def outcome(report, name):
    return next(r for r in report.rows if r.variant == name)


def judge(base, current, **kw):
    return evaluate(baselines.from_result(base), baselines.from_result(current), **kw)


def test_the_same_run_passes(result):
    report = judge(result, result)
    assert report.passed and {r.outcome for r in report.rows} == {"pass"}
    assert len(report.rows) == 34                  # every variant of the committed run


def test_ten_percent_slower_regresses(result):
    slower = changed(result, "tiled", samples_s=lambda s: [x * 1.10 for x in s])
    row = outcome(judge(result, slower), "tiled")
    assert row.outcome == "regressed" and row.slowdown == pytest.approx(1.10, rel=0.01)
    assert row.reasons[0].startswith("time +10.0%")


def test_three_percent_slower_passes_the_default_5_percent(result):
    slower = changed(result, "tiled", samples_s=lambda s: [x * 1.03 for x in s])
    assert outcome(judge(result, slower), "tiled").outcome == "pass"
    stricter = judge(result, slower, overrides={"max_slowdown": 0.02})
    assert outcome(stricter, "tiled").outcome == "regressed"


def test_noisy_samples_make_a_slowdown_inconclusive_not_a_failure(result):
    base = changed(result, "tiled", samples_s=[1.00e-3, 1.10e-3, 0.90e-3, 1.05e-3, 0.95e-3] * 3)
    noisy = changed(result, "tiled", samples_s=[1.07e-3, 1.18e-3, 0.96e-3, 1.12e-3, 1.01e-3] * 3)
    row = outcome(judge(base, noisy), "tiled")
    assert row.outcome == "inconclusive" and "re-measure" in row.reasons[0]


def test_a_likely_gain_with_a_wide_interval_is_inconclusive_and_not_rechecked(result):
    """compare would call it inconclusive, so the gate does too (it does not fail), and
    --recheck re-measures only what looks slower."""
    from rooflint.judge.gate import recheck
    base = changed(result, "tiled", samples_s=[1.00e-3, 1.10e-3, 0.90e-3, 1.05e-3, 0.95e-3] * 3)
    faster = changed(result, "tiled", samples_s=[0.93e-3, 1.02e-3, 0.84e-3, 0.98e-3, 0.88e-3] * 3)
    report = judge(base, faster)
    row = outcome(report, "tiled")
    assert row.outcome == "inconclusive" and report.passed
    assert row.reasons[0].startswith("time -7.0% but the interval reaches +") and \
        row.reasons[0].endswith("re-measure")

    def remeasure(family, name):
        raise AssertionError("a likely gain is not re-measured")
    assert outcome(recheck(report, remeasure), "tiled").outcome == "inconclusive"


def test_a_noisy_side_is_a_warning_not_a_wider_threshold(result):
    row = outcome(judge(result, result), "cublas_fp16")
    assert row.outcome == "pass"
    assert row.warnings == ["noisy baseline: IQR ±88% of the median over 200 samples (limit ±10%)",
                            "noisy this run: IQR ±88% of the median over 200 samples (limit ±10%)"]


def test_five_percent_more_bytes_at_the_same_time_regresses(result):
    more = changed(result, "copy_float4", dram_bytes=lambda d: {**d, "ncu": d["ncu"] * 1.05})
    row = outcome(judge(result, more), "copy_float4")
    assert row.outcome == "regressed" and row.reasons == ["DRAM bytes +5.0% > 2%"]


def test_registers_and_spills_are_tight(result):
    c = variant(result, "blocked_2d").counters
    more = changed(result, "blocked_2d",
                   counters=replace(c, registers_per_thread=c.registers_per_thread + 8,
                                    local_bytes=c.local_bytes + 1e6))
    reasons = outcome(judge(result, more), "blocked_2d").reasons
    assert any("registers per thread" in r for r in reasons) and any("spill" in r for r in reasons)


def test_a_wrong_result_always_regresses(result):
    wrong = changed(result, "naive", status="fail",
                    message="C: relative error 3.1e-01 > tolerance 1.0e-05")
    row = outcome(judge(result, wrong), "naive")
    assert row.outcome == "regressed" and row.reasons == ["correctness: FAIL"]


def test_new_and_missing_variants(result):
    current = copy.deepcopy(result)
    family = next(f for f in current.families if f.name == "stream")
    family.variants = [v for v in family.variants if v.name != "triad"]
    family.variants.append(replace(family.variants[0], name="copy_new"))
    report = judge(result, current)
    assert outcome(report, "triad").outcome == "missing"
    assert outcome(report, "copy_new").outcome == "new"
    assert not report.passed


def test_leaving_the_roof_is_reported_without_failing(result):
    v = variant(result, "copy_scalar")
    moved = changed(result, "copy_scalar", verdict=replace(v.verdict, bound="chain"))
    row = outcome(judge(result, moved), "copy_scalar")
    assert row.outcome == "pass"
    assert row.warnings == ["left its roof: bandwidth-bound -> chain-bound"]


def test_manifest_thresholds_apply_and_the_command_line_wins(result):
    slower = changed(result, "tiled", samples_s=lambda s: [x * 1.08 for x in s],
                     gate={"max_slowdown": 0.10})
    assert outcome(judge(result, slower), "tiled").outcome == "pass"
    stricter = judge(result, slower, overrides={"max_slowdown": 0.05})
    assert outcome(stricter, "tiled").outcome == "regressed"


def test_another_gpu_is_refused_or_warned(result):
    other = copy.deepcopy(result)
    other.gpu = replace(other.gpu, name="NVIDIA H100 80GB HBM3")
    with pytest.raises(RooflintError, match="baseline was measured on NVIDIA H200"):
        judge(result, other)
    assert "GPU MISMATCH" in judge(result, other, mismatch=GpuMismatch.WARN).gpu_note


def test_baseline_file_round_trip_is_sorted_and_small(result, tmp_path):
    path = tmp_path / "baseline.json"
    baselines.write(baselines.from_result(result), path)
    back = baselines.read(path)
    keys = [(e.family, e.variant) for e in back.entries]
    assert keys == sorted(keys)
    assert path.stat().st_size < 40_000 and not list(tmp_path.glob(".*.tmp"))


def cli(*args):
    return runner.invoke(app, ["gate", *map(str, args)])


def test_cli_exit_codes_markdown_and_junit(result, tmp_path, monkeypatch):
    base = tmp_path / "baseline.json"
    assert cli("--baseline", base, "--current", RESULT, "--update").exit_code == 0
    assert cli("--baseline", base, "--current", RESULT).exit_code == 0
    slower = tmp_path / "slower.json"
    write_result(changed(result, "tiled", samples_s=lambda s: [x * 1.10 for x in s]), slower)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit, markdown = tmp_path / "gate.xml", tmp_path / "gate.md"
    outcome_ = cli("--baseline", base, "--current", slower, "--junit", junit,
                   "--markdown", markdown)
    assert outcome_.exit_code == 1
    assert "| gemm_fp32 | tiled | regressed |" in markdown.read_text()
    assert summary.read_text() == markdown.read_text()
    suite = ET.parse(junit).getroot()
    cases = suite.findall("testcase")
    assert len(cases) == 34 and suite.get("failures") == "1"
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["tiled"]


def test_cli_usage_errors_exit_2(tmp_path):
    assert cli("--baseline", tmp_path / "none.json", "--current", RESULT).exit_code == 2
    assert cli("--baseline", tmp_path / "b.json", "--current", RESULT, "--update",
               "--max-slowdown", "lots").exit_code == 2


def test_recheck_keeps_the_interleaved_verdict(result):
    """A slowdown seen against an old baseline that vanishes when both are timed now."""
    from rooflint.judge.gate import recheck
    slower = changed(result, "tiled", samples_s=lambda s: [x * 1.10 for x in s])
    report = judge(result, slower)
    assert outcome(report, "tiled").outcome == "regressed"
    same = variant(result, "tiled").samples_s
    calls = []

    def remeasure(family, name):
        calls.append((family, name))
        return same, [x * 1.001 for x in same]
    rechecked = recheck(report, remeasure)
    assert calls == [("gemm_fp32", "tiled")]
    row = outcome(rechecked, "tiled")
    assert row.outcome == "pass" and "re-measured interleaved" in row.warnings[-1]
    assert rechecked.passed


def test_recheck_does_not_forgive_counter_regressions(result):
    from rooflint.judge.gate import recheck
    worse = changed(result, "copy_float4", samples_s=lambda s: [x * 1.10 for x in s],
                    dram_bytes=lambda d: {**d, "ncu": d["ncu"] * 1.05})
    report = judge(result, worse)
    same = variant(result, "copy_float4").samples_s
    row = outcome(recheck(report, lambda f, n: (same, same)), "copy_float4")
    assert row.outcome == "regressed" and row.reasons == ["DRAM bytes +5.0% > 2%"]
