"""On a host of two GPUs or more (`pytest -m gpu`): `rooflint profile -- torchrun ...` of
the sharded job (examples/apps/fsdp_train.py, FSDP2 over NCCL, two ranks), end to end:
its pass 2 started early, one document for the job and one a rank, every rank's kernels,
its collectives placed from NCCL's log, and its accumulation fix read from the host's
once-a-step time, at most what the steps hold. Skipped with one GPU, or without PyTorch
or torchrun."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from edges import REPO

pytestmark = pytest.mark.gpu

# NVLink multicast off, in the job as in every program launched on these hosts
NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1"}


def test_a_sharded_jobs_profile_holds_every_rank_and_its_once_a_step_host_time(tmp_path):
    import cupy
    gpus = cupy.cuda.runtime.getDeviceCount()
    if gpus < 2:
        pytest.skip(f"a job of two ranks needs 2 GPUs, this host shows {gpus}")
    pytest.importorskip("torch")
    torchrun = shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("no torchrun on PATH")
    out = tmp_path / "job.json"
    done = subprocess.run([sys.executable, "-m", "rooflint", "profile", "--no-counter-cache",
                           "--json", str(out), "--", torchrun, "--standalone",
                           "--nproc_per_node=2", "fsdp_train.py", "--steps", "3"],
                          cwd=REPO / "examples" / "apps", capture_output=True, text=True,
                          timeout=500, env={**os.environ, **NCCL_ENV})
    assert done.returncode == 0, done.stderr[-3000:]
    job = json.loads(out.read_text())
    ranks = [json.loads(out.with_name(f"job.rank{r}.json").read_text()) for r in (0, 1)]
    # torchrun --standalone: its pass 2 waited, rank by rank, while pass 1 ran
    assert job["settings"]["pass2_started_early"] is True
    found = job["program"]["communication"]
    assert found["ranks"] == 2 and found["steps"] >= 4
    # the host's time outside forward and backward: some of each step, never all of it
    step_s = job["program"]["steps"]["step_s"]
    assert 0 < found["step_host_once_s"] < step_s
    assert all(r["program"]["communication"]["step_host_once_s"] == found["step_host_once_s"]
               for r in ranks)
    fixes = {f["id"]: f for f in job["fixes"]}
    accumulation = fixes["accumulate_gradients"]
    a_step = accumulation["saving_s"] / found["steps"] / found["ranks"]
    assert 0 < a_step <= 0.75 * max(found["step_host_once_s"], step_s)
    assert "a step on each rank" in done.stdout
    for rank in ranks:        # NCCL's log read in each rank: its collectives by name
        assert {"all-gather", "reduce-scatter"} <= {c["collective"] for c in
                                                    rank["collectives"]["calls"]}
