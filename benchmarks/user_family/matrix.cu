// S x S float32 matrices, row-major.

#define TILE 32
#define ROWS 8      // a block of TILE x ROWS threads moves a TILE x TILE tile

// out = in^T through a shared-memory tile (padded against bank conflicts): reads and
// writes both coalesced.
extern "C" __global__ void transpose(const float* in, float* out, int s) {
    __shared__ float tile[TILE][TILE + 1];
    const int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(long long)(y + j) * s + x];
    __syncthreads();
    const int tx = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[(long long)(y + j) * s + tx] = tile[threadIdx.x][threadIdx.y + j];
}

// Five-point Jacobi step: the mean of a point and its four neighbours; the border is copied.
extern "C" __global__ void stencil(const float* in, float* out, int s) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s || y >= s) return;
    const long long i = (long long)y * s + x;
    if (x == 0 || y == 0 || x == s - 1 || y == s - 1) {
        out[i] = in[i];
        return;
    }
    out[i] = 0.2f * (in[i] + in[i - s] + in[i + s] + in[i - 1] + in[i + 1]);
}
