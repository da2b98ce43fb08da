import json

import pytest

from rooflint import calibration as cal
from rooflint.explain import explain
from rooflint.gpus import find_spec
from rooflint.measure.protocol import DeviceInfo

H200 = DeviceInfo(name="NVIDIA H200", index=0, compute_capability="9.0", sms=132,
                  l2_bytes=62914560, memory_bytes=150109880320, max_sm_clock_mhz=1980,
                  max_mem_clock_mhz=3201, driver="580.159.04", cuda_runtime="13020", cupy="14.2.0")
STEPS = [
    {"ceiling": "dram", "method": "read float4, 1056 blocks of 256", "value": 4.3e12, "sm_clock_mhz": 1980.0},
    {"ceiling": "dram-sweep", "method": "read float4, 1056 blocks of 256", "value": 4.3e12, "sm_clock_mhz": 1980.0},
    {"ceiling": "dram-sweep", "method": "copy float, 264 blocks of 256", "value": 3.1e12, "sm_clock_mhz": 1980.0},
    {"ceiling": "l2", "method": "read float4", "value": 11e12, "sm_clock_mhz": 1980.0},
    {"ceiling": "fp32", "method": "FMA kernel", "value": 60.2e12, "sm_clock_mhz": 1800.0},
    {"ceiling": "fp16-tensor", "method": "cuBLAS", "value": 790e12, "sm_clock_mhz": 1755.0},
]


@pytest.fixture
def calibration():
    return cal.from_steps(H200, "h200", STEPS, {"TF32 tensor GEMM": "AttributeError: no TF32"})


def test_steps_become_ceilings(calibration):
    assert calibration.dram.value == 4.3e12 and calibration.l2.value == 11e12
    assert set(calibration.compute) == {"fp32", "fp16-tensor"}
    assert len(calibration.dram_sweep) == 2
    assert calibration.skipped == {"TF32 tensor GEMM": "AttributeError: no TF32"}


def test_saved_where_the_cache_says_and_found_again(calibration, tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path))
    path = cal.default_path("h200", "580.159.04")
    assert path == tmp_path / "calibration" / "h200-driver-580.159.04.json"
    cal.save(calibration, path)
    assert json.loads(path.read_text())["schema"] == "rooflint.calibration/1"
    assert cal.find("h200", "580.159.04") == calibration
    assert cal.find("h200") == calibration             # newest for the GPU, any driver
    assert cal.find("h200", "590.1") is None            # another driver: not this one
    assert cal.find("h100-sxm") is None


def test_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("ROOFLINT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cal.cache_dir() == tmp_path / "rooflint"


def test_calibrated_roofs_with_datasheet_beside(calibration, specs):
    h200 = find_spec("h200", specs)
    roofs = cal.roofs(h200, "fp32", calibration)
    assert roofs.compute == 60.2e12 and roofs.datasheet_compute == pytest.approx(66.9e12, rel=1e-3)
    assert roofs.dram_bandwidth == 4.3e12 and roofs.datasheet_dram_bandwidth == 4.8e12
    assert "calibrated" in roofs.source
    fp64 = cal.roofs(h200, "fp64", calibration)        # not measured: datasheet compute roof
    assert fp64.compute == fp64.datasheet_compute and "fp64 datasheet" in fp64.source
    assert cal.roofs(h200, "fp32", None).source == "datasheet"


def test_fraction_of_the_datasheet_at_the_clock_seen(calibration, specs):
    h200 = find_spec("h200", specs)
    # 60.2 TFLOP/s at 1800 MHz against 66.9 TFLOP/s at 1980 MHz rescaled to 1800 (60.8)
    assert cal.fraction_of_datasheet_at_clock(h200, "fp32", calibration.compute["fp32"]) == \
        pytest.approx(60.2 / (66.9 * 1800 / 1980), rel=1e-3)


def test_a_calibrated_roof_changes_the_verdict(calibration, specs):
    """A copy at 2.8 TB/s: 58 % of the 4.8 TB/s datasheet, 65 % of a 4.3 TB/s measured roof."""
    h200 = find_spec("h200", specs)
    datasheet = explain(h200, 1e-3, 0, 2.8e9, None, "fp32")
    measured = explain(h200, 1e-3, 0, 2.8e9, None, "fp32", calibration)
    assert datasheet.point.dram_fraction == pytest.approx(2.8 / 4.8)
    assert measured.point.dram_fraction == pytest.approx(2.8 / 4.3)
    assert (datasheet.verdict.bound, measured.verdict.bound) == ("chain", "bandwidth")


def test_no_dram_step_is_an_error():
    with pytest.raises(Exception, match="no DRAM bandwidth"):
        cal.from_steps(H200, "h200", STEPS[3:], {})
