// Row-wise softmax of an M x N float32 matrix, row-major: out[r, :] = softmax(x[r, :]),
// with the row's maximum subtracted before exp so that large inputs cannot overflow.

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

// One thread per row, three passes over the row in global memory: the maximum, the sum
// of exponentials, then the normalised write. Neighbouring threads read addresses a
// whole row (4N bytes) apart, so every warp load touches 32 cache lines; and a thread's
// row (16 KiB) is long gone from the caches when the next pass comes back to it.
extern "C" __global__ void softmax_naive(const float* __restrict__ x, float* __restrict__ out,
                                         int rows, int n) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* row = x + (size_t)r * n;
    float* dst = out + (size_t)r * n;
    float m = neg_inf();
    for (int j = 0; j < n; ++j) m = fmaxf(m, row[j]);
    float sum = 0.f;
    for (int j = 0; j < n; ++j) sum += expf(row[j] - m);
    float inv = 1.f / sum;
    for (int j = 0; j < n; ++j) dst[j] = expf(row[j] - m) * inv;
}

struct Max { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct Sum { __device__ float operator()(float a, float b) const { return a + b; } };

// The block's reduction of v, returned to every thread: butterfly shuffles within each
// warp, one shared slot per warp, then every warp combines the slots itself (no second
// broadcast). blockDim.x must be a multiple of 32.
template <typename Op>
__device__ float block_all_reduce(float v, float identity, Op op) {
    __shared__ float slots[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    v = lane < warps ? slots[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();  // the slots are written again by the next reduction
    return v;
}

// One block per row; each thread keeps VECS float4s of the row in registers, so the row
// is read from memory once (16-byte coalesced loads), reduced twice in registers and
// shuffles, and written once. n must be a multiple of 4 (16-byte aligned rows) and at
// most 4 * VECS * blockDim.x.
template <int VECS>
__global__ void softmax_block(const float* __restrict__ x, float* __restrict__ out, int n) {
    const float4* row = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * n);
    float4* dst = reinterpret_cast<float4*>(out + (size_t)blockIdx.x * n);
    const int n4 = n / 4;
    const float lowest = neg_inf();
    float4 v[VECS];
    float m = lowest;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        int i = threadIdx.x + k * blockDim.x;
        v[k] = i < n4 ? row[i] : make_float4(lowest, lowest, lowest, lowest);
        m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
    m = block_all_reduce(m, lowest, Max());
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {  // exp(-inf - m) = 0: the padding adds nothing
        v[k] = make_float4(expf(v[k].x - m), expf(v[k].y - m), expf(v[k].z - m),
                           expf(v[k].w - m));
        sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    const float inv = 1.f / block_all_reduce(sum, 0.f, Sum());
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        int i = threadIdx.x + k * blockDim.x;
        if (i < n4) dst[i] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
    }
}
