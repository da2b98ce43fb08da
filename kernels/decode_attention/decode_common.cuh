// Helpers shared by decode_fp16.cu and decode_quant.cu: fp16 bits to float without
// cuda_fp16.h (one cvt instruction, so NVRTC needs no header path), and warp butterfly
// reductions after which every lane holds the result.
#pragma once

typedef unsigned short half_t;  // fp16 bits

__device__ __forceinline__ float h2f(half_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// Four fp16 values packed in 8 bytes (one LDG.E.64) -> four floats.
__device__ __forceinline__ float4 half4_to_float4(uint2 u) {
    float4 r;
    r.x = h2f((half_t)(u.x & 0xffffu));
    r.y = h2f((half_t)(u.x >> 16));
    r.z = h2f((half_t)(u.y & 0xffffu));
    r.w = h2f((half_t)(u.y >> 16));
    return r;
}

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

// Butterfly reductions: every lane ends up with the result.
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}
