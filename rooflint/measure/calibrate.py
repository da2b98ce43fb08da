"""Measured ceilings for this GPU: what `rooflint calibrate` runs, inside the worker.

In the spirit of the Empirical Roofline Toolkit: the DRAM roof is the best of a sweep over
read, write and copy kernels, two vector widths and several grid sizes on a working set 16x
the L2; the L2 roof is a read sweep over a buffer a quarter of the L2, repeated inside the
kernel with L1-bypassing loads; the L1 roof (the L1/shared-memory data path, 128 bytes a
clock per SM on Hopper) is the best of a read sweep over a buffer small enough that each
SM's share stays in its L1, and a shared-memory read sweep; the FP32 and FP64 roofs are FMA
kernels with 16 independent chains per thread at full occupancy; tensor roofs are cuBLAS
GEMMs on random data (never zeros, which run faster): fp16, tf32 and fp64 through CuPy, and
bf16, fp8 and int8 through PyTorch (CuPy has no GEMM of those types), on the same stream and
timed the same way. Each figure is the best of a few event-timed repetitions, with the SM
clock NVML saw while it ran. Last, on a host of two GPUs or more, the interconnect: NCCL's
collectives over all of them, in processes of their own (interconnect.py). A step this GPU
or environment cannot run (no PyTorch, no fp8 tensor cores, one GPU) is reported as
skipped with a one-line reason; calibration goes on.

Runs inside the worker (``python -m rooflint.measure.worker --calibrate``), which has
already said hello; it reports one ``steps`` message per plan step, then ``done``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import IO, Any, Callable

import cupy
import numpy as np

from rooflint.common.vocabularies import Precision
from rooflint.measure import interconnect
from rooflint.measure.nvml import Nvml
from rooflint.formats.jobs import DeviceInfo
from rooflint.measure.protocol import send
from rooflint.measure.unavailable import Unavailable, import_torch

_SHARED_FLOAT4S = 1024           # 16 KiB of shared memory per block (a power of two)
_SOURCE = f"#define SHARED_FLOAT4S {_SHARED_FLOAT4S}\n" + r"""
template <typename V> __device__ float total(V v);
template <> __device__ float total<float>(float v) { return v; }
template <> __device__ float total<float4>(float4 v) { return v.x + v.y + v.z + v.w; }
template <typename V> __device__ V filled(float f);
template <> __device__ float filled<float>(float f) { return f; }
template <> __device__ float4 filled<float4>(float f) { return make_float4(f, f, f, f); }

// L2_ONLY reads through ld.global.cg: cached in L2 only, so repeated passes measure L2,
// not the L1 that would otherwise hold each SM's share of a small buffer.
template <typename V, bool L2_ONLY>
__global__ void read_kernel(const V* __restrict__ p, size_t n, int reps, float* sink) {
    float acc = 0.f;
    for (int r = 0; r < reps; ++r)
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
             i += (size_t)gridDim.x * blockDim.x)
            acc += total(L2_ONLY ? __ldcg(p + i) : p[i]);
    if (acc == 1234.5f) sink[0] = acc;  // never true: keeps the loads
}

template <typename V>
__global__ void write_kernel(V* __restrict__ p, size_t n, float f) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = filled<V>(f);
}

template <typename V>
__global__ void copy_kernel(const V* __restrict__ x, V* __restrict__ y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i];
}

// Every block reads its own 16 KiB tile of shared memory, conflict-free (a warp's float4s
// are 512 contiguous bytes), starting one warp's width further on each pass so no load can
// be hoisted out of the loop.
__global__ void shared_read_kernel(int reps, float* sink) {
    __shared__ float4 tile[SHARED_FLOAT4S];
    for (int i = threadIdx.x; i < SHARED_FLOAT4S; i += blockDim.x) tile[i] = filled<float4>(i);
    __syncthreads();
    float acc = 0.f;
    for (unsigned r = 0; r < reps; ++r)   // unsigned: the wrap-around is one AND
        for (unsigned i = threadIdx.x; i < SHARED_FLOAT4S; i += blockDim.x)
            acc += total(tile[(i + 32 * r) & (SHARED_FLOAT4S - 1)]);
    if (acc == 1234.5f) sink[0] = acc;
}

// 16 independent FMA chains per thread: enough to hide the FMA latency at full occupancy.
template <typename T>
__global__ void fma_kernel(T* out, int iterations, T b, T c) {
    T a[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) a[j] = (T)(threadIdx.x + j);
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int j = 0; j < 16; ++j) a[j] = a[j] * b + c;
    }
    T s = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) s += a[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""
# Memory-sweep kind -> its template entry, for a vector type v.
_MEMORY_ENTRIES = {"read": "read_kernel<{v}, false>", "l2_read": "read_kernel<{v}, true>",
                   "write": "write_kernel<{v}>", "copy": "copy_kernel<{v}>"}
_ENTRIES = [e.format(v=v) for e in _MEMORY_ENTRIES.values() for v in ("float", "float4")] + [
    "fma_kernel<float>", "fma_kernel<double>", "shared_read_kernel"]
_REPETITIONS = 5
_FMA_ITERATIONS = 4096
_GEMM_N = 8192
# The compute capability PyTorch's GEMM of each precision needs: bf16 and int8 tensor cores
# came with Ampere (8.0), fp8 with Ada (8.9), the lowest torch._scaled_mm accepts.
_TORCH_MINIMUM_CC = {Precision.BF16_TENSOR: (8, 0), Precision.FP8_TENSOR: (8, 9),
                     Precision.INT8_TENSOR: (8, 0)}


@dataclass
class Step:
    """One calibrated figure: what was run, the rate, and the SM clock seen."""

    ceiling: str        # dram | l2 | l1 | a precision (fp32, fp64, fp16-tensor, ...)
    method: str
    value: float        # bytes/s for dram, l2 and l1, FLOP/s otherwise
    sm_clock_mhz: float | None


class Calibrator:
    def __init__(self, device: DeviceInfo, nvml: Nvml | None):
        self.device = device
        self.nvml = nvml
        self.stream = cupy.cuda.Stream(non_blocking=True)
        module = cupy.RawModule(code=_SOURCE, options=("-std=c++17",), name_expressions=_ENTRIES)
        self.kernels = {e: module.get_function(e) for e in _ENTRIES}
        self.sink = cupy.zeros(1, dtype=cupy.float32)

    def best_time(self, run: Callable[[], None]) -> tuple[float, float | None]:
        """Fastest of a few event-timed runs after one warm-up, and the SM clock seen."""
        with self.stream:
            run()
            pairs = []
            for _ in range(_REPETITIONS):
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                start.record(self.stream)
                run()
                end.record(self.stream)
                pairs.append((start, end))
            clock = self.nvml.read().sm_mhz if self.nvml else None
            self.stream.synchronize()
        return min(cupy.cuda.get_elapsed_time(s, e) for s, e in pairs) * 1e-3, clock

    def time_kernel(self, kernel: cupy.RawKernel, grid: tuple[int], args: tuple
                    ) -> tuple[float, float | None]:
        """best_time of ``kernel`` launched on ``grid`` blocks of 256 threads with ``args``;
        the run it times binds them here, not to a sweep's loop variables."""
        return self.best_time(lambda: kernel(grid, (256,), args))

    def memory_sweep(self, elements4: int, reps: int, kinds: tuple[str, ...],
                     blocks_per_sm: tuple[int, ...] = (2, 4, 8, 16, 32)) -> list[Step]:
        """Every kind x vector width x grid size over buffers of ``elements4`` float4s."""
        x = cupy.ones(elements4 * 4, dtype=cupy.float32)
        y = cupy.empty_like(x)
        steps = []
        for kind in kinds:
            for vector, n in (("float4", elements4), ("float", elements4 * 4)):
                kernel = self.kernels[_MEMORY_ENTRIES[kind].format(v=vector)]
                for per_sm in blocks_per_sm:
                    grid = (self.device.sms * per_sm,)
                    args = {"read": (x, np.uint64(n), np.int32(reps), self.sink),
                            "l2_read": (x, np.uint64(n), np.int32(reps), self.sink),
                            "write": (y, np.uint64(n), np.float32(1.5)),
                            "copy": (x, y, np.uint64(n))}[kind]
                    moved = x.nbytes * {"read": reps, "l2_read": reps, "write": 1, "copy": 2}[kind]
                    seconds, clock = self.time_kernel(kernel, grid, args)
                    steps.append(Step("", f"{kind} {vector}, {grid[0]} blocks of 256",
                                      moved / seconds, clock))
        return steps

    def dram(self) -> tuple[Step, list[Step]]:
        elements4 = 16 * self.device.l2_bytes // 16  # 16x the L2 per buffer
        sweep = self.memory_sweep(elements4, 1, ("read", "write", "copy"))
        best = max(sweep, key=lambda s: s.value)
        return Step("dram", best.method, best.value, best.sm_clock_mhz), sweep

    def l2(self) -> Step:
        elements4 = self.device.l2_bytes // 4 // 16  # a quarter of the L2
        best = max(self.memory_sweep(elements4, 64, ("l2_read",)), key=lambda s: s.value)
        return Step("l2", best.method + ", 64 passes over L2/4", best.value, best.sm_clock_mhz)

    def l1(self) -> Step:
        """The L1/shared data path: the better of L1-hit global reads (64 KiB per SM, read
        256 times, so every pass after the first hits in L1; smaller shares measured the
        loop, not L1, on an H100) and shared-memory reads."""
        elements4 = self.device.sms * 64 * 1024 // 16
        cached = max(self.memory_sweep(elements4, 256, ("read",), blocks_per_sm=(2, 4, 8)),
                     key=lambda s: s.value)
        l1_hits = Step("l1", cached.method + ", 256 passes over 64 KiB per SM (L1 hits)",
                       cached.value, cached.sm_clock_mhz)
        return max([l1_hits, *self.shared_sweep(reps=1024)], key=lambda s: s.value)

    def shared_sweep(self, reps: int) -> list[Step]:
        kernel = self.kernels["shared_read_kernel"]
        steps = []
        for blocks_per_sm in (4, 8):
            grid = (self.device.sms * blocks_per_sm,)
            seconds, clock = self.time_kernel(kernel, grid, (np.int32(reps), self.sink))
            steps.append(Step("l1", f"shared-memory read float4, {grid[0]} blocks of 256",
                              grid[0] * _SHARED_FLOAT4S * 16 * reps / seconds, clock))
        return steps

    def fma(self, dtype: type, precision: str) -> Step:
        threads = self.device.sms * 2048  # full occupancy: 2048 threads per SM
        out = cupy.empty(threads, dtype=dtype)
        kernel = self.kernels[f"fma_kernel<{'float' if dtype is np.float32 else 'double'}>"]
        args = (out, np.int32(_FMA_ITERATIONS), dtype(0.999), dtype(0.001))
        seconds, clock = self.time_kernel(kernel, (threads // 256,), args)
        flops = 2.0 * 16 * _FMA_ITERATIONS * threads
        return Step(precision, f"FMA kernel, 16 chains x {threads} threads", flops / seconds, clock)

    def gemm(self, dtype: str, precision: str) -> Step:
        rng = cupy.random.default_rng(0)
        a = rng.standard_normal((_GEMM_N, _GEMM_N), dtype=cupy.float32).astype(dtype)
        b = rng.standard_normal((_GEMM_N, _GEMM_N), dtype=cupy.float32).astype(dtype)
        c = cupy.empty_like(a)
        seconds, clock = self.best_time(lambda: cupy.matmul(a, b, out=c))
        return Step(precision, f"cuBLAS GEMM {dtype} {_GEMM_N}^3 (cupy.matmul, random data)",
                    2.0 * _GEMM_N**3 / seconds, clock)

    def tf32_gemm(self) -> Step:
        """FP32 GEMM with CuPy's compute type set to TF32 (CuPy's CUPY_TF32 switch)."""
        from cupy._core import _routines_linalg as linalg
        previous = linalg.get_compute_type(cupy.float32)
        linalg.set_compute_type(cupy.float32, linalg.COMPUTE_TYPE_TF32)
        try:
            step = self.gemm("float32", Precision.TF32_TENSOR)
        finally:
            linalg.set_compute_type(cupy.float32, previous)
        step.method = step.method.replace("float32", "float32 as TF32")
        return step

    def interconnect_sweep(self) -> list[interconnect.BusStep]:
        """NCCL's collectives over every GPU of the host (interconnect.py), this worker's
        memory pool emptied first: the ranks' buffers share GPU 0 with it."""
        cupy.get_default_memory_pool().free_all_blocks()
        links = self.nvml.active_nvlinks() if self.nvml else None
        return interconnect.steps(cupy.cuda.runtime.getDeviceCount(),
                                  interconnect.link_words(links))

    def torch_gemm(self, precision: str) -> Step:
        """A bf16, fp8 or int8 cuBLAS GEMM through PyTorch, issued on the calibration stream
        (operands included, so no other stream races them) and timed by best_time."""
        needed = _TORCH_MINIMUM_CC[precision]
        have = tuple(int(part) for part in self.device.compute_capability.split("."))
        if have < needed:
            raise Unavailable(f"{precision} needs compute capability {needed[0]}.{needed[1]}, "
                              f"this GPU has {self.device.compute_capability}")
        torch = import_torch("the bf16, fp8 and int8 tensor roofs are")
        torch.manual_seed(0)
        with torch.cuda.stream(torch.cuda.ExternalStream(self.stream.ptr)):
            multiply, how = _TORCH_GEMMS[precision](torch, _GEMM_N)
            seconds, clock = self.best_time(multiply)
        return Step(precision, f"cuBLAS GEMM {how} {_GEMM_N}^3 (random data)",
                    2.0 * _GEMM_N**3 / seconds, clock)


def bf16_gemm(torch: Any, n: int) -> tuple[Callable[[], Any], str]:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    return lambda: torch.matmul(a, b, out=c), "bf16 (torch.matmul)"


def fp8_gemm(torch: Any, n: int) -> tuple[Callable[[], Any], str]:
    """e4m3 operands with unit scales; _scaled_mm takes A row-major and B column-major (the
    transpose of a row-major matrix). Fast accumulation, as fp8 inference and training
    forward passes use it: the roof is the fastest an fp8 GEMM goes."""
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda", dtype=torch.float32)
    return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                     use_fast_accum=True),
            "float8_e4m3fn -> bf16, fast accumulation (torch._scaled_mm)")


def int8_gemm(torch: Any, n: int) -> tuple[Callable[[], Any], str]:
    """int8 x int8 -> int32, B column-major like fp8 (the layout cuBLASLt's int8 kernels
    take natively). Counted as two ops per multiply-add, as the datasheet's TOPS are."""
    a = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8)
    b = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8).t()
    return lambda: torch._int_mm(a, b), "int8 -> int32 (torch._int_mm)"


# Precision -> (torch, n) -> (the GEMM to time, how it runs), for Calibrator.torch_gemm.
_TORCH_GEMMS = {Precision.BF16_TENSOR: bf16_gemm, Precision.FP8_TENSOR: fp8_gemm,
                Precision.INT8_TENSOR: int8_gemm}


def steps(calibrator: Calibrator) -> list[tuple[str, Callable[[], list[Step]]]]:
    """The calibration plan, in order: (label, thunk returning its steps)."""
    def dram() -> list[Step]:
        best, sweep = calibrator.dram()
        return [best] + [Step("dram-sweep", s.method, s.value, s.sm_clock_mhz) for s in sweep]
    return [
        ("DRAM bandwidth sweep", dram),
        ("L2 bandwidth", lambda: [calibrator.l2()]),
        ("L1/shared bandwidth", lambda: [calibrator.l1()]),
        ("FP32 FMA", lambda: [calibrator.fma(np.float32, Precision.FP32)]),
        ("FP64 FMA", lambda: [calibrator.fma(np.float64, Precision.FP64)]),
        ("FP16 tensor GEMM", lambda: [calibrator.gemm("float16", Precision.FP16_TENSOR)]),
        ("TF32 tensor GEMM", lambda: [calibrator.tf32_gemm()]),
        ("FP64 tensor GEMM", lambda: [calibrator.gemm("float64", Precision.FP64_TENSOR)]),
        # Last: a PyTorch failure cannot disturb the CuPy steps.
        ("BF16 tensor GEMM", lambda: [calibrator.torch_gemm(Precision.BF16_TENSOR)]),
        ("FP8 tensor GEMM", lambda: [calibrator.torch_gemm(Precision.FP8_TENSOR)]),
        ("INT8 tensor GEMM", lambda: [calibrator.torch_gemm(Precision.INT8_TENSOR)]),
        ("interconnect (NCCL collectives)", calibrator.interconnect_sweep),
    ]


def skip_reason(exc: Exception) -> str:
    """One line: an Unavailable's own reason, else the error's type and its first line
    (CUDA and PyTorch errors run on with advice over several lines)."""
    text = str(exc) if isinstance(exc, Unavailable) else f"{type(exc).__name__}: {exc}"
    return text.strip().splitlines()[0]


def calibrate(out: IO[str], device: DeviceInfo, nvml: Nvml | None) -> int:
    """Run the plan, reporting each step on the worker's protocol stream."""
    calibrator = Calibrator(device, nvml)
    plan = steps(calibrator)
    for label, run in plan:
        send(out, "start", variant=label, total=len(plan))
        try:
            results = run()
        except Exception as exc:  # one ceiling that cannot be driven here: skip it, say why
            send(out, "skipped", variant=label, message=skip_reason(exc))
            continue
        send(out, "steps", variant=label, steps=[asdict(s) for s in results])
    send(out, "done")
    return 0
