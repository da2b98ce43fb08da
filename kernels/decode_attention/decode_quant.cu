// Decode attention over a quantized KV cache: the kernel book's Part 4 (INT8 per-token,
// INT4 KIVI). Same contract, GQA map and launch shape as v3 in decode_fp16.cu: grid
// (B, HQ), block 32 (one warp), lane owns the 4 contiguous dims [4*lane, 4*lane + 4),
// no shared memory, no __syncthreads. q [B, HQ, D] fp16, out [B, HQ, D] fp32; all math is
// fp32 on the CUDA cores. Scales are fp16, as in the book's storage layout.
// HEAD_DIM must be 128; the runtime D argument guards against a mismatched --size D.

#include "decode_common.cuh"

// Four signed int8 in one 32-bit word (byte i = dim 4*lane + i) -> floats.
__device__ __forceinline__ float4 int8x4_to_float4(unsigned w) {
    float4 r;
    r.x = (float)((int)(w << 24) >> 24);
    r.y = (float)((int)(w << 16) >> 24);
    r.z = (float)((int)(w << 8) >> 24);
    r.w = (float)((int)w >> 24);
    return r;
}

// Four signed int4 in one 16-bit word, the shift trick. Packing (reference.py mirrors
// it): dim 2k in the low nibble of byte k, dim 2k+1 in the high nibble, two's complement
// in [-7, 7]. A lane's uint16 holds bytes 2*lane (low) and 2*lane+1 (high), so nibble i
// (bits 4i..4i+3) is dim 4*lane + i: shift it to the top of an int, shift back down
// arithmetically to sign-extend.
__device__ __forceinline__ float4 int4x4_to_float4(unsigned short w) {
    const unsigned x = w;
    float4 r;
    r.x = (float)((int)(x << 28) >> 28);
    r.y = (float)((int)(x << 24) >> 28);
    r.z = (float)((int)(x << 20) >> 28);
    r.w = (float)((int)(x << 16) >> 28);
    return r;
}

// Online-softmax step with the V scale folded into the FMA coefficient:
// o += (p_j * v_s) * v_int, while l accumulates the unscaled p_j.
struct OnlineState {
    float m, l;
    float4 o;
};

__device__ __forceinline__ void online_init(OnlineState& st) {
    st.m = neg_inf();
    st.l = 0.f;
    st.o.x = st.o.y = st.o.z = st.o.w = 0.f;
}

__device__ __forceinline__ void online_step_scaled_v(OnlineState& st, float s_j, float4 v_int,
                                                     float v_s) {
    const float m_new = fmaxf(st.m, s_j);
    const float alpha = expf(st.m - m_new);
    const float p_j = expf(s_j - m_new);
    const float p_scaled = p_j * v_s;                   // fold V scale here
    st.o.x = st.o.x * alpha + p_scaled * v_int.x;
    st.o.y = st.o.y * alpha + p_scaled * v_int.y;
    st.o.z = st.o.z * alpha + p_scaled * v_int.z;
    st.o.w = st.o.w * alpha + p_scaled * v_int.w;
    st.l = st.l * alpha + p_j;
    st.m = m_new;
}

__device__ __forceinline__ float dot4(float4 a, float4 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

__device__ __forceinline__ void store_normalized(float* dst, const OnlineState& st) {
    const float inv = 1.f / st.l;
    float4 r;
    r.x = st.o.x * inv; r.y = st.o.y * inv; r.z = st.o.z * inv; r.w = st.o.w * inv;
    *reinterpret_cast<float4*>(dst) = r;
}

// ---------------------------------------------------------------------------------------
// INT8 KV, per-token scales (Part 4.5-4.6). K_i8, V_i8 [B, HKV, S, D] int8; K_scale,
// V_scale [B, HKV, S] fp16 (one scale per token). Scale folding by linearity:
//   q . k = k_s * sum_d q[d] * k_int[d]        (one multiply after the warp reduce)
//   o    += (p_j * v_s) * v_int                (one multiply before the FMAs)
// Per key a lane loads 4 B of K, 4 B of V and the two per-token scales.
// Book, RTX 4090: 0.713 ms (tied with v3: half the bytes, same chain), chain-bound.
// ---------------------------------------------------------------------------------------
template <int HEAD_DIM>
__global__ void __launch_bounds__(32)
decode_int8_kv(const half_t* __restrict__ q, const signed char* __restrict__ K_i8,
               const signed char* __restrict__ V_i8, const half_t* __restrict__ K_scale,
               const half_t* __restrict__ V_scale, float* __restrict__ out,
               int HKV, int S, int D, float scale) {
    static_assert(HEAD_DIM == 32 * 4, "one warp, 4 dims (one 4-byte load) per lane");
    if (D != HEAD_DIM || blockDim.x != 32) return;
    const int b = blockIdx.x, h = blockIdx.y, HQ = gridDim.y, lane = threadIdx.x;
    const int hk = h / (HQ / HKV);
    const size_t qo = ((size_t)b * HQ + h) * HEAD_DIM + lane * 4;
    const float4 qv = half4_to_float4(*reinterpret_cast<const uint2*>(q + qo));
    const size_t head = (size_t)b * HKV + hk;
    const signed char* Kh = K_i8 + head * S * HEAD_DIM + lane * 4;
    const signed char* Vh = V_i8 + head * S * HEAD_DIM + lane * 4;
    const half_t* Ks = K_scale + head * S;
    const half_t* Vs = V_scale + head * S;

    OnlineState st;
    online_init(st);
    for (int j = 0; j < S; ++j) {
        const float4 v_int = int8x4_to_float4(*reinterpret_cast<const unsigned*>(Vh + (size_t)j * HEAD_DIM));
        const float v_s = h2f(Vs[j]);
        const float4 k_int = int8x4_to_float4(*reinterpret_cast<const unsigned*>(Kh + (size_t)j * HEAD_DIM));
        const float k_s = h2f(Ks[j]);
        const float s_j = warp_sum(dot4(qv, k_int)) * k_s * scale;   // fold K scale here
        online_step_scaled_v(st, s_j, v_int, v_s);
    }
    store_normalized(out + qo, st);
}

// ---------------------------------------------------------------------------------------
// INT4 KIVI (Part 4.8): K per-channel, grouped along the sequence in groups of G tokens;
// V per-token. Packed two values per byte:
//   K_i4, V_i4 [B, HKV, S, D/2] uint8; K_i4_scale [B, HKV, cdiv(S, G), D] fp16;
//   V_i4_scale [B, HKV, S] fp16.
// The K scale depends on d, so it cannot be pulled out of the dot product; but it is
// constant within a group, so the per-group preamble folds it into q once
// (q_scaled[d] = q[d] * k_scale[g, d], 4 multiplies per lane per group) and the inner
// loop runs on the raw int4 values: no per-key K-scale load, no per-key K dequant. The V
// scale is folded into p_j as in INT8. Per key a lane loads 2 B of K, 2 B of V and the
// V scale. Book, RTX 4090: 0.554 ms (1.29x over v3: a shorter chain), chain-bound.
// ---------------------------------------------------------------------------------------
template <int HEAD_DIM>
__global__ void __launch_bounds__(32)
decode_int4_kivi(const half_t* __restrict__ q, const unsigned char* __restrict__ K_i4,
                 const unsigned char* __restrict__ V_i4, const half_t* __restrict__ K_scale,
                 const half_t* __restrict__ V_scale, float* __restrict__ out,
                 int HKV, int S, int D, int G, float scale) {
    static_assert(HEAD_DIM == 32 * 4, "one warp, 4 dims (one 2-byte load) per lane");
    if (D != HEAD_DIM || blockDim.x != 32) return;
    const int b = blockIdx.x, h = blockIdx.y, HQ = gridDim.y, lane = threadIdx.x;
    const int hk = h / (HQ / HKV);
    const int n_groups = (S + G - 1) / G;
    const size_t qo = ((size_t)b * HQ + h) * HEAD_DIM + lane * 4;
    const float4 qv = half4_to_float4(*reinterpret_cast<const uint2*>(q + qo));
    const size_t head = (size_t)b * HKV + hk;
    const unsigned char* Kh = K_i4 + head * S * (HEAD_DIM / 2) + lane * 2;
    const unsigned char* Vh = V_i4 + head * S * (HEAD_DIM / 2) + lane * 2;
    const half_t* Ks = K_scale + head * n_groups * HEAD_DIM + lane * 4;
    const half_t* Vs = V_scale + head * S;

    OnlineState st;
    online_init(st);
    for (int g = 0; g < n_groups; ++g) {
        // Per-group preamble: this lane's 4 K scales, folded into q.
        const float4 ks = half4_to_float4(*reinterpret_cast<const uint2*>(Ks + (size_t)g * HEAD_DIM));
        float4 q_scaled;
        q_scaled.x = qv.x * ks.x;
        q_scaled.y = qv.y * ks.y;
        q_scaled.z = qv.z * ks.z;
        q_scaled.w = qv.w * ks.w;
        const int j1 = imin(S, (g + 1) * G);
        for (int j = g * G; j < j1; ++j) {
            const float4 v_int = int4x4_to_float4(
                *reinterpret_cast<const unsigned short*>(Vh + (size_t)j * (HEAD_DIM / 2)));
            const float v_s = h2f(Vs[j]);
            const float4 k_int = int4x4_to_float4(
                *reinterpret_cast<const unsigned short*>(Kh + (size_t)j * (HEAD_DIM / 2)));
            const float s_j = warp_sum(dot4(q_scaled, k_int)) * scale;   // K scale already in q
            online_step_scaled_v(st, s_j, v_int, v_s);
        }
    }
    store_normalized(out + qo, st);
}
