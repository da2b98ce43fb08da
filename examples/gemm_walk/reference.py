"""Reference and library baseline for the gemm_walk family."""

import numpy as np


def matmul(bufs, params, xp=np):
    """C = A @ B in float64, on the GPU when given ``xp=cupy``."""
    return {"C": bufs["A"].astype(xp.float64) @ bufs["B"].astype(xp.float64)}


def cublas(xp, bufs, params):
    """cuBLAS SGEMM through cupy.matmul (plain FP32)."""
    xp.matmul(bufs["A"], bufs["B"], out=bufs["C"])
