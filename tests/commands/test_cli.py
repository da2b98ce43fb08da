import json
import os
import subprocess
import sys

import pytest
from edges import cli_runner

from rooflint.commands.cli import app

runner = cli_runner()


def invoke(*args):
    return runner.invoke(app, list(args))


def rooflint(*args, env=None):
    """The real command in a subprocess, as a user types it."""
    return subprocess.run([sys.executable, "-m", "rooflint", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)


def test_help_lists_the_commands():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("run", "explain", "specs"):
        assert command in result.output


def test_specs_lists_every_gpu():
    result = invoke("specs")
    assert result.exit_code == 0
    for spec_id in ("h100-sxm", "h100-pcie", "h200", "a100-sxm-80gb", "a100-sxm-40gb", "l40s",
                    "l4", "a10", "rtx4090", "rtx3090", "t4", "v100-sxm2", "b200", "gb200",
                    "rtx5090", "h20", "a100-pcie-40gb", "a100-pcie-80gb"):
        assert spec_id in result.output


def test_specs_shows_one_gpu_with_ridges():
    result = invoke("specs", "h200")
    assert result.exit_code == 0
    assert "ridge" in result.output and "13.9" in result.output  # 66.9 TFLOP/s / 4.8 TB/s


def test_specs_shows_blackwell_dense_peaks_and_their_clocks():
    result = invoke("specs", "b200")
    assert result.exit_code == 0, result.output
    assert "compute capability 10.0, 148 SMs" in result.output
    assert "2.25 PFLOP/s" in result.output and "1855 MHz" in result.output
    assert "292" in result.output   # the bf16 ridge: 2.25 PFLOP/s / 7.7 TB/s


def test_explain_judges_against_a_b200():
    """1 TFLOP in 1 ms with 1 GB: 7.7 TB/s and 75 TFLOP/s (FP32, the default roof) put the
    floor at the FLOPs, 13.3 ms: faster than the GPU can go."""
    doc = explain_json("--gpu", "b200", "--time", "1ms", "--flops", "1e12", "--bytes", "1GB")
    assert doc["gpu"]["id"] == "b200"
    assert doc["roofs"]["compute"] == pytest.approx(75e12)
    assert doc["roofs"]["dram_bandwidth"] == pytest.approx(7.7e12)
    assert doc["point"]["ridge"] == pytest.approx(75e12 / 7.7e12)


def explain_json(*args):
    result = invoke("explain", *args, "--json", "-")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_explain_book_v3_on_rtx4090_is_chain():
    doc = explain_json("--gpu", "rtx4090", "--time", "0.713ms", "--flops", "537e6",
                       "--bytes", "128MiB", "--precision", "fp32")
    assert doc["verdict"]["bound"] == "chain"
    moves = " ".join(m["action"] for m in doc["verdict"]["moves"])
    assert "quantize" not in moves and "parallelism" not in moves


def test_explain_h200_copy_is_bandwidth():
    doc = explain_json("--gpu", "h200", "--time", "2.1ms", "--flops", "0", "--bytes", "8GiB")
    assert doc["verdict"]["bound"] == "bandwidth"
    assert doc["point"]["achieved_bandwidth"] == pytest.approx(4.09e12, rel=0.01)


def test_explain_h100_sgemm_is_compute():
    doc = explain_json("--gpu", "h100-sxm", "--time", "2.5ms", "--flops", "137.4e9",
                       "--bytes", "201MB", "--precision", "fp32")
    assert doc["verdict"]["bound"] == "compute"
    # at 82 % of its roof it is at it: no move up (issue 47), only the tensor roof, as
    # TF32, a precision trade
    moves = doc["verdict"]["moves"]
    assert [m["id"] for m in moves] == ["tf32_tensor_cores"]
    assert moves[-1]["direction"] == "raise-the-roof"


def test_explain_algorithmic_bytes_gives_the_horizontal_gap():
    doc = explain_json("--gpu", "h200", "--time", "1ms", "--flops", "1e9", "--bytes", "4GB",
                       "--algorithmic-bytes", "1GB")
    assert doc["point"]["traffic_fraction"] == pytest.approx(0.25)
    assert doc["point"]["algorithmic_ai"] == pytest.approx(4 * doc["point"]["observed_ai"])


def test_explain_text_output():
    result = invoke("explain", "--gpu", "h200", "--time", "2.1ms", "--flops", "0",
                    "--bytes", "8GiB")
    assert result.exit_code == 0 and "bandwidth-bound" in result.output


@pytest.mark.parametrize("args, message", [
    (("--time", "3 parsecs"), "unknown unit"),
    (("--gpu", "b300"), "unknown GPU 'b300'"),
    (("--precision", "fp7"), "unknown precision"),
    (("--precision", "fp8-tensor", "--gpu", "v100-sxm2"), "no fp8-tensor peak"),
])
def test_explain_errors_are_one_line(args, message):
    base = {"--gpu": "h200", "--time": "1ms", "--flops": "1", "--bytes": "1GB"}
    pairs = dict(zip(args[::2], args[1::2]))
    argv = [x for k, v in {**base, **pairs}.items() for x in (k, v)]
    result = rooflint("explain", *argv)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_run_without_a_gpu_exits_2_with_one_line():
    result = rooflint("run", env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "GPU" in lines[0] or "CuPy" in lines[0]
    assert "explain" in lines[0]


@pytest.mark.parametrize("args, message", [
    (("run", "no/such/dir"), "no kernel manifest"),
    (("run", "gemm_fp32", "--size", "N"), "--size expects NAME=VALUE"),
    (("run", "gemm_fp32", "--size", "Q=4"), "no such parameter"),
    (("run", "gemm_fp32", "nope"), "no variant nope"),
])
def test_run_input_errors_come_before_the_gpu(args, message):
    result = rooflint(*args, env={"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
