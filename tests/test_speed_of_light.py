"""Faster than physically possible (issue 27): a time under the floor of the algorithmic
work (its compulsory bytes at the DRAM roof, its FLOPs at the compute roof) is marked,
with what usually causes it; explain gives the floor for typed numbers."""

from __future__ import annotations

import json

import pytest

from edges import rooflint
from rooflint.analysis.calibration import roofs as roofs_for
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
        assert "2 GiB" in notes[0] and "DRAM roof" in notes[0] and "cache across samples" in notes[0]


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
