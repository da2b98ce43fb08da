"""A stand-in `torchrun` for a machine without a GPU (test_rank_traces.py, test_early_job.py):
run with each rank through the bootstrap (pass 1), it writes each rank's trace as the
bootstrap would (a kernel and its launch); run with each rank through rank_launch.py (pass
2 started early), it runs two ranks' commands, each with its LOCAL_RANK, and waits for them;
run any other way (pass 2 under one ncu), it does nothing. FAKE_RANKS=none writes no trace,
FAKE_RANKS=fail exits 1, FAKE_RANKS=N writes N ranks' (of 2)."""

from __future__ import annotations

import sys
from pathlib import Path

FAKE_TORCHRUN = '''#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
ranks = os.environ.get("FAKE_RANKS", "2")
if "--no-python" not in args:
    sys.exit(0)
if ranks == "fail":
    sys.exit(1)
runner = args[args.index("--no-python") + 1:]
if any(a.endswith("rank_launch.py") for a in runner):
    started = [subprocess.Popen(runner, env={{**os.environ, "LOCAL_RANK": str(r)}})
               for r in range(2)]
    sys.exit(max(p.wait() for p in started))
boot = next(i for i, a in enumerate(args) if a.endswith("trace_bootstrap.py"))
pattern = args[boot + 1]
assert args[boot + 3].isdigit() and args[boot + 4] == "--" and args[boot + 5] == "t.py"
for rank, pid in [(0, 101), (1, 102)][:0 if ranks == "none" else int(ranks)]:
    events = [{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid,
                "tid": 1, "ts": 10.0, "dur": 2.0, "args": {{"correlation": 7}}}},
               {{"ph": "X", "cat": "kernel", "name": "k", "pid": rank, "tid": 7,
                "ts": 20.0, "dur": 5.0, "args": {{"correlation": 7, "device": rank,
                "grid": [1, 1, 1], "block": [32, 1, 1]}}}}]
    with open(pattern.replace("%p", str(pid)), "w") as f:
        json.dump({{"traceEvents": events, "rooflint_process": {{"pid": pid, "rank": rank,
                   "host": "node-a"}}}}, f)
'''


def stand_in_torchrun(bin_dir: Path) -> Path:
    """The stand-in ``torchrun`` written into ``bin_dir`` (made if missing)."""
    bin_dir.mkdir(exist_ok=True)
    launcher = bin_dir / "torchrun"
    launcher.write_text(FAKE_TORCHRUN.format(python=sys.executable))
    launcher.chmod(0o755)
    return launcher
