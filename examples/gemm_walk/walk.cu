// FP32 GEMM C = A x B (row-major, N x N, N a multiple of 128) past register blocking:
// each step is written as the move rooflint gave the step before it (kernel.yaml says
// which). All steps share one shape: a 128 x 128 block tile, BK = 8, 256 threads, each
// computing an 8 x 8 tile of C from registers.

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, THREADS = 256;

// 1. 2D register blocking, scalar: thread (ty, tx) of a 16 x 16 grid owns rows ty*8..+7
//    and columns tx*8..+7 of the block tile. Every global and shared access is 4 bytes;
//    a warp's stores of C land 32 bytes apart, and its reads of a B-tile row 8 floats apart.
extern "C" __global__ void __launch_bounds__(THREADS)
walk_blocked_2d(int N, const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C) {
    __shared__ float As[BM * BK];          // As[m][k]
    __shared__ float Bs[BK * BN];          // Bs[k][n]
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const int aRow = threadIdx.x / BK, aCol = threadIdx.x % BK;     // 32 rows per pass
    const int bRow = threadIdx.x / BN, bCol = threadIdx.x % BN;     // 2 rows per pass
    A += (size_t)blockIdx.y * BM * N;
    B += blockIdx.x * BN;
    C += (size_t)blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM][TN] = {{0.f}};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < N; k0 += BK) {
        for (int r = 0; r < BM; r += THREADS / BK) As[(aRow + r) * BK + aCol] = A[(size_t)(aRow + r) * N + aCol];
        for (int r = 0; r < BK; r += THREADS / BN) Bs[(bRow + r) * BN + bCol] = B[(size_t)(bRow + r) * N + bCol];
        __syncthreads();
        A += BK;
        B += (size_t)BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[(ty * TM + i) * BK + k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k * BN + tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) C[(size_t)(ty * TM + i) * N + tx * TN + j] = acc[i][j];
}

// 2. Conflict-free: the same kernel with each thread's outputs interleaved (rows ty + 16*i,
//    columns tx + 16*j) instead of 8 contiguous ones: a warp's reads of a B-tile row are
//    16 consecutive words (32 banks), its reads of A two broadcast words in two banks, and
//    its stores of C 16 consecutive floats per row.
extern "C" __global__ void __launch_bounds__(THREADS)
walk_conflict_free(int N, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C) {
    __shared__ float As[BM * BK];          // As[m][k]
    __shared__ float Bs[BK * BN];          // Bs[k][n]
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const int aRow = threadIdx.x / BK, aCol = threadIdx.x % BK;
    const int bRow = threadIdx.x / BN, bCol = threadIdx.x % BN;
    A += (size_t)blockIdx.y * BM * N;
    B += blockIdx.x * BN;
    C += (size_t)blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM][TN] = {{0.f}};
    float a[TM], b[TN];
    for (int k0 = 0; k0 < N; k0 += BK) {
        for (int r = 0; r < BM; r += THREADS / BK) As[(aRow + r) * BK + aCol] = A[(size_t)(aRow + r) * N + aCol];
        for (int r = 0; r < BK; r += THREADS / BN) Bs[(bRow + r) * BN + bCol] = B[(size_t)(bRow + r) * N + bCol];
        __syncthreads();
        A += BK;
        B += (size_t)BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[(ty + 16 * i) * BK + k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k * BN + tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) C[(size_t)(ty + 16 * i) * N + tx + 16 * j] = acc[i][j];
}

// 3. Vectorized: 16-byte global loads (one float4 of A and of B per thread per k-tile), A
//    stored transposed in shared memory, a thread's rows and columns as two groups of 4,
//    64 apart (rows ty*4 and 64 + ty*4, columns tx*4 and 64 + tx*4), so each k reads two
//    float4s of A and two of B (LDS.128) and the 8 threads a 16-byte read serves at once
//    read 8 consecutive float4s; C written as float4s.
extern "C" __global__ void __launch_bounds__(THREADS)
walk_vectorized(int N, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C) {
    __shared__ float4 As4[BK][BM / 4];
    __shared__ float4 Bs4[BK][BN / 4];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int aRow = threadIdx.x / 2, aCol = (threadIdx.x % 2) * 4;
    const int bRow = threadIdx.x / 32, bCol = (threadIdx.x % 32) * 4;
    A += (size_t)blockIdx.y * BM * N;
    B += blockIdx.x * BN;
    C += (size_t)blockIdx.y * BM * N + blockIdx.x * BN;
    float acc[TM][TN] = {{0.f}};
    for (int k0 = 0; k0 < N; k0 += BK) {
        const float4 av = *reinterpret_cast<const float4*>(A + (size_t)aRow * N + aCol);
        float* as = reinterpret_cast<float*>(As4);
        as[(aCol + 0) * BM + aRow] = av.x;
        as[(aCol + 1) * BM + aRow] = av.y;
        as[(aCol + 2) * BM + aRow] = av.z;
        as[(aCol + 3) * BM + aRow] = av.w;
        Bs4[bRow][bCol / 4] = *reinterpret_cast<const float4*>(B + (size_t)bRow * N + bCol);
        __syncthreads();
        A += BK;
        B += (size_t)BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = As4[k][ty], a1 = As4[k][16 + ty];
            const float4 b0 = Bs4[k][tx], b1 = Bs4[k][16 + tx];
            const float a[TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[TN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float* row = C + (size_t)(i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4) * N;
        *reinterpret_cast<float4*>(row + tx * 4) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(row + 64 + tx * 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
