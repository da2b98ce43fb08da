"""`rooflint profile` on the GPU, on a PyTorch program it did not write for itself
(examples/apps/transformer_block.py, eager and compiled): every chosen kernel ends with
counters or with the reason it has none, and nearly all of the GPU time is tied to the
line of the program that launched it (the exact line, not the line its function starts
at)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from edges import REPO

EXACT_LINE = re.compile(r"^transformer_block\.py:(\d+) in (\S+)")
FORWARD_STARTS = 30        # the line of Block.forward's def: never where a kernel came from


def profile(tmp_path, *program: str, nvtx: str | None = "timed") -> dict:
    out = tmp_path / "profile.json"
    done = subprocess.run([sys.executable, "-m", "rooflint", "profile",
                           *(["--nvtx", nvtx] if nvtx else []),
                           "--json", str(out), "--", sys.executable, *program],
                          cwd=REPO, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


# A program that reaches its first CUDA call 8 s later under Nsight Compute (which names
# its injection's ports in the program's environment) than under pass 1's profiler.
LATE_UNDER_NCU = ("import os, time, torch; 'NV_NSIGHT_INJECTION_PORT_BASE' in os.environ and "
                  "time.sleep(8); print(torch.ones(1 << 20, device='cuda').mul(2).sum().item())")


@pytest.mark.gpu
def test_pass_two_waits_for_a_program_that_reaches_its_first_cuda_call_after_pass_one(
        tmp_path):
    """Pass 2's early-started program can be attached only from its first CUDA call; one
    that reaches it after pass 1 has ended (this one on purpose; a program with little to
    do after that call, whose twin imports TorchDynamo too, by chance) is attached to once
    it does, not given up on."""
    doc = profile(tmp_path, "-c", LATE_UNDER_NCU, nvtx=None)
    assert doc["settings"].get("pass2_stopped") is None
    assert doc["settings"]["pass2_started_early"]
    assert all(v["counters"] for v in doc["families"][0]["variants"])


# A program whose only GPU library is CuPy.
CUPY_ONLY = ("import cupy as cp; x = cp.arange(1 << 22, dtype=cp.float32); "
             "print(float((x * 2 + 1).sum()))")


@pytest.mark.gpu
def test_a_cupy_programs_pass_one_is_recorded_by_cupti_with_no_torch(tmp_path):
    """Once the recorder is built, a program whose first GPU library is CuPy's is timed by
    it, not by PyTorch's profiler (which would import torch into it), and still judged."""
    from rooflint.measure.kernel_trace import KernelTraceUnavailable, injection_library
    try:
        injection_library()
    except KernelTraceUnavailable as exc:
        pytest.skip(str(exc))
    doc = profile(tmp_path, "-c", CUPY_ONLY, nvtx=None)
    assert doc["settings"]["pass1_timer"] == "cupti"
    assert all(v["counters"] for v in doc["families"][0]["variants"])


@pytest.mark.gpu
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_every_chosen_kernel_is_judged_or_says_why_and_has_its_line(tmp_path, compiled):
    doc = profile(tmp_path, "examples/apps/transformer_block.py",
                  *(["--compile"] if compiled else []))
    assert doc["settings"]["pass1_timer"] == "torch"
    variants = doc["families"][0]["variants"]
    assert variants
    for v in variants:
        assert v["counters"] or v["message"].startswith("no counters:"), v["name"]
    assert sum(1 for v in variants if v["counters"]) >= len(variants) - 2
    shares = [v["share"] for v in variants]
    lined = sum(s["share"] for s in shares
                if any(o["line"] and EXACT_LINE.match(o["line"]) for o in s["origins"]))
    assert lined >= 0.9 * sum(s["share"] for s in shares)
    lines = [EXACT_LINE.match(o["line"]) for s in shares for o in s["origins"] if o["line"]]
    assert all(int(m[1]) != FORWARD_STARTS for m in lines if m)
    if compiled:      # the compiled Block.forward's kernels come from its own lines
        assert {m[2] for m in lines if m} == {"Block.forward"}


def _built(tmp_path, source: str) -> str:
    """``source`` (under REPO) built with nvcc; the test skips where there is none."""
    from rooflint.common.toolkit import find_nvcc
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("no nvcc")
    binary = tmp_path / "program"
    subprocess.run([str(nvcc), "-O3", "-o", str(binary), str(REPO / source)], check=True,
                   capture_output=True, timeout=300)
    return str(binary)


def _kernels(doc: dict) -> dict[str, dict]:
    """Each kernel of a profile by its row's name (``saxpy@65536``: one per launch shape)."""
    return {v["name"]: v for v in doc["families"][0]["variants"]}


@pytest.mark.gpu
def test_a_cuda_program_is_timed_by_cuptis_records_as_nsight_compute_times_it(tmp_path):
    """examples/apps/block_sweep.cu (no PyTorch): pass 1 from CUPTI's activity records
    finds the launches Nsight Compute's pass 1 finds, one row per block size, with about
    the same times, and every row gets counters."""
    binary = _built(tmp_path, "examples/apps/block_sweep.cu")
    runs = {}
    for timer, environment in (("cupti", {}), ("ncu", {"CUDA_INJECTION64_PATH": "unset"})):
        out = tmp_path / f"{timer}.json"
        done = subprocess.run([sys.executable, "-m", "rooflint", "profile", "--coverage",
                               "1", "--json", str(out), "--", binary], cwd=REPO,
                              capture_output=True, text=True, timeout=400,
                              env={**os.environ, **environment})
        assert done.returncode == 0, done.stderr[-2000:]
        runs[timer] = json.loads(out.read_text())
        assert runs[timer]["settings"]["pass1_timer"] == timer
    cupti, ncu = (_kernels(runs[t]) for t in ("cupti", "ncu"))
    assert cupti.keys() == ncu.keys() and len(cupti) == 4
    for key, v in cupti.items():
        assert v["share"]["launches"] == ncu[key]["share"]["launches"] == 200
        assert v["counters"], key
        assert v["time"]["median_s"] == pytest.approx(ncu[key]["time"]["median_s"], rel=0.25)
