// FP32 GEMM C = A x B (row-major, N x N): the roofline article's GEMM walk, from a naive
// triple loop to register blocking. The tiled kernels assume N is a multiple of their
// tile sizes (128 covers all of them); the reference check catches any other N.

// 1. Naive: thread (x, y) computes C[x][y] with x = the fastest-varying thread index,
//    so neighbouring threads read A rows N floats apart (uncoalesced) and write C with
//    a stride of N.
extern "C" __global__ void sgemm_naive(int N, const float* __restrict__ A,
                                       const float* __restrict__ B, float* __restrict__ C) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= N || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
    C[row * N + col] = acc;
}

// 2. Coalesced: neighbouring threads take neighbouring columns, so B loads and C stores
//    are contiguous across a warp and the A load is one broadcast.
extern "C" __global__ void sgemm_coalesced(int N, const float* __restrict__ A,
                                           const float* __restrict__ B, float* __restrict__ C) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= N || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
    C[row * N + col] = acc;
}

// 3. Shared-memory tiling: each 32 x 32 block stages 32 x 32 tiles of A and B, so every
//    loaded element is reused 32 times from shared memory.
template <int TILE>
__global__ void sgemm_tiled(int N, const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < N; k0 += TILE) {
        As[ty][tx] = A[row * N + k0 + tx];
        Bs[ty][tx] = B[(k0 + ty) * N + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * N + col] = acc;
}

// 4. 1D register blocking: each thread computes TM results of one column, reusing each
//    B value from shared memory TM times out of a register.
template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__(BM * BN / TM)
sgemm_1d(int N, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    static_assert(BM * BK == BM * BN / TM && BN * BK == BM * BN / TM,
                  "one A and one B element per thread per tile");
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int threadCol = threadIdx.x % BN, threadRow = threadIdx.x / BN;
    const int innerColA = threadIdx.x % BK, innerRowA = threadIdx.x / BK;
    const int innerColB = threadIdx.x % BN, innerRowB = threadIdx.x / BN;
    A += blockIdx.y * BM * N;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM] = {0.f};
    for (int k0 = 0; k0 < N; k0 += BK) {
        As[innerRowA * BK + innerColA] = A[innerRowA * N + innerColA];
        Bs[innerRowB * BN + innerColB] = B[innerRowB * N + innerColB];
        __syncthreads();
        A += BK;
        B += BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float b = Bs[k * BN + threadCol];
#pragma unroll
            for (int r = 0; r < TM; ++r) acc[r] += As[(threadRow * TM + r) * BK + k] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < TM; ++r) C[(threadRow * TM + r) * N + threadCol] = acc[r];
}

// 5. 2D register blocking with vectorized loads: a 128 x 128 block tile, 256 threads,
//    each computing an 8 x 8 tile of C as four 4 x 4 quadrants (rows ty*4 and 64 + ty*4,
//    columns tx*4 and 64 + tx*4), so that a warp's float4 shared-memory reads hit
//    consecutive addresses (no bank conflicts). A is stored transposed in shared memory;
//    the next k-tile is loaded into registers while the current one is multiplied, and
//    two shared-memory buffers leave one __syncthreads per k-tile.
extern "C" __global__ void __launch_bounds__(256)
sgemm_2d_vec(int N, const float* __restrict__ A, const float* __restrict__ B,
             float* __restrict__ C) {
    constexpr int BM = 128, BN = 128, BK = 8;
    __shared__ float4 As4[2][BK][BM / 4];   // As[k][m]: A transposed
    __shared__ float4 Bs4[2][BK][BN / 4];   // Bs[k][n]
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    // Each thread loads one float4 of the A tile (128 x 8) and one of the B tile (8 x 128).
    const int aRow = tid / 2, aCol = (tid % 2) * 4;
    const int bRow = tid / 32, bCol = (tid % 32) * 4;
    const float* aPtr = A + (blockIdx.y * BM + aRow) * (size_t)N + aCol;
    const float* bPtr = B + (size_t)bRow * N + blockIdx.x * BN + bCol;

    float acc[8][8] = {{0.f}};
    float4 aNext = *reinterpret_cast<const float4*>(aPtr);
    float4 bNext = *reinterpret_cast<const float4*>(bPtr);
    int buf = 0;
    auto stage = [&](int b) {
        float* as = reinterpret_cast<float*>(As4[b]);
        as[(aCol + 0) * BM + aRow] = aNext.x;
        as[(aCol + 1) * BM + aRow] = aNext.y;
        as[(aCol + 2) * BM + aRow] = aNext.z;
        as[(aCol + 3) * BM + aRow] = aNext.w;
        Bs4[b][bRow][bCol / 4] = bNext;
    };
    stage(0);
    __syncthreads();
    for (int k0 = 0; k0 < N; k0 += BK) {
        const bool more = k0 + BK < N;
        if (more) {
            aNext = *reinterpret_cast<const float4*>(aPtr + k0 + BK);
            bNext = *reinterpret_cast<const float4*>(bPtr + (size_t)(k0 + BK) * N);
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = As4[buf][k][ty], a1 = As4[buf][k][16 + ty];
            const float4 b0 = Bs4[buf][k][tx], b1 = Bs4[buf][k][16 + tx];
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        if (more) {
            buf ^= 1;
            stage(buf);
            __syncthreads();
        }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = blockIdx.y * BM + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        float* cRow = C + (size_t)row * N + blockIdx.x * BN;
        *reinterpret_cast<float4*>(cRow + tx * 4) =
            make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(cRow + 64 + tx * 4) =
            make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
