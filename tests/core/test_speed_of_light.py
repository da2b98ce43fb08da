"""Faster than physically possible (issue 27): a time under the floor of the algorithmic
work (its compulsory bytes at the DRAM roof, its FLOPs at the compute roof) is marked,
with what usually causes it; explain gives the floor for typed numbers."""

from __future__ import annotations

import json

import pytest

from edges import rooflint
from rooflint.analysis.ceilings import roofs as roofs_for
from rooflint.analysis.observation import Model, Observation, analyse
from rooflint.analysis.roofline import SPEED_OF_LIGHT_MARGIN, floor
from rooflint.formats.gpus import find_spec, load_specs

H100 = find_spec("h100-sxm", load_specs())
FP32 = roofs_for(H100, "fp32", None)
GIB = 2**30


def test_the_floor_is_the_longer_of_bytes_and_flops():
    copy = floor(0.0, 2 * GIB, FP32)                    # 2 GiB at 3.35 TB/s: 641 us
    assert copy.bound_by == "dram" and copy.time_s == pytest.approx(2 * GIB / 3.35e12)
    gemm = floor(2 * 4096**3, 3 * 4 * 4096**2, FP32)    # 137 GFLOP at 66.9 TFLOP/s: 2.05 ms
    assert gemm.bound_by == "compute" and gemm.time_s == pytest.approx(2 * 4096**3 / 66.9e12)
    assert floor(0.0, 2 * GIB, FP32, cached=True) is None       # its bytes may stay in L2
    assert floor(0.0, 0.0, FP32) is None


def observed(time_s: float, cached: bool = False):
    return analyse(Observation("copy", "fp32", [time_s] * 10, None, Model(0.0, 2 * GIB, GIB),
                               1024, 256, 1, cached=cached), H100, H100.sms, None)


@pytest.mark.parametrize("fraction, marked", [(0.5, True), (SPEED_OF_LIGHT_MARGIN - 0.01, True),
                                              (SPEED_OF_LIGHT_MARGIN + 0.01, False), (1.2, False)])
def test_a_time_under_the_floor_is_marked_with_its_usual_causes(fraction, marked):
    time_s = fraction * 2 * GIB / 3.35e12
    notes = observed(time_s).notes
    assert any(n.startswith("faster than physically possible") for n in notes) == marked
    if marked:
        assert "2 GiB" in notes[0] and "DRAM roof" in notes[0]
        assert "cache across samples" in notes[0]


def test_a_warm_cache_is_bounded_by_its_flops_only():
    assert not observed(0.1 * 2 * GIB / 3.35e12, cached=True).notes


def test_explain_gives_the_floor_and_marks_a_time_under_it():
    done = rooflint("explain", "--gpu", "h100-sxm", "--time", "50us", "--flops", "1e9",
                    "--bytes", "201MB", env={"COLUMNS": "200"})
    assert done.code == 0, done.stderr
    assert "floor 60 us: the algorithmic bytes at the DRAM roof" in done.stdout
    assert "faster than physically possible: 50 us" in done.stdout
    document = json.loads(rooflint("explain", "--gpu", "h100-sxm", "--time", "1ms", "--flops",
                                   "1e9", "--bytes", "201MB", "--json", "-").stdout)
    assert document["floor"]["bound_by"] == "dram"
    assert document["floor"]["time_s"] == pytest.approx(201e6 / 3.35e12)


# -- above a calibrated roof --------------------------------------------------------------

CALIBRATED = __import__("rooflint.formats.calibration", fromlist=["load"]).load(
    __import__("edges").REPO / "examples" / "h100-calibration.json")      # bf16: 791 TFLOP/s
BF16_GEMM = 2 * 8192**3                                                  # 1.1 TFLOP


def gemm(fraction_of_calibrated: float, calibration=CALIBRATED):
    roof = CALIBRATED.compute["bf16-tensor"].value
    time_s = BF16_GEMM / (fraction_of_calibrated * roof)
    return analyse(Observation("gemm", "bf16-tensor", [time_s] * 10, None,
                               Model(BF16_GEMM, 3 * 2 * 8192**2), 4096, 256, 1),
                   H100, H100.sms, calibration)


@pytest.mark.parametrize("fraction, marked", [(0.9, False), (0.999, False), (1.05, True)])
def test_a_kernel_above_its_calibrated_roof_says_the_calibration_reads_low(fraction, marked):
    """cuBLAS's bf16 GEMMs of the training step read 103-105 % of the H100's calibrated
    bf16 roof, and nothing said why a kernel could pass its roof."""
    notes = gemm(fraction).notes
    above = [n for n in notes if n.startswith("above the calibrated")]
    assert bool(above) == marked
    if marked:
        assert above == ["above the calibrated bf16-tensor compute roof: 105% of 791 TFLOP/s; "
                         "the calibration's own kernel reached less than this one, so "
                         "fractions of that roof read high (calibrate again, or read it "
                         "against the datasheet's 989 TFLOP/s)"]


def test_a_datasheet_roof_is_not_called_calibrated():
    """Without a calibration the roof is the datasheet's: 105 % of 791 TFLOP/s is 84 % of
    989, under it."""
    assert not any(n.startswith("above the calibrated") for n in gemm(1.05, None).notes)


def test_the_recorded_steps_gemms_above_the_calibrated_roofs_say_so():
    """The H100 training step's pass 2 (tests/fixtures/ncu), judged against the H100's
    committed calibration: the GEMMs above its bf16 or L2 roof are marked, no other."""
    from rooflint.judge.kernel_times import kernel_times
    from rooflint.engine import program as app
    from rooflint.measure.ncu import parse_rows
    from edges import REPO
    rows = parse_rows((REPO / "tests" / "fixtures" / "ncu" / "h100-train-step-pass2.csv")
                      .read_text())
    kernels = kernel_times(rows)
    result = app.profile_result("train_step.py", ".", kernels, kernels,
                                app.counters_by_identity(kernels, rows), H100,
                                app.device_from(rows, "x"), CALIBRATED, app.Settings())
    marked = {v.name: n for v in result.families[0].variants for n in v.notes
              if n.startswith("above the calibrated")}
    assert marked and all(name.startswith("nvjet_") for name in marked)
