// Streaming kernels: the bandwidth end of the roofline.
// Every kernel is a grid-stride loop over n elements unless its name says otherwise.

extern "C" __global__ void copy_scalar(const float* __restrict__ x, float* __restrict__ out,
                                       long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
}

// 16-byte loads and stores; n4 = n / 4 float4 elements, grid-stride so any grid works.
extern "C" __global__ void copy_float4(const float4* __restrict__ x, float4* __restrict__ out,
                                       long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x) {
        out[i] = x[i];
    }
}

// STREAM triad: out = x + s * y (2 FLOPs and 12 bytes per element), float4 wide.
extern "C" __global__ void triad_float4(const float4* __restrict__ x, const float4* __restrict__ y,
                                        float4* __restrict__ out, float s, long long n4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x) {
        float4 a = x[i], b = y[i];
        out[i] = make_float4(a.x + s * b.x, a.y + s * b.y, a.z + s * b.z, a.w + s * b.w);
    }
}

// Transpose-style gather: thread i reads x[(i % m) * stride + i / m] with m = n / stride.
// Neighbouring threads read addresses stride * 4 bytes apart, so each 32-byte sector
// serves one useful float before it is evicted: uncoalesced reads, coalesced writes.
extern "C" __global__ void strided_read(const float* __restrict__ x, float* __restrict__ out,
                                        long long n, long long stride) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long m = n / stride;
    if (i < n) out[i] = x[(i % m) * stride + i / m];
}
