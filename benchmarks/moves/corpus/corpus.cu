// One-move pairs (issue 48): each kernel here is one side of a pair in
// benchmarks/moves/pairs.yaml; the second kernel of a pair differs from the first by one
// move of rooflint's catalog (rooflint/analysis/moves.py), named beside it.

// ---- fusion: t = a*x, then out = t + y (two launches, t crosses DRAM twice) -> one launch
extern "C" __global__ void scale(const float* x, float* t, float a, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) t[i] = a * x[i];
}

extern "C" __global__ void add(const float* t, const float* y, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = t[i] + y[i];
}

extern "C" __global__ void axpy(const float* x, const float* y, float* out, float a,
                                long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

// ---- transpose, blocks of 32x8 threads over 32x32 tiles
// reads coalesced, stores a column: 32 rows per warp store
extern "C" __global__ void transpose_naive(const float* in, float* out, int n) {
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        out[(long long)x * n + y + j] = in[(long long)(y + j) * n + x];
}

// through a shared tile: both sides coalesced. PAD = 0: the tile's column reads hit one
// bank; PAD = 1: each tile row padded by one element, a column falls in 32 banks
template <int PAD>
__global__ void transpose_tile(const float* in, float* out, int n) {
    __shared__ float tile[32][32 + PAD];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) out[(long long)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

// ---- dependent FMA chains: p <- 0.999 p + 0.001 v, `steps` times, from p = 0
// (p = v (1 - 0.999^steps)). Each thread owns `per` elements, strided by the grid.
#define CHAIN_STEP(p, b) p = fmaf(p, 0.999f, b)

// one chain after another: one FMA in flight per thread
extern "C" __global__ void chain_serial(const float* x, float* out, int per, int steps) {
    const int stride = gridDim.x * blockDim.x;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per; ++k) {
        const float b = 0.001f * x[i + k * stride];
        float p = 0.f;
#pragma unroll 8
        for (int s = 0; s < steps; ++s) CHAIN_STEP(p, b);
        out[i + k * stride] = p;
    }
}

// four chains interleaved (more ILP): four FMAs in flight per thread, the same work
extern "C" __global__ void chain_ilp4(const float* x, float* out, int per, int steps) {
    const int stride = gridDim.x * blockDim.x;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per; k += 4) {
        const float b0 = 0.001f * x[i + k * stride], b1 = 0.001f * x[i + (k + 1) * stride];
        const float b2 = 0.001f * x[i + (k + 2) * stride], b3 = 0.001f * x[i + (k + 3) * stride];
        float p0 = 0.f, p1 = 0.f, p2 = 0.f, p3 = 0.f;
#pragma unroll 8
        for (int s = 0; s < steps; ++s) {
            CHAIN_STEP(p0, b0); CHAIN_STEP(p1, b1); CHAIN_STEP(p2, b2); CHAIN_STEP(p3, b3);
        }
        out[i + k * stride] = p0; out[i + (k + 1) * stride] = p1;
        out[i + (k + 2) * stride] = p2; out[i + (k + 3) * stride] = p3;
    }
}

// the serial chains, the input read as halves (half the bytes: the trap of a chain)
__device__ float half_to_float(unsigned short bits) {   // no header: the PTX conversion
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
}

extern "C" __global__ void chain_serial_half(const unsigned short* x, float* out, int per,
                                             int steps) {
    const int stride = gridDim.x * blockDim.x;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 1
    for (int k = 0; k < per; ++k) {
        const float b = 0.001f * half_to_float(x[i + k * stride]);
        float p = 0.f;
#pragma unroll 8
        for (int s = 0; s < steps; ++s) CHAIN_STEP(p, b);
        out[i + k * stride] = p;
    }
}

// the serial chains, each block's inputs staged through shared memory by cp.async first
// (the trap: memory is not what these chains wait on). blockDim.x * per floats of shared memory.
extern "C" __global__ void chain_serial_cp_async(const float* x, float* out, int per, int steps) {
    extern __shared__ float staged[];
    const int stride = gridDim.x * blockDim.x;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < per; ++k) {
        unsigned dst = (unsigned)__cvta_generic_to_shared(&staged[k * blockDim.x + threadIdx.x]);
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(x + i + k * stride));
    }
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
#pragma unroll 1
    for (int k = 0; k < per; ++k) {
        const float b = 0.001f * staged[k * blockDim.x + threadIdx.x];
        float p = 0.f;
#pragma unroll 8
        for (int s = 0; s < steps; ++s) CHAIN_STEP(p, b);
        out[i + k * stride] = p;
    }
}

// ---- whole waves: each block owns `per` consecutive runs of blockDim.x elements, each
// element a chain; blocks of 1024 threads, one per SM (their shared memory), so a
// block's time is its SM's own
extern "C" __global__ void chain_blocks(const float* x, float* out, int per, int steps) {
#pragma unroll 1
    for (int k = 0; k < per; ++k) {
        const long long i = ((long long)blockIdx.x * per + k) * blockDim.x + threadIdx.x;
        const float b = 0.001f * x[i];
        float p = 0.f;
#pragma unroll 8
        for (int s = 0; s < steps; ++s) CHAIN_STEP(p, b);
        out[i] = p;
    }
}

// ---- a copy, grid-stride; the launches differ only in the shared memory they reserve
extern "C" __global__ void copy_strided_grid(const float* x, float* out, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = x[i];
}

// ---- row sums of a rows x cols matrix: a block per row, or per (row, slice of the
// columns) into partials, then a combine (split-K)
__device__ float block_sum(float v) {
    __shared__ float warp_sums[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.f;
    if (threadIdx.x < 32)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// partials[blockIdx.y * rows + row] = the sum of the row's slice blockIdx.y of gridDim.y
extern "C" __global__ void row_sums(const float* a, float* partials, int rows, long long cols) {
    const int row = blockIdx.x;
    const long long slice = cols / gridDim.y;
    const float* r = a + row * cols + blockIdx.y * slice;
    float v = 0.f;
    for (long long c = threadIdx.x; c < slice; c += blockDim.x) v += r[c];
    v = block_sum(v);
    if (threadIdx.x == 0) partials[blockIdx.y * rows + row] = v;
}

extern "C" __global__ void combine_slices(const float* partials, float* out, int rows, int slices) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float v = 0.f;
    for (int s = 0; s < slices; ++s) v += partials[s * rows + row];
    out[row] = v;
}

// ---- register spills: 32 live accumulators per thread, each element's 16 products
// summed into them; a __launch_bounds__ that forces 32 registers spills them
#define SPILL_BODY                                                                       \
    const int stride = gridDim.x * blockDim.x;                                           \
    const int i = blockIdx.x * blockDim.x + threadIdx.x;                                 \
    float acc[32];                                                                       \
    _Pragma("unroll") for (int j = 0; j < 32; ++j) acc[j] = 0.f;                         \
    for (int k = 0; k < per; ++k) {                                                      \
        const float v = x[i + k * stride];                                               \
        _Pragma("unroll") for (int j = 0; j < 32; ++j) acc[j] = fmaf(acc[j], v, 1.f / (j + 1)); \
    }                                                                                    \
    float s = 0.f;                                                                       \
    _Pragma("unroll") for (int j = 0; j < 32; ++j) s += acc[j];                          \
    out[i] = s;

extern "C" __global__ void __launch_bounds__(256, 8)
accumulate_spilled(const float* x, float* out, int per) { SPILL_BODY }

extern "C" __global__ void __launch_bounds__(256, 2)
accumulate_in_registers(const float* x, float* out, int per) { SPILL_BODY }
