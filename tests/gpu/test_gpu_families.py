"""On the GPU machine: `pytest -m gpu`. Skipped where no GPU is usable."""

from pathlib import Path

import pytest

from rooflint.formats.results import read_result
from rooflint.engine.families import RunOptions, run
from rooflint.output.live import Listener

pytestmark = pytest.mark.gpu
FIXTURES = Path(__file__).parent.parent / "fixtures"


def no_warnings(message):
    raise AssertionError(f"unexpected warning: {message}")


QUIET = Listener(warn=no_warnings)


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "result.json"
    result = run(RunOptions(targets=["stream", "gemm_fp32"], variants=[], sizes={},
                            json_path=path, counters="ncu", gpm=True), QUIET)
    assert read_result(path) == result
    return {f.name: {v.name: v for v in f.variants} for f in result.families}


def test_every_variant_passes_its_reference(bundled):
    for family in bundled.values():
        for v in family.values():
            assert v.status == "ok", f"{v.name}: {v.message}"
            assert v.time.n >= 10 and all(c.rel_l2 <= v.tolerance for c in v.checks)


def test_the_float4_copy_is_bandwidth_bound(bundled):
    assert bundled["stream"]["copy_float4"].verdict.bound == "bandwidth"
    assert bundled["stream"]["copy_few_blocks"].verdict.causes[0].name == "grid_under_one_wave"


def test_each_gemm_step_is_faster_than_the_one_before(bundled):
    walk = ["naive", "coalesced", "tiled", "blocked_1d", "blocked_2d"]
    times = [bundled["gemm_fp32"][name].time.median_s for name in walk]
    assert times == sorted(times, reverse=True), dict(zip(walk, times))


def test_the_best_gemm_reaches_60_percent_of_cublas(bundled):
    assert bundled["gemm_fp32"]["blocked_2d"].speed_vs_baseline >= 0.60


def test_clocks_and_gpm_are_recorded(bundled):
    v = bundled["gemm_fp32"]["blocked_2d"]
    assert v.clocks.sm_mhz and v.clocks.mem_mhz
    assert 0 < v.gpm["fp32_util"] <= 100 and "dram_bw_util" in v.gpm


def test_calibration_reaches_the_hopper_targets(tmp_path, specs):
    from rooflint.analysis import ceilings
    from rooflint.formats import calibration as calibrations
    from rooflint.measure.runner import calibrate
    from rooflint.judge.measurement import device_spec
    device, steps, skipped = calibrate(lambda step, total: None)
    spec = device_spec(device, None, specs)
    c = calibrations.from_steps(device, spec, steps, skipped)
    assert c.dram.value >= 0.82 * spec.dram_bandwidth            # H200: 4.0 of 4.8 TB/s
    assert ceilings.fraction_of_datasheet_at_clock(spec, "fp32", c.compute["fp32"]) >= 0.90
    assert c.compute["fp16-tensor"].value >= 0.70 * spec.peaks["fp16-tensor"].flops_per_s
    assert {"bf16-tensor", "fp8-tensor", "int8-tensor"} <= set(c.compute), c.skipped
    assert c.compute["bf16-tensor"].value >= 0.70 * spec.peaks["bf16-tensor"].flops_per_s
    assert c.compute["fp8-tensor"].value > c.compute["bf16-tensor"].value
    assert spec.dram_bandwidth < c.l2.value < 20 * spec.dram_bandwidth


def test_broken_variants_lose_only_their_own_rows(tmp_path):
    path = tmp_path / "broken.json"
    result = run(RunOptions(targets=[str(FIXTURES / "broken")], variants=[], sizes={},
                            counters="off", timeout_s=15, json_path=path), QUIET)
    assert read_result(path) == result
    rows = {v.name: v for v in result.families[0].variants}
    assert list(rows) == ["wrong_values", "unwritten_half", "does_not_compile", "out_of_bounds",
                          "hangs", "good"]
    assert rows["out_of_bounds"].status == "error"
    assert "illegal" in rows["out_of_bounds"].message.lower()
    assert rows["hangs"].status == "error" and "timed out after 15 s" in rows["hangs"].message
    assert rows["wrong_values"].status == "fail"
    assert "relative error" in rows["wrong_values"].message
    assert rows["unwritten_half"].status == "fail"
    assert "524288 elements NaN" in rows["unwritten_half"].message
    assert rows["does_not_compile"].status == "error"
    assert "bad_syntax.cu(3)" in rows["does_not_compile"].message
    assert rows["good"].status == "ok" and rows["good"].time


def test_stream_bytes_match_a_plain_ncu_run(bundled, tmp_path):
    """rooflint's DRAM bytes for the float4 copy equal what ncu reports on its own (1 %)."""
    import subprocess
    import sys
    from rooflint.measure import ncu
    log = tmp_path / "plain.csv"
    subprocess.run(["ncu", "--clock-control", "none", "--csv", "--page", "raw",
                    "--print-units", "base",
                    "--metrics", "dram__bytes_read.sum,dram__bytes_write.sum",
                    "-k", "copy_float4", "--log-file", str(log), sys.executable,
                    str(Path(__file__).parent / "plain_copy.py")], check=True, timeout=300)
    (plain,) = ncu.parse_rows(log.read_text())
    counters = bundled["stream"]["copy_float4"].counters
    assert counters.dram_read == pytest.approx(plain[ncu.DRAM_READ], rel=0.01)
    assert counters.dram_write == pytest.approx(plain[ncu.DRAM_WRITE], rel=0.01)


def test_counters_are_used_for_the_points(bundled):
    for family in bundled.values():
        for v in family.values():
            assert v.point.bytes_source == "ncu" and v.counters, v.name
    strided = bundled["stream"]["strided_read"]
    assert strided.point.traffic_fraction < 0.5          # uncoalesced: far more than compulsory
    naive = bundled["gemm_fp32"]["naive"]
    assert naive.flops["ncu"] == pytest.approx(naive.flops["model"], rel=0.01)


@pytest.fixture(scope="module")
def book_families(tmp_path_factory):
    path = tmp_path_factory.mktemp("book") / "result.json"
    result = run(RunOptions(targets=["decode_attention", "w4a16_gemv", "reduction"], variants=[],
                            sizes={}, json_path=path, counters="ncu"),
                 QUIET)
    return {f.name: {v.name: v for v in f.variants} for f in result.families}


def test_book_families_pass_and_match_their_stated_verdicts(book_families):
    for family in ("decode_attention", "w4a16_gemv", "reduction"):
        for v in book_families[family].values():
            assert v.status in ("ok", "skipped"), f"{family}:{v.name}: {v.message}"
            if v.status == "ok" and v.expect.get("bound"):
                assert v.verdict.bound == v.expect["bound"], f"{family}:{v.name}"


def test_decode_v3_is_chain_bound_with_a_cause_and_no_byte_cutting(book_families):
    v3 = book_families["decode_attention"]["v3_vectorized"]
    assert v3.verdict.bound == "chain" and v3.point.dram_fraction < 0.2
    assert v3.verdict.causes
    assert "fewer_bytes_per_element" not in [m.id for m in v3.verdict.moves]
    assert any("not fewer bytes" in t for t in v3.verdict.ruled_out)
    int8 = book_families["decode_attention"]["int8_kv"]
    assert int8.versus.startswith("vs v3_vectorized: DRAM bytes 0.5")


def test_each_cause_probe_shows_its_cause():
    """The causes family on this GPU (datasheet roofs: no L2 roof, so l2_resident is left
    out of the check): each probe's verdict names the cause it was built for."""
    result = run(RunOptions(targets=["causes"], variants=[], sizes={}, counters="ncu"),
                 QUIET)
    rows = {v.name: v for v in result.families[0].variants}
    assert all(v.status == "ok" for v in rows.values()), {n: v.message for n, v in rows.items()}
    for name, cause in [("barrier_bound", "synchronization"), ("launch_bound", "launch_overhead"),
                        ("math_pipe_bound", "math_pipe")]:
        assert rows[name].verdict.bound == "chain", name
        assert cause in [c.name for c in rows[name].verdict.causes], name
