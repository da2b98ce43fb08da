import json
from pathlib import Path

import pytest

from rooflint.common.errors import RooflintError
from rooflint.common.vocabularies import Precision
from rooflint.formats.gpus import find_spec, load_spec, match_device, normalize_name

REQUIRED_IDS = {"h100-sxm", "h100-pcie", "h200", "a100-sxm-80gb", "a100-sxm-40gb", "l40s", "l4",
                "a10", "rtx4090", "rtx3090", "t4", "v100-sxm2", "b200", "gb200", "rtx5090", "h20",
                "a100-pcie-40gb", "a100-pcie-80gb"}


def test_bundled_specs_cover_the_required_gpus(specs):
    assert REQUIRED_IDS <= {s.id for s in specs}
    for s in specs:
        assert s.source.startswith("https://"), s.id
        assert set(s.peaks) <= set(Precision)


@pytest.mark.parametrize("spec_id, bandwidth, fp32, sms", [
    ("h100-sxm", 3.35e12, 66.9e12, 132), ("h200", 4.8e12, 66.9e12, 132),
    ("a100-sxm-80gb", 2.039e12, 19.5e12, 108), ("rtx4090", 1.008e12, 82.6e12, 128),
    ("t4", 320e9, 8.1e12, 40), ("b200", 7.7e12, 75e12, 148), ("gb200", 8e12, 80e12, 152),
    ("rtx5090", 1.792e12, 104.8e12, 170), ("h20", 4e12, 44e12, 78),
    ("a100-pcie-40gb", 1.555e12, 19.5e12, 108), ("a100-pcie-80gb", 1.935e12, 19.5e12, 108),
])
def test_datasheet_numbers(specs, spec_id, bandwidth, fp32, sms):
    spec = find_spec(spec_id, specs)
    assert spec.dram_bandwidth == pytest.approx(bandwidth, rel=0.01)
    assert spec.peaks["fp32"].flops_per_s == pytest.approx(fp32, rel=0.01)
    assert spec.sms == sms


def test_hopper_peaks_are_dense_with_their_clocks(specs):
    h100 = find_spec("h100-sxm", specs)
    assert h100.peaks["fp16-tensor"].flops_per_s == pytest.approx(989.4e12, rel=0.01)
    # FP32 assumes the 1980 MHz boost: 132 SMs x 128 lanes x 2 FLOP x 1.98 GHz
    assert h100.peaks["fp32"].clock_mhz == 1980
    assert 132 * 128 * 2 * 1.98e9 == pytest.approx(h100.peaks["fp32"].flops_per_s, rel=0.001)
    assert h100.peaks["fp16-tensor"].clock_mhz < h100.peaks["fp32"].clock_mhz


# The published dense tensor peaks (half the sparse figures NVIDIA's tables lead with):
# HGX B200 per GPU 2.25 / 4.5 PF, a GB200 superchip's GPU 2.5 / 5 PF, the RTX 5090's
# FP32-accumulate 16-bit rate 209.5, the H20's 148 / 296, the A100 PCIe boards' 312 / 624.
@pytest.mark.parametrize("spec_id, precision, tflops", [
    ("b200", "tf32-tensor", 1125), ("b200", "bf16-tensor", 2250), ("b200", "fp8-tensor", 4500),
    ("b200", "int8-tensor", 4500), ("b200", "fp64-tensor", 37),
    ("gb200", "tf32-tensor", 1250), ("gb200", "fp16-tensor", 2500),
    ("gb200", "fp8-tensor", 5000), ("gb200", "fp64", 40),
    ("rtx5090", "tf32-tensor", 104.8), ("rtx5090", "bf16-tensor", 209.5),
    ("rtx5090", "int8-tensor", 838),
    ("h20", "tf32-tensor", 74), ("h20", "fp16-tensor", 148), ("h20", "fp8-tensor", 296),
    ("a100-pcie-40gb", "fp16-tensor", 312), ("a100-pcie-80gb", "int8-tensor", 624),
])
def test_published_dense_tensor_peaks(specs, spec_id, precision, tflops):
    assert find_spec(spec_id, specs).peaks[precision].flops_per_s == pytest.approx(tflops * 1e12)


@pytest.mark.parametrize("spec_id", ["b200", "gb200"])
def test_blackwell_peaks_fit_their_clocks(specs, spec_id):
    """SMs x FLOP per clock x the clock each peak records: 8192 dense FP16 FLOP per SM and
    clock on Blackwell's tensor cores (2x Hopper's), 256 FP32 and 128 FP64 on its CUDA cores.
    The tensor peaks assume a lower clock than the vector ones, as on Hopper."""
    spec = find_spec(spec_id, specs)
    for precision, per_clock in (("fp16-tensor", 8192), ("fp8-tensor", 16384),
                                 ("fp32", 256), ("fp64", 128)):
        peak = spec.peaks[precision]
        assert spec.sms * per_clock * peak.clock_mhz * 1e6 == \
            pytest.approx(peak.flops_per_s, rel=0.01), precision
    assert spec.peaks["fp16-tensor"].clock_mhz < spec.peaks["fp32"].clock_mhz
    assert spec.peaks["fp32"].clock_mhz == spec.boost_clock_mhz


def test_ridge_points(specs):
    h200 = find_spec("h200", specs)
    assert h200.ridge("fp32") == pytest.approx(66.9e12 / 4.8e12, rel=0.01)
    with pytest.raises(RooflintError, match="no fp8-tensor peak"):
        find_spec("v100-sxm2", specs).ridge("fp8-tensor")


@pytest.mark.parametrize("device_name, spec_id", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H200", "h200"), ("nvidia h200", "h200"),
    ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"), ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ("Tesla T4", "t4"), ("Tesla V100-SXM2-32GB", "v100-sxm2"), ("NVIDIA L40S", "l40s"),
    ("NVIDIA L4", "l4"), ("NVIDIA A10", "a10"), ("NVIDIA GeForce RTX 3090", "rtx3090"),
    ("NVIDIA B200", "b200"), ("NVIDIA GB200", "gb200"), ("NVIDIA GeForce RTX 5090", "rtx5090"),
    ("NVIDIA H20", "h20"), ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
    ("A100-PCIE-40GB", "a100-pcie-40gb"), ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
])
def test_matches_nvml_names(specs, device_name, spec_id):
    assert match_device(device_name, specs).id == spec_id


def test_unknown_devices_do_not_match(specs):
    assert match_device("NVIDIA H200 NVL", specs) is None
    assert match_device("NVIDIA A10G", specs) is None
    assert match_device("NVIDIA GeForce RTX 5090 D", specs) is None


def test_no_two_specs_claim_one_device_name(specs):
    """The first spec whose NVML name matches wins, so a name two files claimed (H20 and
    H200, B200 and GB200 differ by one letter) would judge one GPU against the other's."""
    names = [normalize_name(name) for s in specs for name in s.nvml_names]
    assert len(names) == len(set(names))


def test_find_spec_by_id_or_name(specs):
    assert find_spec("H200", specs).id == "h200"
    assert find_spec("NVIDIA GeForce RTX 4090", specs).id == "rtx4090"
    assert find_spec("NVIDIA GB200", specs).id == "gb200"
    with pytest.raises(RooflintError, match="unknown GPU 'b300'; did you mean b200"):
        find_spec("b300", specs)


H100_PCIE, H100_SXM, L4 = "NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA L4"


def no_gpu_asked():
    raise AssertionError("the GPUs here were asked for a name that needs none")


@pytest.mark.parametrize("name, present, spec_id", [
    ("h100", [H100_PCIE], "h100-pcie"), ("H100", [H100_SXM], "h100-sxm"),
    ("h100", [L4, H100_SXM], "h100-sxm"), ("a100-sxm", ["NVIDIA A100-SXM4-40GB"], "a100-sxm-40gb"),
    ("a100", ["NVIDIA A100 80GB PCIe"], "a100-pcie-80gb"),
    ("a100-pcie", ["NVIDIA A100-PCIE-40GB"], "a100-pcie-40gb"),
])
def test_a_family_name_is_the_member_the_gpu_here_is(specs, name, present, spec_id):
    """CI labels and baselines say h100; the GPU in the machine says which board it is."""
    assert find_spec(name, specs, present=lambda: present).id == spec_id


@pytest.mark.parametrize("present, why", [
    ([], "no GPU here to tell which"),
    ([L4, L4], "the GPU here (NVIDIA L4) is none of them"),
    ([H100_PCIE, H100_SXM], "this machine has several of them"),
])
def test_a_family_name_the_gpus_here_do_not_settle_lists_the_ids(specs, present, why):
    with pytest.raises(RooflintError) as refused:
        find_spec("h100", specs, present=lambda: present)
    assert str(refused.value) == f"h100 is ambiguous: h100-pcie, h100-sxm ({why}); name one of them"


def test_a_family_of_one_id_and_an_exact_id_need_no_gpu(specs):
    assert find_spec("v100", specs, present=no_gpu_asked).id == "v100-sxm2"
    assert find_spec("h100-pcie", specs, present=no_gpu_asked).id == "h100-pcie"
    assert find_spec("NVIDIA H200", specs, present=no_gpu_asked).id == "h200"


def test_a_name_that_only_starts_an_id_is_not_a_family(specs):
    with pytest.raises(RooflintError,
                       match="unknown GPU 'h10'; did you mean h100-pcie or h100-sxm"):
        find_spec("h10", specs, present=no_gpu_asked)


def test_normalize_name():
    assert normalize_name("NVIDIA GeForce RTX 4090") == normalize_name("geforce rtx-4090")


GOOD = """
id: {stem}
name: Test GPU
nvml_names: [Test GPU]
architecture: Test
compute_capability: "9.0"
sms: 10
boost_clock_mhz: 1000
memory: {{type: HBM, size_gb: 1, bandwidth_gbs: 100}}
l2_mib: 1
peaks:
  fp32: {{tflops: 1, clock_mhz: 1000}}
source: https://example.com
"""


def _write(tmp_path: Path, text: str, stem: str = "test-gpu") -> Path:
    path = tmp_path / f"{stem}.yaml"
    path.write_text(text.format(stem=stem) if "{stem}" in text else text)
    return path


def test_a_valid_spec_loads(tmp_path):
    spec = load_spec(_write(tmp_path, GOOD))
    assert spec.dram_bandwidth == 100e9 and spec.l2_bytes == 2**20


@pytest.mark.parametrize("change, field", [
    (("sms: 10\n", ""), "sms"),
    (("  fp32: {tflops: 1, clock_mhz: 1000}\n", "  fp64: {tflops: 1, clock_mhz: 1000}\n"),
     "peaks.fp32"),
    (("bandwidth_gbs: 100", "bandwidth_gbs: fast"), "memory.bandwidth_gbs"),
    (("tflops: 1,", "tflop: 1,"), "peaks.fp32.tflops"),
    (("  fp32:", "  fp33:"), "peaks.fp33"),
    (("source: https://example.com\n", ""), "source"),
])
def test_malformed_specs_name_the_file_and_field(tmp_path, change, field):
    good = GOOD.format(stem="test-gpu")
    path = _write(tmp_path, good.replace(*change))
    with pytest.raises(RooflintError) as info:
        load_spec(path)
    assert str(path) in str(info.value) and field in str(info.value)


def test_invalid_yaml_is_reported_with_the_path(tmp_path):
    path = _write(tmp_path, "id: [unclosed\n")
    with pytest.raises(RooflintError, match="not valid YAML"):
        load_spec(path)


def test_id_must_match_the_file_name(tmp_path):
    path = _write(tmp_path, GOOD.format(stem="other"), stem="test-gpu")
    with pytest.raises(RooflintError, match="field 'id'"):
        load_spec(path)


# --- the command line: the machine's GPUs faked where NVML is asked (measure/nvml.py) -------

@pytest.fixture
def gpus_here(monkeypatch):
    """Sets the names NVML reports for this machine's GPUs (none until set)."""
    from rooflint.measure import nvml
    names: list[str] = []
    monkeypatch.setattr(nvml, "gpu_names", lambda: list(names))
    return names


def test_specs_shows_the_family_member_of_the_gpu_here(gpus_here):
    from test_cli import invoke
    gpus_here.append(H100_PCIE)
    shown = invoke("specs", "h100")
    assert shown.exit_code == 0 and "(h100-pcie)" in shown.stdout


@pytest.mark.parametrize("args", [
    ("specs", "h100"),
    ("explain", "--gpu", "h100", "--time", "1ms", "--flops", "1e9", "--bytes", "1GB"),
    ("calibrate", "--gpu", "h100"),
    ("run", "stream", "--gpu", "h100"),
])
def test_every_gpu_argument_lists_the_family_ids_in_one_line_without_the_gpu(gpus_here, args):
    from test_cli import invoke
    gpus_here.append(L4)
    refused = invoke(*args)
    assert refused.exit_code == 2
    [line] = refused.stderr.strip().splitlines()
    assert "h100 is ambiguous: h100-pcie, h100-sxm (the GPU here (NVIDIA L4) is none" in line


def test_explain_judges_against_the_member_of_the_gpu_here(gpus_here):
    from test_cli import invoke
    gpus_here.append(H100_SXM)
    explained = invoke("explain", "--gpu", "h100", "--time", "1ms", "--flops", "1e9", "--bytes",
                       "1GB", "--json", "-")
    assert explained.exit_code == 0, explained.output
    assert json.loads(explained.stdout)["gpu"]["id"] == "h100-sxm"


def test_a_measured_device_settles_the_family_itself(specs, gpus_here):
    """run, profile, compare and calibrate judge the device they measured: --gpu h100 is
    that device's board, whatever else the machine holds."""
    from rooflint.judge.measurement import device_spec
    from rooflint.formats.gpus import DeviceInfo
    device = DeviceInfo(H100_PCIE, 0, "9.0", 114, 50 * 2**20, 80 * 2**30, 1755.0, 1593.0,
                        "570.0", "12.8", "13.0")
    gpus_here.append(H100_SXM)
    assert device_spec(device, "h100", specs).id == "h100-pcie"


def test_nvml_names_the_gpus_here_and_none_without_a_driver(monkeypatch):
    from rooflint.measure import nvml
    names = [b"NVIDIA H100 PCIe", "NVIDIA L4"]      # older bindings give bytes
    for call, stand_in in {"nvmlInit": lambda: None, "nvmlShutdown": lambda: None,
                           "nvmlDeviceGetCount": lambda: len(names),
                           "nvmlDeviceGetHandleByIndex": lambda index: index,
                           "nvmlDeviceGetName": lambda handle: names[handle]}.items():
        monkeypatch.setattr(nvml.pynvml, call, stand_in)
    assert nvml.gpu_names() == ["NVIDIA H100 PCIe", "NVIDIA L4"]

    def no_driver():
        raise nvml.pynvml.NVMLError(nvml.pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    monkeypatch.setattr(nvml.pynvml, "nvmlInit", no_driver)
    assert nvml.gpu_names() == []
