// Sum of n floats into one float: three ways to combine per-thread partials.
//
// All three variants share the same load phase, so they differ only in the combine: a
// grid-stride loop over 16-byte float4 loads, four independent loads per iteration, then
// the last n % 4 elements. n is a 64-bit count; x must be 16-byte aligned (any CuPy
// allocation is). Launched with 8 * num_sms blocks of 256 threads: one full wave of
// 2048 threads per SM on Hopper and A100 (GPUs with 1536 threads per SM run 1.33 waves).

#define BLOCK 256                 // threads per block for every kernel in this file
#define BLOCKS_PER_SM 8           // 2048 threads per SM: registers capped at 32 so the
                                  // 8 * num_sms grid is exactly one resident wave

__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__device__ __forceinline__ float thread_sum(const float* __restrict__ x, long long n) {
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    const long long n4 = n / 4;
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.f;
    // Four loads issued back to back before any of them is used: 64 bytes in flight per
    // thread, 128 KiB per SM at 2048 threads, several times what covers DRAM latency.
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 v0 = x4[i], v1 = x4[i + stride], v2 = x4[i + 2 * stride],
                     v3 = x4[i + 3 * stride];
        s += sum4(v0);
        s += sum4(v1);
        s += sum4(v2);
        s += sum4(v3);
    }
    for (; i < n4; i += stride) s += sum4(x4[i]);
    // The last n % 4 elements, one per thread of the first threads.
    i = 4 * n4 + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) s += x[i];
    return s;
}

// out[0] = 0: the first launch of the variants that accumulate into out with atomics,
// since a timed run repeats without resetting buffers (and out starts NaN-poisoned).
extern "C" __global__ void zero_scalar(float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = 0.f;
}

// 1. Atomics: every thread adds its grid-stride partial straight into out[0]. One atomic
//    per thread (8 * num_sms * 256 = 270,336 on 132 SMs), all to one address: the L2
//    serializes them, so the tail of atomics, not the loads, sets the pace.
extern "C" __global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
sum_atomics(const float* __restrict__ x, float* out, long long n) {
    atomicAdd(out, thread_sum(x, n));
}

// 2. Shared-memory tree (the classic sequential-addressing reduction): each thread's
//    partial goes to shared memory, then log2(256) = 8 levels halve the active threads,
//    a __syncthreads after each level; thread 0 writes one partial per block. The same
//    kernel, launched again as one block over the partials, writes the final sum: no
//    atomics, no zeroing, deterministic.
extern "C" __global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
sum_smem_tree(const float* __restrict__ x, float* __restrict__ out, long long n) {
    __shared__ float partial[BLOCK];
    const int tid = threadIdx.x;
    partial[tid] = thread_sum(x, n);
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = partial[0];
}

// 3. Warp shuffles: each warp reduces its 32 partials with 5 __shfl_down_sync steps (no
//    shared memory, no barrier), lane 0 puts the warp's sum in one shared slot, one
//    barrier, warp 0 shuffles the 8 warp sums, and thread 0 adds the block's sum into
//    out[0] with one atomic per block (8 * num_sms of them: nothing to serialize on).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
sum_warp_shuffle(const float* __restrict__ x, float* out, long long n) {
    __shared__ float warp_sums[BLOCK / 32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const float s = warp_sum(thread_sum(x, n));
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        const float block_sum = warp_sum(lane < BLOCK / 32 ? warp_sums[lane] : 0.f);
        if (lane == 0) atomicAdd(out, block_sum);
    }
}
