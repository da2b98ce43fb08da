import io
import json

import pytest
from rich.console import Console

from rooflint.analysis import ceilings
from rooflint.formats import calibration as cal

from rooflint.common import paths
from rooflint.judge.explain import explain
from rooflint.formats.gpus import find_spec
from rooflint.formats.jobs import DeviceInfo
from rooflint.output.roofs import render_calibration

H200 = DeviceInfo(name="NVIDIA H200", index=0, compute_capability="9.0", sms=132,
                  l2_bytes=62914560, memory_bytes=150109880320, max_sm_clock_mhz=1980,
                  max_mem_clock_mhz=3201, driver="580.159.04", cuda_runtime="13020", cupy="14.2.0")
STEPS = [
    {"ceiling": "dram", "method": "read float4, 1056 blocks of 256", "value": 4.3e12,
     "sm_clock_mhz": 1980.0},
    {"ceiling": "dram-sweep", "method": "read float4, 1056 blocks of 256", "value": 4.3e12,
     "sm_clock_mhz": 1980.0},
    {"ceiling": "dram-sweep", "method": "copy float, 264 blocks of 256", "value": 3.1e12,
     "sm_clock_mhz": 1980.0},
    {"ceiling": "l2", "method": "read float4", "value": 11e12, "sm_clock_mhz": 1980.0},
    {"ceiling": "fp32", "method": "FMA kernel", "value": 60.2e12, "sm_clock_mhz": 1800.0},
    {"ceiling": "fp16-tensor", "method": "cuBLAS", "value": 790e12, "sm_clock_mhz": 1755.0},
    {"ceiling": "bf16-tensor", "method": "cuBLAS GEMM bf16 (torch.matmul) 8192^3 (random data)",
     "value": 830e12, "sm_clock_mhz": 1755.0},
    {"ceiling": "fp8-tensor", "method": "cuBLAS GEMM float8_e4m3fn -> bf16, fast accumulation "
     "(torch._scaled_mm) 8192^3 (random data)", "value": 1.45e15, "sm_clock_mhz": 1710.0},
    {"ceiling": "int8-tensor", "method": "cuBLAS GEMM int8 -> int32 (torch._int_mm) 8192^3 "
     "(random data)", "value": 1.2e15, "sm_clock_mhz": 1740.0},
    {"ceiling": "l1", "method": "shared-memory read float4, 1056 blocks of 256",
     "value": 31e12, "sm_clock_mhz": 1980.0},
]
SKIPPED = {"TF32 tensor GEMM": "AttributeError: no TF32"}


@pytest.fixture
def calibration(specs):
    return cal.from_steps(H200, find_spec("h200", specs), STEPS, SKIPPED)


def test_steps_become_ceilings(calibration):
    assert calibration.dram.value == 4.3e12 and calibration.l2.value == 11e12
    assert calibration.l1.value == 31e12
    assert set(calibration.compute) == {"fp32", "fp16-tensor", "bf16-tensor", "fp8-tensor",
                                        "int8-tensor"}
    assert calibration.compute["fp8-tensor"].method.startswith("cuBLAS GEMM float8_e4m3fn")
    assert len(calibration.dram_sweep) == 2
    assert calibration.skipped == SKIPPED


def test_a_ceiling_without_a_datasheet_peak_is_left_out_with_the_reason(specs):
    """An L4 has no fp64 tensor cores: its cuBLAS fp64 GEMM is no fp64-tensor roof."""
    l4 = DeviceInfo(name="NVIDIA L4", index=0, compute_capability="8.9", sms=58,
                    l2_bytes=50331648, memory_bytes=24152899584, max_sm_clock_mhz=2040,
                    max_mem_clock_mhz=6251, driver="580.159.04", cuda_runtime="13020",
                    cupy="14.2.0")
    fp64_gemm = {"ceiling": "fp64-tensor", "method": "cuBLAS GEMM float64 8192^3",
                 "value": 0.45e12, "sm_clock_mhz": 2040.0}
    c = cal.from_steps(l4, find_spec("l4", specs), STEPS[:1] + [fp64_gemm] + STEPS[6:7], {})
    assert set(c.compute) == {"bf16-tensor"}
    assert c.skipped == {"fp64-tensor": "measured, but the l4 spec has no fp64-tensor peak "
                                        "to judge against"}


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
    assert paths.cache_dir() == tmp_path / "rooflint"


def test_calibrated_roofs_with_datasheet_beside(calibration, specs):
    h200 = find_spec("h200", specs)
    roofs = ceilings.roofs(h200, "fp32", calibration)
    assert roofs.compute == 60.2e12 and roofs.datasheet_compute == pytest.approx(66.9e12, rel=1e-3)
    assert roofs.dram_bandwidth == 4.3e12 and roofs.datasheet_dram_bandwidth == 4.8e12
    assert "calibrated" in roofs.source
    fp64 = ceilings.roofs(h200, "fp64", calibration)        # not measured: datasheet compute roof
    assert fp64.compute == fp64.datasheet_compute and "fp64 datasheet" in fp64.source
    assert ceilings.roofs(h200, "fp32", None).source == "datasheet"


@pytest.mark.parametrize("precision, measured", [("bf16-tensor", 830e12), ("fp8-tensor", 1.45e15),
                                                 ("int8-tensor", 1.2e15)])
def test_each_tensor_precision_has_its_own_calibrated_roof(calibration, specs, precision, measured):
    roofs = ceilings.roofs(find_spec("h200", specs), precision, calibration)
    assert roofs.compute == measured and f"{precision} calibrated" in roofs.source
    assert roofs.datasheet_compute > measured


def test_a_bf16_gemm_is_judged_against_the_bf16_roof(calibration, specs):
    """The issue's H100 case: bf16 GEMMs faster than the fp16 roof CuPy measured. An 8192^3
    bf16 GEMM at 810 TFLOP/s is past the calibrated fp16 roof (790) but 98 % of the bf16 one."""
    h200 = find_spec("h200", specs)
    flops, dram_bytes = 2 * 8192**3, 3 * 8192**2 * 2
    judged = explain(h200, flops / 810e12, flops, dram_bytes, None, "bf16-tensor", calibration)
    assert judged.roofs.compute == 830e12
    assert judged.point.compute_fraction == pytest.approx(810 / 830)
    assert judged.verdict.bound == "compute"


def test_the_calibration_table_shows_the_tensor_roofs_and_what_was_not_calibrated(calibration,
                                                                                 specs):
    console = Console(file=io.StringIO(), width=140)
    render_calibration(console, calibration, find_spec("h200", specs))
    lines = [line.strip() for line in console.file.getvalue().splitlines()]
    bf16 = next(line for line in lines if line.startswith("bf16-tensor"))
    assert bf16.split()[1:6] == ["830", "TFLOP/s", "989", "TFLOP/s", "84%"]  # of the datasheet
    assert "not calibrated: TF32 tensor GEMM: AttributeError: no TF32" in lines
    assert next(line for line in lines if line.startswith("l1")).split()[1:3] == ["31", "TB/s"]


def test_a_result_records_the_l2_and_l1_roofs_its_plot_draws(calibration):
    assert cal.settings(calibration) == {"calibration": calibration.created,
                                         "l2_bandwidth": 11e12, "l1_bandwidth": 31e12}
    assert cal.settings(None) == {"calibration": None, "l2_bandwidth": None,
                                  "l1_bandwidth": None}


def test_a_calibration_from_before_the_l1_step_still_loads(calibration, tmp_path):
    document = calibration.to_json()
    del document["l1"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    assert cal.load(path).l1 is None and cal.load(path).l2.value == 11e12


def test_fraction_of_the_datasheet_at_the_clock_seen(calibration, specs):
    h200 = find_spec("h200", specs)
    # 60.2 TFLOP/s at 1800 MHz against 66.9 TFLOP/s at 1980 MHz rescaled to 1800 (60.8)
    assert ceilings.fraction_of_datasheet_at_clock(h200, "fp32", calibration.compute["fp32"]) == \
        pytest.approx(60.2 / (66.9 * 1800 / 1980), rel=1e-3)


def test_a_calibrated_roof_changes_the_verdict(calibration, specs):
    """A copy at 2.8 TB/s: 58 % of the 4.8 TB/s datasheet, 65 % of a 4.3 TB/s measured roof."""
    h200 = find_spec("h200", specs)
    datasheet = explain(h200, 1e-3, 0, 2.8e9, None, "fp32")
    measured = explain(h200, 1e-3, 0, 2.8e9, None, "fp32", calibration)
    assert datasheet.point.dram_fraction == pytest.approx(2.8 / 4.8)
    assert measured.point.dram_fraction == pytest.approx(2.8 / 4.3)
    assert (datasheet.verdict.bound, measured.verdict.bound) == ("chain", "bandwidth")


def test_no_dram_step_is_an_error(specs):
    with pytest.raises(Exception, match="no DRAM bandwidth"):
        cal.from_steps(H200, find_spec("h200", specs), STEPS[3:], {})


GIB = 1 << 30


def test_the_interconnects_sweep_becomes_each_collectives_roof_and_is_kept(specs, tmp_path):
    """A made-up sweep on two GPUs (test_interconnect.py: every call 20 us plus its
    operation at 400 GB/s): each collective's roof is its best, at 1 GiB; the all-reduce's
    factor is 1 on two ranks, the others' 1/2."""
    from test_interconnect import bus_steps_of_a_made_up_sweep
    steps = [vars(s) for s in bus_steps_of_a_made_up_sweep()]
    c = cal.from_steps(H200, find_spec("h200", specs), STEPS + steps, {})
    interconnect = c.interconnect
    assert (interconnect.gpus, interconnect.link) == (2, "NVLink, 18 links a GPU")
    assert [(r.collective, r.size) for r in interconnect.roofs] == [
        ("all-reduce", GIB), ("all-gather", GIB), ("reduce-scatter", GIB), ("all-to-all", GIB)]
    algbw = GIB / (20e-6 + GIB / 400e9)
    assert interconnect.roof("all-reduce").value == pytest.approx(algbw)
    assert interconnect.roof("all-to-all").value == pytest.approx(algbw / 2)
    assert interconnect.roof("broadcast") is None and len(interconnect.sweep) == 32
    assert "interconnect" not in c.compute and c.skipped == {}     # no precision of the GPU
    path = tmp_path / "c.json"
    cal.save(c, path)
    assert cal.load(path) == c
    console = Console(file=io.StringIO(), width=200)
    render_calibration(console, c, find_spec("h200", specs))
    assert ("interconnect, 2 GPUs (NVLink, 18 links a GPU), NCCL's best bus bandwidth: "
            "all-reduce 397 GB/s at 1 GiB, all-gather 199 GB/s at 1 GiB, reduce-scatter 199 "
            "GB/s at 1 GiB, all-to-all 199 GB/s at 1 GiB") in console.file.getvalue()


def test_one_gpu_calibrates_no_interconnect_and_says_why(calibration, specs):
    one_gpu = cal.from_steps(H200, find_spec("h200", specs), STEPS, {
        "interconnect (NCCL collectives)": "needs 2 GPUs or more, and this host shows 1"})
    assert one_gpu.interconnect is None and calibration.interconnect is None
    console = Console(file=io.StringIO(), width=140)
    render_calibration(console, one_gpu, find_spec("h200", specs))
    assert ("not calibrated: interconnect (NCCL collectives): needs 2 GPUs or more, and this "
            "host shows 1") in console.file.getvalue()
