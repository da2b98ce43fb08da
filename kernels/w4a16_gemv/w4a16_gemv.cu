// W4A16 GEMV, the decode shape (M = 1) of the kernel book's Phase 3 (Part 5, 5.2-5.5):
//     y[n] = sum_k x[k] * (q[k][n] * scale[k / 128][n])
// x: K fp16 activations. q: symmetric INT4 weights, values -7..7 (qmax = 7, the book's
// recipe), one fp16 scale per group of 128 K positions per output column n.
//
// Packed layout (the book's, 5.2): 8 nibbles along K in one 32-bit word, words stored
// [K/8][N] row-major, so word (kp, n) is at wq[kp * N + n] and its bits 4i..4i+3 hold
// q[kp * 8 + i][n] as a 4-bit two's-complement value. The manifest declares the buffer as
// uint8 [K/8, N, 4]: the same bytes, little-endian, i.e. byte j of word (kp, n) holds
// k = kp*8 + 2j in its low nibble and k = kp*8 + 2j + 1 in its high nibble.
// A warp's 32 lanes own 32 neighbouring columns, so each word load is one 128-byte,
// fully coalesced warp load.
//
// fp16 values are handled as raw 16-bit words and converted with cvt.f32.f16, so the
// file needs no cuda_fp16.h (NVRTC through CuPy and nvcc both compile it as is).
// Math is fp32 on CUDA cores: fp16 -> fp32 converts, one FMA per weight, fp32 accumulator.
// K must be a multiple of 128 (the manifest's scales shape K/128 enforces it); any N works.

#define GROUP 128               // K positions per scale group
#define PACKS_PER_GROUP 16      // 128 / 8 nibbles per 32-bit word
#define BLOCK_N 32              // output columns per block: one per lane of a warp
#define KSPLIT_WARPS 4          // 3c: warps per block, each taking a quarter of K

__device__ __forceinline__ float half_bits_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// One packed word: 8 weights of column n against 8 activations (one 16-byte chunk of x,
// k = kp*8 .. kp*8+7). The book's inner loop, unrolled over the 8 nibbles: the shift trick
// puts nibble i in bits 28..31 and an arithmetic shift right by 28 sign-extends it. The
// 8 FMAs all feed the same accumulator: that serial chain is what 3b suffers from.
__device__ __forceinline__ float dot8(unsigned int w, uint4 a8, float scale, float acc) {
    const unsigned int a[4] = {a8.x, a8.y, a8.z, a8.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int q = (int)(w << (28 - 4 * i)) >> 28;
        const float act = half_bits_to_float((unsigned short)(a[i / 2] >> (16 * (i % 2))));
        acc = fmaf(act, (float)q * scale, acc);   // acc += act[k] * (nibble * scale)
    }
    return acc;
}

// Groups [g_begin, g_end) of column n, activations read through `x8` (global or shared).
__device__ __forceinline__ float column_partial(const uint4* x8, const unsigned int* __restrict__ wq,
                                                const unsigned short* __restrict__ scales,
                                                int N, int n, int g_begin, int g_end) {
    float acc = 0.f;
    for (int g = g_begin; g < g_end; ++g) {
        const float scale = half_bits_to_float(scales[(size_t)g * N + n]);
        for (int p = 0; p < PACKS_PER_GROUP; ++p) {
            const int kp = g * PACKS_PER_GROUP + p;
            acc = dot8(wq[(size_t)kp * N + n], x8[kp], scale, acc);
        }
    }
    return acc;
}

// Phase 3b (book 5.4): grid cdiv(N, 32) blocks of ONE warp; lane = output column; each
// thread walks all of K serially. Activations come straight from global memory (the same
// 16 bytes for every lane: a broadcast served by L1).
extern "C" __global__ void __launch_bounds__(BLOCK_N)
w4a16_gemv_naive(const unsigned short* __restrict__ x, const unsigned int* __restrict__ wq,
                 const unsigned short* __restrict__ scales, float* __restrict__ y, int K, int N) {
    const int n = blockIdx.x * BLOCK_N + threadIdx.x;
    if (n >= N) return;
    const uint4* x8 = reinterpret_cast<const uint4*>(x);
    y[n] = column_partial(x8, wq, scales, N, n, 0, K / GROUP);
}

// Phase 3c (book 5.5): the same 32 columns per block, but 4 warps (128 threads) split K:
// warp w takes the contiguous groups [w*G/4, (w+1)*G/4) of the G = K/128 groups (an even
// quarter of K when G % 4 == 0; a split that is off by one group otherwise, so every
// K % 128 == 0 works). The block first stages all of x (2K bytes) in dynamic shared
// memory, 16 bytes per thread per step; then each lane keeps one fp32 partial and a
// 4 x 32 shared-memory combine sums the partials per column. Out-of-range columns stay
// in the block (the book's `valid` guard, 2.6) so every thread reaches both barriers.
extern "C" __global__ void __launch_bounds__(KSPLIT_WARPS * 32)
w4a16_gemv_ksplit(const unsigned short* __restrict__ x, const unsigned int* __restrict__ wq,
                  const unsigned short* __restrict__ scales, float* __restrict__ y, int K, int N) {
    extern __shared__ uint4 x_shared[];                // K / 8 chunks of 8 fp16: 2K bytes
    __shared__ float partial[KSPLIT_WARPS][BLOCK_N];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int n = blockIdx.x * BLOCK_N + lane;
    const bool valid = n < N;

    const uint4* x8 = reinterpret_cast<const uint4*>(x);
    for (int i = threadIdx.x; i < K / 8; i += blockDim.x) x_shared[i] = x8[i];
    __syncthreads();

    const int groups = K / GROUP;
    const int g_begin = warp * groups / KSPLIT_WARPS;
    const int g_end = (warp + 1) * groups / KSPLIT_WARPS;
    const float acc = valid ? column_partial(x_shared, wq, scales, N, n, g_begin, g_end) : 0.f;

    partial[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && valid) {
        float total = 0.f;
#pragma unroll
        for (int w = 0; w < KSPLIT_WARPS; ++w) total += partial[w][lane];
        y[n] = total;
    }
}
