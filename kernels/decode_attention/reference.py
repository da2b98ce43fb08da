"""Reference, derived inputs and the PyTorch baseline for the decode_attention family.

Shapes (the manifest flattens [B, HKV, ...] to [B*HKV, ...] since buffers have at most
three dimensions): q [B, HQ, D] fp16, K and V [B*HKV, S, D] fp16, out [B, HQ, D] fp32.
Query head h reads KV head h // (HQ // HKV).

The quantized variants are checked against attention over the DEQUANTIZED K and V (the
stored integers times the stored fp16 scales), so the check measures the kernel, not
the quantization error.
"""

import numpy as np

INT8_QMAX = 127
INT4_QMAX = 7


def _dims(params):
    return (int(params["B"]), int(params["HQ"]), int(params["HKV"]), int(params["S"]),
            int(params["D"]))


def _attend(q, K, V, params):
    """softmax(q K^T / sqrt(D)) V in float64; q [B, HQ, D], K and V [B*HKV, S, D]."""
    B, HQ, HKV, S, D = _dims(params)
    R = HQ // HKV
    qg = np.asarray(q, dtype=np.float64).reshape(B, HKV, R, D)
    Kg = np.asarray(K, dtype=np.float64).reshape(B, HKV, S, D)
    Vg = np.asarray(V, dtype=np.float64).reshape(B, HKV, S, D)
    scores = np.matmul(qg, Kg.transpose(0, 1, 3, 2)) / np.sqrt(D)    # [B, HKV, R, S]
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return np.matmul(p, Vg).reshape(B, HQ, D)                         # [B, HKV, R, D]


def attention(bufs, params):
    """fp16 q, K, V -> float64 attention output."""
    return {"out": _attend(bufs["q"], bufs["K"], bufs["V"], params)}


# -- quantization (prepare) -----------------------------------------------------------

def _symmetric(x, axis, qmax):
    """Symmetric quantization of float32 x with one scale per slice along `axis`.

    The scale is rounded to fp16 (the stored dtype) before quantizing, so the stored
    integers and the stored scale are consistent; values are clamped to [-qmax, qmax].
    """
    absmax = np.abs(x).max(axis=axis, keepdims=True)
    scale = (absmax / qmax).astype(np.float16)
    s = scale.astype(np.float32)
    s = np.where(s > 0, s, np.float32(1.0))
    ints = np.clip(np.rint(x / s), -qmax, qmax).astype(np.int8)
    return ints, scale


def pack_int4(ints):
    """[..., D] int values in [-7, 7] -> [..., D/2] uint8: dim 2k in the low nibble of
    byte k, dim 2k+1 in the high nibble, two's complement 4-bit."""
    nib = (ints.astype(np.int16) & 0xF).astype(np.uint8)
    return (nib[..., 0::2] | (nib[..., 1::2] << 4)).astype(np.uint8)


def unpack_int4(packed):
    """Inverse of pack_int4: [..., D/2] uint8 -> [..., D] int8."""
    lo = (packed & 0xF).astype(np.int8)
    hi = (packed >> 4).astype(np.int8)
    lo = np.where(lo >= 8, lo - 16, lo).astype(np.int8)
    hi = np.where(hi >= 8, hi - 16, hi).astype(np.int8)
    out = np.empty(packed.shape[:-1] + (2 * packed.shape[-1],), dtype=np.int8)
    out[..., 0::2] = lo
    out[..., 1::2] = hi
    return out


def _kivi_k(K, G):
    """K [BH, S, D] float32 -> int4 values [BH, S, D] and fp16 scales [BH, cdiv(S, G), D]:
    one scale per (group of G tokens, channel); a partial last group is padded with 0."""
    BH, S, D = K.shape
    n_groups = -(-S // G)
    padded = np.zeros((BH, n_groups * G, D), dtype=np.float32)
    padded[:, :S] = K
    ints, scale = _symmetric(padded.reshape(BH, n_groups, G, D), axis=2, qmax=INT4_QMAX)
    return ints.reshape(BH, n_groups * G, D)[:, :S], scale.reshape(BH, n_groups, D)


def quantize(bufs, params):
    """INT8 per-token K/V and INT4 KIVI K/V (packed) with fp16 scales, from fp16 K and V."""
    K = bufs["K"].astype(np.float32)
    V = bufs["V"].astype(np.float32)
    G = int(params["G"])
    K_i8, K_scale = _symmetric(K, axis=-1, qmax=INT8_QMAX)
    V_i8, V_scale = _symmetric(V, axis=-1, qmax=INT8_QMAX)
    K_i4, K_i4_scale = _kivi_k(K, G)
    V_i4, V_i4_scale = _symmetric(V, axis=-1, qmax=INT4_QMAX)
    return {
        "K_i8": K_i8, "V_i8": V_i8,
        "K_scale": K_scale[..., 0], "V_scale": V_scale[..., 0],
        "K_i4": pack_int4(K_i4), "V_i4": pack_int4(V_i4),
        "K_i4_scale": K_i4_scale, "V_i4_scale": V_i4_scale[..., 0],
    }


# -- references over the dequantized caches --------------------------------------------

def dequant_int8(bufs):
    K = bufs["K_i8"].astype(np.float64) * bufs["K_scale"].astype(np.float64)[..., None]
    V = bufs["V_i8"].astype(np.float64) * bufs["V_scale"].astype(np.float64)[..., None]
    return K, V


def dequant_int4(bufs, params):
    S, G = int(params["S"]), int(params["G"])
    k_scale = np.repeat(bufs["K_i4_scale"].astype(np.float64), G, axis=1)[:, :S]  # [BH, S, D]
    K = unpack_int4(bufs["K_i4"]).astype(np.float64) * k_scale
    V = unpack_int4(bufs["V_i4"]).astype(np.float64) * \
        bufs["V_i4_scale"].astype(np.float64)[..., None]
    return K, V


def attention_int8(bufs, params):
    K, V = dequant_int8(bufs)
    return {"out": _attend(bufs["q"], K, V, params)}


def attention_int4(bufs, params):
    K, V = dequant_int4(bufs, params)
    return {"out": _attend(bufs["q"], K, V, params)}


# -- library baseline -------------------------------------------------------------------

_TORCH_VIEWS = {}


def sdpa(xp, bufs, params):
    """PyTorch SDPA (enable_gqa); the fp16 result copied into the fp32 out.

    rooflint calls it with PyTorch's current stream set to its timed stream, so the
    launches land there; without torch the ImportError makes rooflint mark the row
    skipped. The torch views of the CuPy buffers (zero copy) are made once per buffer set,
    so timed calls pay only the SDPA call and the fp16 -> fp32 copy.
    """
    import torch
    import torch.nn.functional as F

    B, HQ, HKV, S, D = _dims(params)
    key = (B, HQ, HKV, S, D, *(bufs[n].data.ptr for n in ("q", "K", "V", "out")))
    if key not in _TORCH_VIEWS:
        _TORCH_VIEWS.clear()
        _TORCH_VIEWS[key] = (torch.from_dlpack(bufs["q"]).view(B, HQ, 1, D),
                             torch.from_dlpack(bufs["K"]).view(B, HKV, S, D),
                             torch.from_dlpack(bufs["V"]).view(B, HKV, S, D),
                             torch.from_dlpack(bufs["out"]).view(B, HQ, 1, D))
    q, k, v, out = _TORCH_VIEWS[key]
    out.copy_(F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
