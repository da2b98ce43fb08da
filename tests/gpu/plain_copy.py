"""The stream family's copy_float4, launched once with plain CuPy (for a bare ncu run)."""

from pathlib import Path

import cupy
import numpy as np

N = 2**27
source = (Path(__file__).parents[2] / "kernels" / "stream" / "stream.cu").read_text()
kernel = cupy.RawModule(code=source).get_function("copy_float4")
x = cupy.random.uniform(-1, 1, N, dtype=cupy.float32)
out = cupy.empty_like(x)
sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
kernel((8 * sms,), (256,), (x, out, np.int64(N // 4)))
cupy.cuda.runtime.deviceSynchronize()
