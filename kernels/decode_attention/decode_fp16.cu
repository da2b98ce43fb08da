// Decode attention over an fp16 KV cache: the kernel book's Part 3 journey, v0 to v5.
//
// One query token per (batch b, query head h):
//   s[j] = scale * dot(q[b, h, :], K[b, kv(h), j, :])      j = 0 .. S-1
//   p    = softmax(s)
//   out[b, h, d] = sum_j p[j] * V[b, kv(h), j, d]
// with GQA: kv(h) = h / (HQ / HKV) (Llama-3-8B: HQ = 32, HKV = 8, D = 128, S = 4096).
//
// Layouts (row-major): q [B, HQ, D] fp16, K and V [B, HKV, S, D] fp16, out [B, HQ, D]
// fp32. All math is fp32 on the CUDA cores (fp16 inputs converted on load, fp32
// accumulators, fp32 softmax). The book writes an fp16 output; rooflint checks an fp32
// one, which also keeps fp16 output rounding out of the correctness check.
//
// fp16 values are handled as raw 16-bit words converted with one cvt instruction, so the
// file needs no header (NVRTC with CuPy's default include path, or nvcc).
//
// Grid for every kernel: (B, HQ) (v4's partial kernel adds SPLITS as gridDim.z); gridDim.y
// is HQ, so the kernels do not take it as an argument.

#include "decode_common.cuh"

// Block-wide reduction used by v0's softmax phase: warp reduce, one slot per warp in
// shared memory, every warp re-reduces the slots. The trailing sync frees `slots` for
// the next call.
template <bool MAX>
__device__ __forceinline__ float block_reduce(float x, float* slots) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const float identity = MAX ? neg_inf() : 0.f;
    x = MAX ? warp_max(x) : warp_sum(x);
    if (lane == 0) slots[warp] = x;
    __syncthreads();
    float r = lane < nwarps ? slots[lane] : identity;
    r = MAX ? warp_max(r) : warp_sum(r);
    __syncthreads();
    return r;
}

// ---------------------------------------------------------------------------------------
// v0: two-pass softmax. Grid (B, HQ), block D threads (thread d owns output lane d).
// Dynamic shared memory: the S fp32 scores (16 KiB at S = 4096).
// Phase 1 costs two __syncthreads() per key (gather the warp partials, then publish the
// score). Book, RTX 4090: 1.669 ms, chain-bound (the syncs).
// ---------------------------------------------------------------------------------------
extern "C" __global__ void decode_v0_two_pass(const half_t* __restrict__ q,
                                              const half_t* __restrict__ K,
                                              const half_t* __restrict__ V,
                                              float* __restrict__ out,
                                              int HKV, int S, float scale) {
    extern __shared__ float s_smem[];    // [S] scores, then exp(s - m)
    __shared__ float reduce_smem[32];    // one slot per warp
    const int b = blockIdx.x, h = blockIdx.y, HQ = gridDim.y;
    const int D = blockDim.x, d = threadIdx.x;
    const int lane = d & 31, warp = d >> 5, nwarps = D >> 5;
    const int hk = h / (HQ / HKV);
    const float qd = h2f(q[((size_t)b * HQ + h) * D + d]);
    const half_t* Kh = K + ((size_t)b * HKV + hk) * S * D + d;
    const half_t* Vh = V + ((size_t)b * HKV + hk) * S * D + d;

    // Phase 1: scores, one block-wide dot product per key.
    for (int j = 0; j < S; ++j) {
        float partial = qd * h2f(Kh[(size_t)j * D]);
        partial = warp_sum(partial);
        if (lane == 0) reduce_smem[warp] = partial;
        __syncthreads();                                  // sync 1: gather warp partials
        if (warp == 0) {
            float r = lane < nwarps ? reduce_smem[lane] : 0.f;
            r = warp_sum(r);
            if (lane == 0) s_smem[j] = r * scale;
        }
        __syncthreads();                                  // sync 2: publish s[j]
    }

    // Phase 2: softmax statistics. s_smem[j] := exp(s[j] - m); l = sum.
    float m = neg_inf();
    for (int j = d; j < S; j += D) m = fmaxf(m, s_smem[j]);
    m = block_reduce<true>(m, reduce_smem);
    float lsum = 0.f;
    for (int j = d; j < S; j += D) {
        const float e = expf(s_smem[j] - m);
        s_smem[j] = e;
        lsum += e;
    }
    const float l = block_reduce<false>(lsum, reduce_smem);  // its syncs publish s_smem
    const float inv_l = 1.f / l;

    // Phase 3: output. No syncs in this loop, so the V loads pipeline freely.
    float o = 0.f;
    for (int j = 0; j < S; ++j) {
        const float p = s_smem[j] * inv_l;
        o += p * h2f(Vh[(size_t)j * D]);
    }
    out[((size_t)b * HQ + h) * D + d] = o;
}

// ---------------------------------------------------------------------------------------
// v1: online softmax (Milakov-Gimelshein) in v0's block geometry: grid (B, HQ), block D.
// Still two syncs per key (gather partials; broadcast s_j through shared memory), then
// every thread runs the same scalar recurrence in lockstep.
// PREFETCH_V = false is the naive port: the V[j] load sits after both syncs, and since
// __syncthreads() is a load barrier nvcc cannot hoist it, so its latency is on the
// per-key chain. Book, RTX 4090: 2.078 ms (a regression), chain-bound.
// PREFETCH_V = true is the book's fix: V[j] is loaded at the top of the iteration, before
// any sync, and consumed at the bottom. Book, RTX 4090: 1.637 ms, chain-bound.
// V is read with an explicit ld.global (load_v_barriered) in both versions: with
// const __restrict__ the compiler would emit the read-only ld.global.nc, which it could
// in principle move across bar.sync; a plain weak global load it may not. So the only
// difference between the two kernels is where the source puts the V load.
// ---------------------------------------------------------------------------------------
__device__ __forceinline__ float load_v_barriered(const half_t* p) {
    half_t h;
    asm volatile("ld.global.u16 %0, [%1];" : "=h"(h) : "l"(p));
    return h2f(h);
}

template <bool PREFETCH_V>
__device__ __forceinline__ void decode_v1_body(const half_t* __restrict__ q,
                                               const half_t* __restrict__ K,
                                               const half_t* __restrict__ V,
                                               float* __restrict__ out,
                                               int HKV, int S, float scale) {
    __shared__ float reduce_smem[32];
    __shared__ float s_bcast;
    const int b = blockIdx.x, h = blockIdx.y, HQ = gridDim.y;
    const int D = blockDim.x, d = threadIdx.x;
    const int lane = d & 31, warp = d >> 5, nwarps = D >> 5;
    const int hk = h / (HQ / HKV);
    const float qd = h2f(q[((size_t)b * HQ + h) * D + d]);
    const half_t* Kh = K + ((size_t)b * HKV + hk) * S * D + d;
    const half_t* Vh = V + ((size_t)b * HKV + hk) * S * D + d;

    float m_state = neg_inf(), l_state = 0.f, o_state = 0.f;
    for (int j = 0; j < S; ++j) {
        float v_j = 0.f;
        if (PREFETCH_V) v_j = load_v_barriered(Vh + (size_t)j * D);  // issued now, used at the bottom
        float partial = qd * h2f(Kh[(size_t)j * D]);
        partial = warp_sum(partial);
        if (lane == 0) reduce_smem[warp] = partial;
        __syncthreads();                                  // sync 1: gather warp partials
        if (warp == 0) {
            float r = lane < nwarps ? reduce_smem[lane] : 0.f;
            r = warp_sum(r);
            if (lane == 0) s_bcast = r * scale;
        }
        __syncthreads();                                  // sync 2: broadcast s_j
        const float s_j = s_bcast;
        const float m_new = fmaxf(m_state, s_j);
        const float alpha = expf(m_state - m_new);
        const float p_j = expf(s_j - m_new);
        if (!PREFETCH_V) v_j = load_v_barriered(Vh + (size_t)j * D); // naive: behind the syncs
        o_state = o_state * alpha + p_j * v_j;
        l_state = l_state * alpha + p_j;
        m_state = m_new;
    }
    out[((size_t)b * HQ + h) * D + d] = o_state / l_state;
}

extern "C" __global__ void decode_v1_online_naive(const half_t* __restrict__ q,
                                                  const half_t* __restrict__ K,
                                                  const half_t* __restrict__ V,
                                                  float* __restrict__ out,
                                                  int HKV, int S, float scale) {
    decode_v1_body<false>(q, K, V, out, HKV, S, scale);
}

extern "C" __global__ void decode_v1_prefetch(const half_t* __restrict__ q,
                                              const half_t* __restrict__ K,
                                              const half_t* __restrict__ V,
                                              float* __restrict__ out,
                                              int HKV, int S, float scale) {
    decode_v1_body<true>(q, K, V, out, HKV, S, scale);
}

// ---------------------------------------------------------------------------------------
// v2: single-sync block reduce. Grid (B, HQ), block D threads.
// (A) every warp reads all the warp partials and finishes the reduction itself (no
// broadcast slot, no second sync); (B) reduce_smem is double-buffered by j & 1, so the
// write of iteration j+2 into a slot is separated from the reads of iteration j by the
// sync of iteration j+1. One __syncthreads() per key. V prefetched as in v1.
// Book, RTX 4090: 1.069 ms, chain-bound.
// ---------------------------------------------------------------------------------------
extern "C" __global__ void decode_v2_single_sync(const half_t* __restrict__ q,
                                                 const half_t* __restrict__ K,
                                                 const half_t* __restrict__ V,
                                                 float* __restrict__ out,
                                                 int HKV, int S, float scale) {
    __shared__ float reduce_smem[2][32];  // 2 slots x one entry per warp
    const int b = blockIdx.x, h = blockIdx.y, HQ = gridDim.y;
    const int D = blockDim.x, d = threadIdx.x;
    const int lane = d & 31, warp = d >> 5, nwarps = D >> 5;
    const int hk = h / (HQ / HKV);
    const float qd = h2f(q[((size_t)b * HQ + h) * D + d]);
    const half_t* Kh = K + ((size_t)b * HKV + hk) * S * D + d;
    const half_t* Vh = V + ((size_t)b * HKV + hk) * S * D + d;

    float m_state = neg_inf(), l_state = 0.f, o_state = 0.f;
    for (int j = 0; j < S; ++j) {
        const float v_j = h2f(Vh[(size_t)j * D]);         // prefetch (v1 lesson)
        float partial = qd * h2f(Kh[(size_t)j * D]);
        partial = warp_sum(partial);
        if (lane == 0) reduce_smem[j & 1][warp] = partial;
        __syncthreads();                                  // the only sync per key
        float r = lane < nwarps ? reduce_smem[j & 1][lane] : 0.f;
        r = warp_sum(r);                                  // every warp, redundantly
        const float s_j = r * scale;
        const float m_new = fmaxf(m_state, s_j);
        const float alpha = expf(m_state - m_new);
        const float p_j = expf(s_j - m_new);
        o_state = o_state * alpha + p_j * v_j;
        l_state = l_state * alpha + p_j;
        m_state = m_new;
    }
    out[((size_t)b * HQ + h) * D + d] = o_state / l_state;
}

// ---------------------------------------------------------------------------------------
// Single-warp kernels (v3, v4, v5): block = 32 threads, lane owns the 4 contiguous dims
// [4*lane, 4*lane + 4), loaded as one 8-byte uint2 (LDG.E.64). HEAD_DIM must be 128
// (= 32 lanes x 4); the runtime D argument guards against a --size D override that the
// compiled-in HEAD_DIM does not match (the kernel then writes nothing and the check
// fails on the NaN-poisoned output).
// ---------------------------------------------------------------------------------------

// Online-softmax state of one lane: m, l and 4 output lanes.
struct OnlineState {
    float m, l;
    float4 o;
};

__device__ __forceinline__ void online_init(OnlineState& st) {
    st.m = neg_inf();
    st.l = 0.f;
    st.o.x = st.o.y = st.o.z = st.o.w = 0.f;
}

// One key: s_j (already reduced and scaled, same in every lane) and this lane's V[j].
__device__ __forceinline__ void online_step(OnlineState& st, float s_j, float4 v) {
    const float m_new = fmaxf(st.m, s_j);
    const float alpha = expf(st.m - m_new);
    const float p_j = expf(s_j - m_new);
    st.o.x = st.o.x * alpha + p_j * v.x;
    st.o.y = st.o.y * alpha + p_j * v.y;
    st.o.z = st.o.z * alpha + p_j * v.z;
    st.o.w = st.o.w * alpha + p_j * v.w;
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

// v3: vectorized loads + single-warp blocks. Grid (B, HQ), block 32. No __syncthreads,
// no shared memory: warp shuffles only. Book, RTX 4090: 0.713 ms, chain-bound.
template <int HEAD_DIM>
__global__ void __launch_bounds__(32)
decode_v3_vectorized(const half_t* __restrict__ q, const half_t* __restrict__ K,
                     const half_t* __restrict__ V, float* __restrict__ out,
                     int HKV, int S, int D, float scale) {
    static_assert(HEAD_DIM == 32 * 4, "one warp, 4 dims (one 8-byte load) per lane");
    if (D != HEAD_DIM || blockDim.x != 32) return;
    const int b = blockIdx.x, h = blockIdx.y, HQ = gridDim.y, lane = threadIdx.x;
    const int hk = h / (HQ / HKV);
    const size_t qo = ((size_t)b * HQ + h) * HEAD_DIM + lane * 4;
    const float4 qv = half4_to_float4(*reinterpret_cast<const uint2*>(q + qo));
    const half_t* Kh = K + ((size_t)b * HKV + hk) * S * HEAD_DIM + lane * 4;
    const half_t* Vh = V + ((size_t)b * HKV + hk) * S * HEAD_DIM + lane * 4;

    OnlineState st;
    online_init(st);
    for (int j = 0; j < S; ++j) {
        const float4 v = half4_to_float4(*reinterpret_cast<const uint2*>(Vh + (size_t)j * HEAD_DIM));
        const float4 k = half4_to_float4(*reinterpret_cast<const uint2*>(Kh + (size_t)j * HEAD_DIM));
        const float s_j = warp_sum(dot4(qv, k)) * scale;   // single warp: no sync
        online_step(st, s_j, v);
    }
    store_normalized(out + qo, st);
}

// ---------------------------------------------------------------------------------------
// v4: split-K (FlashDecoding), two launches.
// (1) decode_v4_partial<128>: grid (B, HQ, SPLITS), block 32; split z runs v3's loop over
//     keys [z*chunk, min(S, (z+1)*chunk)), chunk = cdiv(S, SPLITS), and writes its
//     unnormalized partial (o[0..D), m, l) to partials[(b*HQ + h)*SPLITS + z][0 .. D+4):
//     o at [0, D), m at D, l at D+1, two pad floats so every record stays 16-byte
//     aligned for the float4 stores.
// (2) decode_v4_combine: grid (B, HQ), block D threads; rescales the SPLITS partials to
//     their common max and normalizes.
// Book, RTX 4090: 0.802 ms (a regression from v3), chain-bound: more SMs did not help.
// ---------------------------------------------------------------------------------------
template <int HEAD_DIM>
__global__ void __launch_bounds__(32)
decode_v4_partial(const half_t* __restrict__ q, const half_t* __restrict__ K,
                  const half_t* __restrict__ V, float* __restrict__ partials,
                  int HKV, int S, int D, float scale) {
    static_assert(HEAD_DIM == 32 * 4, "one warp, 4 dims (one 8-byte load) per lane");
    if (D != HEAD_DIM || blockDim.x != 32) return;
    const int b = blockIdx.x, h = blockIdx.y, z = blockIdx.z;
    const int HQ = gridDim.y, SPLITS = gridDim.z, lane = threadIdx.x;
    const int hk = h / (HQ / HKV);
    const int chunk = (S + SPLITS - 1) / SPLITS;
    const int j0 = z * chunk, j1 = imin(S, j0 + chunk);
    const float4 qv = half4_to_float4(
        *reinterpret_cast<const uint2*>(q + ((size_t)b * HQ + h) * HEAD_DIM + lane * 4));
    const half_t* Kh = K + ((size_t)b * HKV + hk) * S * HEAD_DIM + lane * 4;
    const half_t* Vh = V + ((size_t)b * HKV + hk) * S * HEAD_DIM + lane * 4;

    OnlineState st;
    online_init(st);
    for (int j = j0; j < j1; ++j) {
        const float4 v = half4_to_float4(*reinterpret_cast<const uint2*>(Vh + (size_t)j * HEAD_DIM));
        const float4 k = half4_to_float4(*reinterpret_cast<const uint2*>(Kh + (size_t)j * HEAD_DIM));
        const float s_j = warp_sum(dot4(qv, k)) * scale;
        online_step(st, s_j, v);
    }
    float* rec = partials + (((size_t)b * HQ + h) * SPLITS + z) * (HEAD_DIM + 4);
    *reinterpret_cast<float4*>(rec + lane * 4) = st.o;   // unnormalized
    if (lane == 0) {
        rec[HEAD_DIM] = st.m;       // -inf (and l = 0) for an empty split
        rec[HEAD_DIM + 1] = st.l;
    }
}

#include "decode_combine.cuh"   // decode_v4_combine, shared with decode_v6.cu

// ---------------------------------------------------------------------------------------
// v5: v3 with K and V staged through shared memory by cp.async, double-buffered: while
// the warp consumes tile t (TILE keys of K and V) from stage t & 1, the copies of tile
// t + 1 are in flight into the other stage. Grid (B, HQ), block 32; static shared memory
// 2 stages x 2 tensors x TILE x HEAD_DIM x 2 B (16 KiB at TILE = 16).
// One tile of K (or V) for one (b, kv head) is TILE contiguous rows, i.e. one contiguous
// run of TILE*HEAD_DIM*2 bytes, copied in 16-byte pieces (cp.async.cg: L2 only, the data
// is streamed once). Every key now goes HBM -> shared -> register: the extra hop.
// Book, RTX 4090: 0.760 ms (a regression from v3), chain-bound.
// ---------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (unsigned)a;
}

__device__ __forceinline__ void cp_async_16(void* dst_smem, const void* src_gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                 :: "r"(smem_addr(dst_smem)), "l"(src_gmem) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Wait until at most one group (the newest) is still pending.
__device__ __forceinline__ void cp_async_wait_1() {
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}

template <int HEAD_DIM, int TILE>
__global__ void __launch_bounds__(32)
decode_v5_cp_async(const half_t* __restrict__ q, const half_t* __restrict__ K,
                   const half_t* __restrict__ V, float* __restrict__ out,
                   int HKV, int S, int D, float scale) {
    static_assert(HEAD_DIM == 32 * 4, "one warp, 4 dims (one 8-byte load) per lane");
    constexpr int ROW_CHUNKS = HEAD_DIM * 2 / 16;          // 16-byte pieces per row
    __shared__ __align__(16) half_t sK[2][TILE * HEAD_DIM];
    __shared__ __align__(16) half_t sV[2][TILE * HEAD_DIM];
    if (D != HEAD_DIM || blockDim.x != 32) return;
    const int b = blockIdx.x, h = blockIdx.y, HQ = gridDim.y, lane = threadIdx.x;
    const int hk = h / (HQ / HKV);
    const size_t qo = ((size_t)b * HQ + h) * HEAD_DIM + lane * 4;
    const float4 qv = half4_to_float4(*reinterpret_cast<const uint2*>(q + qo));
    const half_t* Kh = K + ((size_t)b * HKV + hk) * S * HEAD_DIM;
    const half_t* Vh = V + ((size_t)b * HKV + hk) * S * HEAD_DIM;
    const int ntiles = (S + TILE - 1) / TILE;

    auto issue = [&](int t, int stage) {
        const int rows = imin(TILE, S - t * TILE);
        const char* gk = reinterpret_cast<const char*>(Kh + (size_t)t * TILE * HEAD_DIM);
        const char* gv = reinterpret_cast<const char*>(Vh + (size_t)t * TILE * HEAD_DIM);
        char* sk = reinterpret_cast<char*>(sK[stage]);
        char* sv = reinterpret_cast<char*>(sV[stage]);
        for (int c = lane; c < rows * ROW_CHUNKS; c += 32) {
            cp_async_16(sk + c * 16, gk + (size_t)c * 16);
            cp_async_16(sv + c * 16, gv + (size_t)c * 16);
        }
    };

    OnlineState st;
    online_init(st);
    issue(0, 0);
    cp_async_commit();
    for (int t = 0; t < ntiles; ++t) {
        const int stage = t & 1;
        if (t + 1 < ntiles) issue(t + 1, stage ^ 1);       // next tile into the other stage
        cp_async_commit();                                 // (an empty group on the last tile)
        cp_async_wait_1();                                 // this lane's copies of tile t landed
        __syncwarp();                                      // ... and every other lane's
        const int rows = imin(TILE, S - t * TILE);
        for (int r = 0; r < rows; ++r) {
            const float4 v = half4_to_float4(
                *reinterpret_cast<const uint2*>(&sV[stage][r * HEAD_DIM + lane * 4]));
            const float4 k = half4_to_float4(
                *reinterpret_cast<const uint2*>(&sK[stage][r * HEAD_DIM + lane * 4]));
            const float s_j = warp_sum(dot4(qv, k)) * scale;
            online_step(st, s_j, v);
        }
        __syncwarp();                                      // stage free before it is refilled
    }
    store_normalized(out + qo, st);
}
