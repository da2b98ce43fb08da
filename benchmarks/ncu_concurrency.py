"""Whether ncu sessions on different GPUs of a host profile at the same time.

    ncu --profile-from-start off --nvtx --metrics <rooflint's> \
        python3 benchmarks/ncu_concurrency.py N

profiles N float4 copies of 256 MiB, each once, as rooflint's counter pass does (inside a
variant's NVTX range), and prints how long the profiled loop took. Run alone, then two at
once pinned to two GPUs (CUDA_VISIBLE_DEVICES), sharing ncu's lock directory (TMPDIR) or
each with its own: benchmarks/results/h200-x2/ncu-concurrency.md has what a 2-GPU H200 host
gave.
"""
import sys
import time

import cupy
import numpy as np
from cupy.cuda import nvtx

src = r'''extern "C" __global__ void copy4(const float4* x, float4* y, long long n){
  for (long long i = blockIdx.x*(long long)blockDim.x+threadIdx.x; i<n;
       i+= (long long)gridDim.x*blockDim.x) y[i]=x[i];}'''
copy4 = cupy.RawModule(code=src).get_function("copy4")
n = 2**26
x = cupy.random.rand(n, dtype=cupy.float32)
y = cupy.empty_like(x)
copy4((1056,),(256,),(x,y,np.int64(n//4)))
cupy.cuda.runtime.deviceSynchronize()
began = time.perf_counter()
for i in range(int(sys.argv[1])):
    cupy.cuda.runtime.profilerStart()
    nvtx.RangePush(f"rooflint-variant/{i}")
    copy4((1056,),(256,),(x,y,np.int64(n//4)))
    cupy.cuda.runtime.deviceSynchronize()
    nvtx.RangePop()
    cupy.cuda.runtime.profilerStop()
print(f"profiled loop {time.perf_counter()-began:.2f} s", file=sys.stderr)
