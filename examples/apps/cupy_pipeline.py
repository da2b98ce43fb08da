"""A CuPy pipeline of user kernels and a library GEMM: the CuPy program that
`rooflint profile -- python examples/apps/cupy_pipeline.py` diagnoses.

Each iteration runs three steps on an n x n fp32 matrix (n = 4096 by default):
`affine_tanh`, an ElementwiseKernel, y = tanh(a*x + b) (one read and one write:
bandwidth-bound); `row_sum`, a ReductionKernel summing each row of y (one read:
bandwidth-bound); and y @ w through cupy.matmul, a cuBLAS fp32 GEMM of 2n^3 FLOPs
(compute-bound, on the FP32 pipes unless CUPY_TF32=1). The two user kernels are checked
once against plain CuPy; then three warm-up iterations and the timed ones inside an NVTX
range named "timed" (so `--nvtx timed` profiles only those), each step timed by CUDA
events around it.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import cupy

affine_tanh = cupy.ElementwiseKernel(
    "float32 x, float32 a, float32 b", "float32 y", "y = tanhf(a * x + b)", "affine_tanh")
row_sum = cupy.ReductionKernel(
    "float32 x", "float32 total", "x", "a + b", "total = a", "0", "row_sum")
SCALE, SHIFT = 0.5, 0.1


def pipeline(x: cupy.ndarray, w: cupy.ndarray
             ) -> tuple[list[tuple[str, Callable[[], object]]], cupy.ndarray, cupy.ndarray]:
    """The steps in order as (name, launch), and the two outputs they write."""
    y, c = cupy.empty_like(x), cupy.empty_like(x)
    sums = cupy.empty(x.shape[0], dtype=x.dtype)
    steps = [("affine_tanh", lambda: affine_tanh(x, SCALE, SHIFT, y)),
             ("row_sum", lambda: row_sum(y, axis=1, out=sums)),
             ("matmul", lambda: cupy.matmul(y, w, out=c))]
    return steps, y, sums


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="rows and columns of every matrix")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    rng = cupy.random.default_rng(0)
    x = rng.standard_normal((args.n, args.n), dtype=cupy.float32)
    w = rng.standard_normal((args.n, args.n), dtype=cupy.float32)
    steps, y, sums = pipeline(x, w)
    for _, launch in steps:
        launch()
    cupy.testing.assert_allclose(y, cupy.tanh(SCALE * x + SHIFT), rtol=1e-5, atol=1e-6)
    cupy.testing.assert_allclose(sums, y.sum(axis=1), rtol=1e-4, atol=1e-3)
    for _ in range(args.warmup):
        for _, launch in steps:
            launch()
    cupy.cuda.Device().synchronize()

    # marks[i][k] is recorded before step k of timed iteration i, marks[i][-1] after the last.
    marks = [[cupy.cuda.Event() for _ in range(len(steps) + 1)] for _ in range(args.steps)]
    cupy.cuda.nvtx.RangePush("timed")
    began = time.perf_counter()
    for events in marks:
        events[0].record()
        for (_, launch), after in zip(steps, events[1:]):
            launch()
            after.record()
    cupy.cuda.Device().synchronize()
    elapsed = time.perf_counter() - began
    cupy.cuda.nvtx.RangePop()
    for k, (name, _) in enumerate(steps):
        ms = sum(cupy.cuda.get_elapsed_time(e[k], e[k + 1]) for e in marks) / args.steps
        print(f"{name}: {ms:.3f} ms per step")
    print(f"pipeline n={args.n}: {1e3 * elapsed / args.steps:.3f} ms per iteration")


if __name__ == "__main__":
    main()
