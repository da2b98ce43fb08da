// Sums over N floats in two launches: each block of 256 threads sums its grid-stride share
// (warp shuffles, then one shared slot per warp) into partials[blockIdx.x]; the same
// kernel, launched as one block over the partials, writes the total. No atomics: the
// result is the same every run.

#define BLOCK 256

__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warps[BLOCK / 32];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x < BLOCK / 32 ? warps[threadIdx.x] : 0.f;
    if (threadIdx.x < 32)
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void sum_partials(const float* x, float* partials, long long n) {
    float s = 0.f;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n;
         i += (long long)gridDim.x * BLOCK)
        s += x[i];
    s = block_sum(s);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

extern "C" __global__ void sum_squares_partials(const float* x, float* partials, long long n) {
    float s = 0.f;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n;
         i += (long long)gridDim.x * BLOCK)
        s = fmaf(x[i], x[i], s);
    s = block_sum(s);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// A 256-bin histogram of bytes: each block counts into shared memory, then adds its
// counts to the global histogram (zeroed by zero_histogram first).
extern "C" __global__ void zero_histogram(unsigned int* hist) {
    hist[threadIdx.x] = 0u;
}

extern "C" __global__ void histogram(const unsigned char* keys, unsigned int* hist, long long n) {
    __shared__ unsigned int counts[256];
    counts[threadIdx.x] = 0u;
    __syncthreads();
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n;
         i += (long long)gridDim.x * BLOCK)
        atomicAdd(&counts[keys[i]], 1u);
    __syncthreads();
    atomicAdd(&hist[threadIdx.x], counts[threadIdx.x]);
}
