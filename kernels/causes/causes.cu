// Small kernels, each built to show one cause that rooflint's verdict rules name, so the
// rules are tested on real counters (tests/test_diagnose.py reads the committed run).
// Every kernel runs one resident wave or more (BLOCKS = 8 * num_sms blocks of 256), so
// "grid under one wave" never masks the cause it is built for.

// Synchronization: warp 0 runs a dependent FMA chain while the other 7 warps of the
// block wait at the barrier, ITERS times.
extern "C" __global__ void barrier_bound(float* __restrict__ out, int iters, int chain) {
    float a = threadIdx.x * 1e-3f;
    const bool worker = threadIdx.x < 32;
    for (int it = 0; it < iters; ++it) {
        if (worker)
            for (int c = 0; c < chain; ++c) a = fmaf(a, 0.99f, 0.01f);
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

// Launch overhead: a chain of tiny element-wise launches (the unfused pattern).
// y = alpha * x, then y += alpha * x, each over n floats (about a microsecond of work).
extern "C" __global__ void scale_into(const float* __restrict__ x, float* __restrict__ y,
                                      float alpha, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i];
}

extern "C" __global__ void axpy(const float* __restrict__ x, float* __restrict__ y,
                                float alpha, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(alpha, x[i], y[i]);
}

// A busy math pipe: four independent chains of one FMA and one MUFU.EX2 each (the
// special-function unit issues 16 lanes per clock per SM, an eighth of the FMA rate).
__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

extern "C" __global__ void math_pipe_bound(float* __restrict__ out, int iters) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a0 = t * 1e-7f, a1 = a0 + 0.25f, a2 = a0 + 0.5f, a3 = a0 + 0.75f;
    for (int it = 0; it < iters; ++it) {
        a0 = ex2(fmaf(a0, -0.5f, 0.1f));
        a1 = ex2(fmaf(a1, -0.5f, 0.1f));
        a2 = ex2(fmaf(a2, -0.5f, 0.1f));
        a3 = ex2(fmaf(a3, -0.5f, 0.1f));
    }
    out[t] = a0 + a1 + a2 + a3;
}

// Data that lives in L2: PASSES sweeps over a 16.5 MiB array (a third of the H100/H200
// L2), four independent 16-byte loads per thread per sweep. Each block reads another
// block's 64 KiB slice on every sweep, so an SM's data never stays in its L1 (a thread
// re-reading its own 64 bytes would hit L1 at ~33 TB/s): every sweep after the first is
// L2 -> SM traffic. out[t] = the thread's sum.
__device__ __forceinline__ float4 load_cg(const float4* p) {  // volatile: not hoisted
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

extern "C" __global__ void l2_resident(const float4* __restrict__ x, float* __restrict__ out,
                                       int passes) {
    const int T = gridDim.x * blockDim.x;
    float acc = 0.f;
    for (int p = 0; p < passes; ++p) {
        const int source_block = (blockIdx.x + 7 * p) % gridDim.x;
        const float4* slice = x + source_block * blockDim.x + threadIdx.x;
        float4 v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = load_cg(slice + k * T);
#pragma unroll
        for (int k = 0; k < 4; ++k) acc += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
