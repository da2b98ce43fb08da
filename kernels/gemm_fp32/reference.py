"""Reference and library baseline for the gemm_fp32 family."""

import numpy as np


def matmul(bufs, params):
    """C = A @ B in float64 on the host."""
    return {"C": bufs["A"].astype(np.float64) @ bufs["B"].astype(np.float64)}


def cublas(xp, bufs, params):
    """cuBLAS SGEMM through cupy.matmul (plain FP32: CuPy uses TF32 only if CUPY_TF32=1)."""
    xp.matmul(bufs["A"], bufs["B"], out=bufs["C"])
