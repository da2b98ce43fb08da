"""What each group of rooflint's counters costs in Nsight Compute's replay passes.

``python3 benchmarks/replay_passes.py -- python3 examples/apps/train_step.py``: the program
runs once per metric group under ncu, as `rooflint profile`'s pass 2 runs it (one launch of
each launch configuration of a few kernel functions), with ncu's own count of the replay
passes each profiled launch took (``profiler__replayer_passes``) beside the group's metrics,
and prints, per group, the passes a launch took and the wall time of the run. A group whose
passes are few but whose wall time is long costs in its collection (SASS patching), not in
its replays. The groups are the counter list's own parts (measure/ncu.py), so what the
counter pass would save by dropping or splitting one is read off, not guessed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rooflint.measure import ncu

PASSES = "profiler__replayer_passes"
# A few functions of a PyTorch training step: a cuBLAS GEMM, cuDNN attention, a
# normalisation, element-wise kernels.
FUNCTIONS = ("nvjet_sm90", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop",
             "vectorized_layer_norm_kernel", "vectorized_elementwise_kernel", "reduce_kernel")


def groups() -> dict[str, list[str]]:
    """rooflint's counter list cut along its parts."""
    base = ncu.BASE_METRICS
    sass = [m for m in base if "sass_thread_inst" in m]
    stalls = [m for m in base if "issue_stalled" in m]
    tensor = list(ncu.TENSOR_FLOPS.values())
    return {"duration only": [ncu.DURATION],
            "bytes": [ncu.DURATION, ncu.DRAM_READ, ncu.DRAM_WRITE, ncu.L2_BYTES, ncu.L1_BYTES,
                      *ncu.LOCAL_BYTES],
            "SASS FLOPs": [ncu.DURATION, *sass],
            "stalls": [ncu.DURATION, *stalls],
            **{f"tensor {p}": [ncu.DURATION, m] for p, m in ncu.TENSOR_FLOPS.items()},
            "tensor, all precisions": [ncu.DURATION, *tensor],
            "base (no tensor FLOPs)": base,
            "rooflint's profile list": ncu.METRICS}


def measure(command: list[str], metrics: list[str]) -> tuple[float, list[float]]:
    """The program under ncu with ``metrics``: wall seconds, passes of each profiled launch."""
    pattern = "|".join(FUNCTIONS)
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "log.csv"
        began = time.perf_counter()
        subprocess.run([ncu.ncu_path(), *ncu.BASE_OPTIONS, "--kernel-name-base", "demangled",
                        "--cache-control", "all", "--metrics", ",".join([*metrics, PASSES]),
                        "--filter-mode", "per-launch-config", "--launch-count", "1",
                        "-k", f"regex:(^|[\\s:])({pattern})", "--log-file", str(log),
                        *command], capture_output=True, check=False)
        elapsed = time.perf_counter() - began
        rows = ncu.parse_rows(log.read_text()) if log.exists() else []
    return elapsed, [float(row.get(PASSES) or 0.0) for row in rows]


def main(command: list[str]) -> None:
    for name, metrics in groups().items():
        elapsed, passes = measure(command, metrics)
        shown = f"{min(passes):.0f}-{max(passes):.0f}" if passes else "-"
        print(f"{name:28} {len(metrics):3} metrics  {len(passes):3} launches  "
              f"{shown:>5} passes a launch  {elapsed:6.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:])
