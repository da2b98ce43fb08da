"""Issue 50's first idea, priced on a recorded profile with no GPU: could a PyTorch
element-wise kernel's counters follow from its operator's tensor shapes (pass 1's
record_shapes), so pass 2 need not profile it?

``python3 benchmarks/shape_bytes.py [OUT.json]`` reads the H200 training step's recorded
pass 1 (tests/fixtures/trace/h200-train-step-trace.json.xz) and pass 2
(tests/fixtures/ncu/h200-train-step-pass2.csv), and for each chosen element-wise,
reduction, normalisation or softmax kernel of one operator compares the DRAM bytes Nsight
Compute measured (caches flushed) with its operator's tensors' bytes, then judges the
kernel again (as benchmarks/counter_trade.py does) with only its DRAM bytes replaced by
the tensors': the most the shapes could serve, every other counter still measured.
"""

from __future__ import annotations

import json
import lzma
import math
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from counter_trade import judged

from rooflint.engine import program as engine
from rooflint.formats.gpus import find_spec, load_specs
from rooflint.judge.kernel_choice import choose
from rooflint.measure.ncu import parse_rows
from rooflint.measure.pass_runner import Pass, Timer

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO / "tests" / "fixtures" / "trace" / "h200-train-step-trace.json.xz"
PASS_TWO = REPO / "tests" / "fixtures" / "ncu" / "h200-train-step-pass2.csv"
ITEM_BYTES = {"float": 4, "c10::BFloat16": 2, "c10::Half": 2, "double": 8, "long int": 8,
              "int": 4, "bool": 1, "unsigned char": 1, "signed char": 1}
ELEMENT_WISE = ("elementwise", "reduce_kernel", "layer_norm", "softmax", "GammaBeta")
NEAR = 0.05


def tensor_bytes(dims: list, types: list) -> int:
    """The bytes of an operator's tensor inputs (for copy_, its destination and source)."""
    return sum(math.prod(d) * ITEM_BYTES[t] for d, t in zip(dims, types)
               if isinstance(d, list) and d and t in ITEM_BYTES)


def kernels() -> list[dict]:
    """Each chosen element-wise kernel of one operator: its measured and its tensors'
    bytes, and its bound and top move judged on each."""
    trace = json.loads(lzma.decompress(TRACE.read_bytes()))
    one, _ = engine.pass_one(Pass("", 0.0, timer=Timer.torch, trace=trace),
                             engine.passes.Filters())
    chosen = choose(one.kernels)
    measured = engine.counters_by_identity(chosen, parse_rows(PASS_TWO.read_text()),
                                           one.kernels)
    spec = find_spec("h200", load_specs())
    found = []
    for k in chosen:
        c = measured.get(k.identity)
        if c is None or not k.inputs or len(k.inputs) != 1 or \
                not any(word in k.kernel for word in ELEMENT_WISE):
            continue
        operator, dims, types = json.loads(next(iter(k.inputs)))
        shapes = tensor_bytes(dims, types)
        if not shapes:
            continue
        kernel = SimpleNamespace(name=k.kernel, precision="fp32", samples_s=[c.duration_s])
        full = judged(kernel, c, spec)
        cut = judged(kernel, replace(c, dram_read=float(shapes), dram_write=0.0), spec)
        found.append({"operator": operator, "grid": k.grid,
                      "dram_bytes": c.dram_read + c.dram_write, "tensor_bytes": shapes,
                      "measured": [full.bound, full.top_move],
                      "from_shapes": [cut.bound, cut.top_move]})
    return found


def main(out: str | None) -> None:
    found = kernels()
    near = [k for k in found if abs(k["dram_bytes"] / k["tensor_bytes"] - 1) <= NEAR]
    changed = [k for k in found if k["measured"] != k["from_shapes"]]
    for k in found:
        print(f"{k['operator'][:26]:26} {k['grid']:14} measured/tensors "
              f"{k['dram_bytes'] / k['tensor_bytes']:5.2f}  {'/'.join(map(str, k['measured']))}"
              f" -> {'/'.join(map(str, k['from_shapes']))}")
    print(f"{len(found)} kernels: {len(near)} within {NEAR:.0%} of their tensors' bytes; "
          f"{len(changed)} change bound or top move on the tensors' bytes")
    if out:
        Path(out).write_text(json.dumps({
            "gpu": "NVIDIA H200 (the recorded training step's pass 1 and pass 2)",
            "kernels": found, "within_5_percent": len(near), "changed": len(changed)},
            indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
