// v6: rooflint's own decode-attention kernel, reached from v3 by following its moves on
// the H200 (kernel.yaml records each step, its prediction and what it measured).
//
//   v3 -> v4  "grid under one wave": split the keys over more blocks (book's FlashDecoding)
//   v4 -> v6a "more parallelism" again: 4-warp blocks over V6_SPLITS key chunks, the
//             warps combined in shared memory, one partial record per block
//   v6a -> v6b "exposed memory latency": more bytes in flight per warp: 16-byte loads
//             (a half-warp reads one 256-byte key row) and UNROLL key pairs loaded
//             before any of them is used, with one online-softmax update per tile
//   v6b -> v6 read K and V once per GQA group: one warp serves the HQ/HKV query heads
//             that share a KV head, so the L2 -> SM traffic drops by that factor and
//             the conversions and loads are shared
//
// Partial kernel: grid (B * HQ / HEADS, SPLITS), block 32 * WARPS. Block (x, z) owns
// HEADS consecutive query heads of one batch (all reading the same KV head) and keys
// [z * chunk, min(S, (z + 1) * chunk)), chunk = cdiv(S, SPLITS). Within a block, warp w
// takes key tiles w, w + WARPS, ... of 2 * UNROLL keys: lanes 0-15 the even keys, lanes
// 16-31 the odd ones, lane % 16 owning dims [8 * (lane % 16), +8) as one 16-byte load.
// The softmax runs in base 2 (q is pre-scaled by scale * log2(e)); the partial records
// hold m in natural-log units so decode_v4_combine (decode_fp16.cu's layout: o[0, D),
// m at D, l at D + 1) finishes the job as a second launch.

#include "decode_common.cuh"
#include "decode_combine.cuh"   // decode_v4_combine: the second launch

namespace v6 {

constexpr float LOG2E = 1.4426950408889634f;
constexpr float LN2 = 0.6931471805599453f;

// Eight fp16 values (one 16-byte load) -> eight floats.
__device__ __forceinline__ void half8_to_float8(uint4 u, float* f) {
    const float4 a = half4_to_float4(make_uint2(u.x, u.y));
    const float4 b = half4_to_float4(make_uint2(u.z, u.w));
    f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w;
    f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
}

// Sum over the 16 lanes of a half-warp (each half keeps its own sum).
__device__ __forceinline__ float half_warp_sum(float x) {
#pragma unroll
    for (int offset = 8; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

__device__ __forceinline__ float exp2_or_zero(float x) {  // exp2(-inf) = 0, spelled out
    return x == neg_inf() ? 0.f : exp2f(x);
}

}  // namespace v6

template <int HEAD_DIM, int HEADS, int UNROLL, int WARPS>
__global__ void __launch_bounds__(32 * WARPS)
decode_v6_partial(const half_t* __restrict__ q, const half_t* __restrict__ K,
                  const half_t* __restrict__ V, float* __restrict__ partials,
                  int HQ, int HKV, int S, int D, float scale) {
    static_assert(HEAD_DIM == 16 * 8, "a half-warp covers one row, 8 dims per lane");
    constexpr int TILE = 2 * UNROLL;                       // keys per warp per step
    __shared__ float s_o[WARPS][HEADS][HEAD_DIM];
    __shared__ float s_ml[WARPS][HEADS][2];
    if (D != HEAD_DIM || blockDim.x != 32 * WARPS || (HQ / HKV) % HEADS != 0) return;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int half = lane >> 4, dim0 = (lane & 15) * 8;
    const int groups_per_batch = HQ / HEADS;
    const int b = blockIdx.x / groups_per_batch;
    const int h0 = (blockIdx.x % groups_per_batch) * HEADS;  // first query head served
    const int hk = h0 / (HQ / HKV);
    const int z = blockIdx.y, SPLITS = gridDim.y;
    const int chunk = (S + SPLITS - 1) / SPLITS;
    const int j0 = z * chunk, j1 = imin(S, j0 + chunk);

    float qf[HEADS][8];                                    // q * scale * log2(e)
#pragma unroll
    for (int g = 0; g < HEADS; ++g) {
        const size_t qo = ((size_t)b * HQ + h0 + g) * HEAD_DIM + dim0;
        v6::half8_to_float8(*reinterpret_cast<const uint4*>(q + qo), qf[g]);
#pragma unroll
        for (int i = 0; i < 8; ++i) qf[g][i] *= scale * v6::LOG2E;
    }
    const size_t kv0 = ((size_t)b * HKV + hk) * S * HEAD_DIM + dim0;
    const half_t* Kh = K + kv0;
    const half_t* Vh = V + kv0;

    float m[HEADS], l[HEADS], o[HEADS][8];                 // base-2 online softmax state
#pragma unroll
    for (int g = 0; g < HEADS; ++g) {
        m[g] = neg_inf();
        l[g] = 0.f;
#pragma unroll
        for (int i = 0; i < 8; ++i) o[g][i] = 0.f;
    }

    for (int t0 = j0 + warp * TILE; t0 < j1; t0 += WARPS * TILE) {
        uint4 kr[UNROLL], vr[UNROLL];                      // every load issued up front
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int j = t0 + 2 * u + half;
            const bool live = j < j1;
            kr[u] = live ? *reinterpret_cast<const uint4*>(Kh + (size_t)j * HEAD_DIM) : make_uint4(0, 0, 0, 0);
            vr[u] = live ? *reinterpret_cast<const uint4*>(Vh + (size_t)j * HEAD_DIM) : make_uint4(0, 0, 0, 0);
        }
        float s[HEADS][UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float k[8];
            v6::half8_to_float8(kr[u], k);
            const bool live = t0 + 2 * u + half < j1;
#pragma unroll
            for (int g = 0; g < HEADS; ++g) {
                float acc = 0.f;
#pragma unroll
                for (int i = 0; i < 8; ++i) acc += qf[g][i] * k[i];
                acc = v6::half_warp_sum(acc);
                s[g][u] = live ? acc : neg_inf();
            }
        }
#pragma unroll
        for (int g = 0; g < HEADS; ++g) {
            float tile_max = s[g][0];
#pragma unroll
            for (int u = 1; u < UNROLL; ++u) tile_max = fmaxf(tile_max, s[g][u]);
            tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 16));
            const float m_new = fmaxf(m[g], tile_max);     // finite: key t0 is live
            const float alpha = v6::exp2_or_zero(m[g] - m_new);
            l[g] *= alpha;
#pragma unroll
            for (int i = 0; i < 8; ++i) o[g][i] *= alpha;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) s[g][u] = v6::exp2_or_zero(s[g][u] - m_new);
            m[g] = m_new;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float v[8];
            v6::half8_to_float8(vr[u], v);
#pragma unroll
            for (int g = 0; g < HEADS; ++g) {
                l[g] += s[g][u];
#pragma unroll
                for (int i = 0; i < 8; ++i) o[g][i] += s[g][u] * v[i];
            }
        }
    }

    // The two half-warps share m; add their l and o, then combine the warps.
#pragma unroll
    for (int g = 0; g < HEADS; ++g) {
        l[g] += __shfl_xor_sync(0xffffffffu, l[g], 16);
#pragma unroll
        for (int i = 0; i < 8; ++i) o[g][i] += __shfl_xor_sync(0xffffffffu, o[g][i], 16);
        if (half == 0) {
#pragma unroll
            for (int i = 0; i < 8; ++i) s_o[warp][g][dim0 + i] = o[g][i];
            if (lane == 0) { s_ml[warp][g][0] = m[g]; s_ml[warp][g][1] = l[g]; }
        }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < HEADS * HEAD_DIM; idx += blockDim.x) {
        const int g = idx / HEAD_DIM, d = idx % HEAD_DIM;
        float m_all = neg_inf();
#pragma unroll
        for (int w = 0; w < WARPS; ++w) m_all = fmaxf(m_all, s_ml[w][g][0]);
        float l_all = 0.f, o_all = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            const float weight = m_all == neg_inf() ? 0.f : v6::exp2_or_zero(s_ml[w][g][0] - m_all);
            l_all += weight * s_ml[w][g][1];
            o_all += weight * s_o[w][g][d];
        }
        float* rec = partials + (((size_t)b * HQ + h0 + g) * SPLITS + z) * (HEAD_DIM + 4);
        rec[d] = o_all;                                    // unnormalized
        if (d == 0) {
            rec[HEAD_DIM] = m_all * v6::LN2;               // natural-log units; -inf if empty
            rec[HEAD_DIM + 1] = l_all;
        }
    }
}
