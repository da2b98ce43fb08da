// The split-K combine (second launch of v4 and v6): grid (B, HQ), block D threads.
// partials[(b*HQ + h)*SPLITS + z][0 .. D+4) holds split z's unnormalized o[0, D), its
// max m (natural log units, -inf for an empty split) at D and its sum l at D+1; the
// combine rescales the SPLITS records to their common max and normalizes.
#pragma once

#include "decode_common.cuh"

extern "C" __global__ void decode_v4_combine(const float* __restrict__ partials,
                                             float* __restrict__ out, int SPLITS) {
    const int b = blockIdx.x, h = blockIdx.y, HQ = gridDim.y;
    const int D = blockDim.x, d = threadIdx.x, stride = D + 4;
    const float* rec = partials + ((size_t)b * HQ + h) * SPLITS * stride;
    float m = neg_inf();
    for (int z = 0; z < SPLITS; ++z) m = fmaxf(m, rec[z * stride + D]);
    float l = 0.f, o = 0.f;
    for (int z = 0; z < SPLITS; ++z) {
        const float m_z = rec[z * stride + D];
        const float w = m_z == neg_inf() ? 0.f : expf(m_z - m);  // empty split: no weight
        l += w * rec[z * stride + D + 1];
        o += w * rec[z * stride + d];
    }
    out[((size_t)b * HQ + h) * D + d] = o / l;
}
