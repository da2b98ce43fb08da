"""Quantizer, references and cuBLAS baseline for the w4a16_gemv family.

Quantization follows the kernel book's W4A16 recipe (Part 5, 5.2): symmetric INT4 with
qmax = 7 (values -7..7), one fp16 scale per group of 128 K positions per output column,
scale = absmax(group) / 7, q = round(w / scale). Packing is the book's too: 8 nibbles
along K per 32-bit word, words [K/8, N] row-major, bits 4i..4i+3 of word (kp, n) = q at
k = kp*8 + i. The buffer W_q holds those words as uint8 [K/8, N, 4] (little-endian bytes):
byte j of word (kp, n) = q[kp*8 + 2j] in the low nibble, q[kp*8 + 2j + 1] in the high one.
"""

import numpy as np

GROUP = 128      # K positions per scale group
QMAX = 7         # symmetric INT4: -7..7, as in the book (-8 is never produced)


def _shape(params):
    K, N = int(params["K"]), int(params["N"])
    if K % GROUP:
        raise ValueError(f"K={K} must be a multiple of the group size {GROUP}")
    return K, N


def quantize(w_fp, params):
    """fp16 W [K, N] -> (int8 q [K, N] in -7..7, fp16 scales [K/128, N])."""
    K, N = _shape(params)
    groups = w_fp.astype(np.float32).reshape(K // GROUP, GROUP, N)
    absmax = np.abs(groups).max(axis=1)                                  # [K/128, N]
    scales = (absmax / QMAX).astype(np.float16)
    # Quantize against the fp16 scale the kernel will see, so q * scale is the best
    # INT4 approximation of w with the stored scale.
    safe = np.where(scales == 0, np.float16(1), scales).astype(np.float32)
    q = np.clip(np.rint(groups / safe[:, None, :]), -QMAX, QMAX).astype(np.int8)
    return q.reshape(K, N), scales


def pack(q, params):
    """int8 q [K, N] -> uint8 [K/8, N, 4]: the bytes of the book's [K/8, N] uint32 words."""
    K, N = _shape(params)
    nib = (q.astype(np.int16) & 0xF).astype(np.uint8).reshape(K // 8, 4, 2, N)
    packed = nib[:, :, 0, :] | (nib[:, :, 1, :] << 4)                    # [K/8, 4 bytes, N]
    return np.ascontiguousarray(packed.transpose(0, 2, 1))               # [K/8, N, 4]


def unpack(w_q, params):
    """uint8 [K/8, N, 4] -> int8 q [K, N] (nibble by nibble, independent of the kernel's
    32-bit shift trick; tests compare the two)."""
    K, N = _shape(params)
    b = np.asarray(w_q, dtype=np.uint8).reshape(K // 8, N, 4).transpose(0, 2, 1)   # [K/8, 4, N]
    nib = np.stack([b & 0xF, b >> 4], axis=2).astype(np.int8)             # [K/8, 4, 2, N]
    signed = (nib ^ 8) - 8                                                # 4-bit two's complement
    return signed.reshape(K, N)


def dequantize(w_q, scales, params):
    """The weights the INT4 kernels multiply by, in float64: q * scale."""
    K, N = _shape(params)
    q = unpack(w_q, params).astype(np.float64).reshape(K // GROUP, GROUP, N)
    return (q * np.asarray(scales, dtype=np.float64)[:, None, :]).reshape(K, N)


def prepare(bufs, params):
    """Quantize the random fp16 source weights W_fp into the kernels' inputs."""
    q, scales = quantize(bufs["W_fp"], params)
    return {"W_q": pack(q, params), "scales": scales}


def dequantized(bufs, params):
    """Reference of the INT4 kernels: x @ dequantize(W_q, scales) in float64.

    It uses the prepared buffers, so the check measures the kernel's unpacking and
    arithmetic, not the quantization error (which is ~10% relative for INT4)."""
    w = dequantize(bufs["W_q"], bufs["scales"], params)
    return {"y": bufs["x"].astype(np.float64) @ w}


def fp16_weights(bufs, params):
    """Reference of the cuBLAS baseline: x @ W_fp in float64 (the unquantized weights)."""
    return {"y": bufs["x"].astype(np.float64) @ bufs["W_fp"].astype(np.float64)}


def cublas_fp16(xp, bufs, params):
    """cuBLAS through cupy.matmul: [1, K] @ [K, N] in fp16 (cublasGemmEx, fp32 compute),
    fp16 result; CuPy then copies it into the float32 y (one small elementwise kernel)."""
    K, N = int(params["K"]), int(params["N"])
    y16 = xp.matmul(bufs["x"].reshape(1, K), bufs["W_fp"])     # [1, N] float16
    xp.copyto(bufs["y"], y16.reshape(N))                         # fp16 -> fp32
