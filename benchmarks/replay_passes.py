"""What rooflint's counter list costs in Nsight Compute's replay passes, and what leaving
part of it out would save.

``python3 benchmarks/replay_passes.py OUT.json [-- PROGRAM ARGS...]``: the program (by
default PROBE, a CuPy element-wise kernel and an fp16 GEMM: how many passes a list takes is
the list's, whichever kernel it reads) runs under ncu once per case, one launch of each
launch configuration profiled, and ncu's own count of the replay passes each launch took
(``profiler__replayer_passes``) is kept for:

- the list a profile of bf16 operators reads (measure/ncu.metrics_for), and in reverse order;
- each of its groups alone (GROUPS: the parts measure/ncu.py builds it from);
- the list less each group, and less each pair of the groups that take most passes alone;
- the L1TEX unit's counters alone (the unit whose counters fill most passes).

ncu packs counters into passes by unit, so what dropping a group would save is read off
here, not guessed from its size: on an H100 (2026-11-27) the list takes 8 passes, its
L1TEX counters alone 7, and only the SASS FLOPs left out bring it to 7 (with five L1
stages, before: 9, 8, and no group below 8, on both GPUs).
Prints a line per case and writes them all, with the GPU and ncu's version, to OUT.json.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rooflint.measure import ncu

PASSES = "profiler__replayer_passes"
PROBE = """
import cupy as cp
x = cp.ones(1 << 24, dtype=cp.float32)
y = x * 2.0 + 1.0
a = cp.ones((2048, 2048), dtype=cp.float16)
c = a @ a
cp.cuda.runtime.deviceSynchronize()
"""
# By Hopper's names (no chip given): the GPUs these counts were taken on.
WHOLE = [m for m in ncu.metrics_for({"bf16-tensor"}, None) if m != ncu.DURATION]
# The counter list's parts, as measure/ncu.py names them.
GROUPS: dict[str, list[str]] = {
    "bytes": [ncu.DRAM_READ, ncu.DRAM_WRITE, ncu.L2_BYTES, ncu.L1_BYTES, *ncu.LOCAL_BYTES],
    "SASS FLOPs": [m for m in WHOLE if "sass_thread_inst_executed" in m],
    "stalls": [m for m in WHOLE if "issue_stalled" in m],
    "L1 stages": list(ncu.L1_STAGES),
    "shared memory": [ncu.SHARED_LOADS, ncu.SHARED_WAVEFRONTS, *ncu.BANK_CONFLICTS],
    "access patterns": [ncu.SHARED_STORES, ncu.SHARED_STORE_WAVEFRONTS,
                        *ncu.GLOBAL_SECTORS.values(), *ncu.GLOBAL_REQUESTS.values()],
    "occupancy and issue": [ncu.OCCUPANCY, ncu.XU_PIPE, ncu.TENSOR_PIPE, ncu.ISSUE_ACTIVE,
                            ncu.INSTRUCTIONS],
    "launch": [ncu.WAVES, ncu.REGISTERS, ncu.GRID_SIZE, ncu.BLOCK_SIZE,
               ncu.THEORETICAL_OCCUPANCY, *ncu.OCCUPANCY_LIMITS.values()],
    "tensor bf16": [ncu.TENSOR_FLOPS["bf16-tensor"], *ncu.TENSOR_INSTRUCTIONS],
}
HEAVIEST = 4          # groups whose pairs are left out together


def passes(command: list[str], metrics: list[str]) -> tuple[float, float]:
    """The most replay passes a profiled launch took under ``metrics``, and the run's wall
    seconds."""
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "log.csv"
        began = time.perf_counter()
        subprocess.run([ncu.ncu_path(), *ncu.BASE_OPTIONS, "--cache-control", "all",
                        "--filter-mode", "per-launch-config", "--launch-count", "1",
                        "--metrics", ",".join([ncu.DURATION, *metrics, PASSES]),
                        "--log-file", str(log), *command], capture_output=True, check=False)
        wall = time.perf_counter() - began
        rows = ncu.parse_rows(log.read_text()) if log.exists() else []
    return max((float(row.get(PASSES) or 0.0) for row in rows), default=0.0), wall


def less(*names: str) -> list[str]:
    left_out = {m for name in names for m in GROUPS[name]}
    return [m for m in WHOLE if m not in left_out]


def main(out: Path, command: list[str]) -> None:
    grouped = {m for metrics in GROUPS.values() for m in metrics}
    if grouped != set(WHOLE):
        sys.exit(f"replay_passes.py: GROUPS misses {sorted(set(WHOLE) - grouped)} or names "
                 f"{sorted(grouped - set(WHOLE))} that the list does not read")
    cases: list[dict] = []

    def case(name: str, metrics: list[str]) -> float:
        count, wall = passes(command, metrics)
        cases.append({"case": name, "metrics": len(metrics), "passes": count, "wall_s": wall})
        print(f"{name:44} {len(metrics):3} metrics  {count:3.0f} passes  {wall:5.1f} s",
              flush=True)
        return count

    case("the list", WHOLE)
    case("the list, reversed", WHOLE[::-1])
    alone = {name: case(f"{name} alone", metrics) for name, metrics in GROUPS.items()}
    for name in GROUPS:
        case(f"less {name}", less(name))
    heaviest = sorted(alone, key=alone.get, reverse=True)[:HEAVIEST]
    for pair in itertools.combinations(heaviest, 2):
        case(f"less {pair[0]} and {pair[1]}", less(*pair))
    case("L1TEX counters alone", [m for m in WHOLE if m.startswith("l1tex__")])
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()
    out.write_text(json.dumps({"gpu": gpu[0] if gpu else None, "ncu_version": ncu.version(),
                               "program": command, "cases": cases}, indent=1) + "\n")


def output_path(arguments: list[str]) -> Path:
    """OUT.json, refused (one line, before any GPU work) where it is not a .json file or is
    a file the program is given: the results would overwrite it."""
    if not arguments or arguments[0] == "--":
        sys.exit("usage: python3 benchmarks/replay_passes.py OUT.json [-- PROGRAM ARGS...]")
    out = Path(arguments[0])
    if out.suffix != ".json":
        sys.exit(f"replay_passes.py: {out}: the results go to a .json file")
    if any(Path(a).resolve() == out.resolve() for a in arguments[1:]):
        sys.exit(f"replay_passes.py: {out} is one of the program's own arguments")
    return out


if __name__ == "__main__":
    arguments = sys.argv[1:]
    out = output_path(arguments)
    program = arguments[arguments.index("--") + 1:] if "--" in arguments else \
        [sys.executable, "-c", PROBE]
    main(out, program)
