"""References of the benchmark family, written as a user writes them: numpy on the host,
some in float64 for accuracy (saxpy, the sums), the rest in the inputs' own float32."""

import math

import numpy as np

# exp(x) to degree 8, highest power first, as Horner's rule takes them.
EXP_TAYLOR = [1 / math.factorial(k) for k in range(8, -1, -1)]


def gelu_tanh(x):
    """GELU in its tanh form, in the dtype of ``x``."""
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))


def scaled(bufs, params):
    return {"out": params["A"] * bufs["x"]}


def saxpy(bufs, params):
    return {"out": params["A"] * bufs["x"].astype(np.float64) + bufs["y"]}


def polynomial(bufs, params):
    x = bufs["x"]
    p = np.full_like(x, EXP_TAYLOR[0])
    for coefficient in EXP_TAYLOR[1:]:
        p *= x
        p += coefficient
    return {"out": p}


def gelu(bufs, params):
    return {"out": gelu_tanh(bufs["x"])}


def to_half(bufs, params):
    return {"half_out": bufs["x"].astype(np.float16)}


def total(bufs, params):
    return {"total": np.array([bufs["y"].sum(dtype=np.float64)])}


def sum_squares(bufs, params):
    x = bufs["x"].astype(np.float64)
    return {"total": np.array([np.dot(x, x)])}


def histogram(bufs, params):
    return {"hist": np.bincount(bufs["keys"], minlength=256).astype(np.uint32)}


def transpose(bufs, params):
    return {"mat_out": np.ascontiguousarray(bufs["img"].T)}


def stencil(bufs, params):
    a = bufs["img"]
    out = a.copy()
    out[1:-1, 1:-1] = np.float32(0.2) * (a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1]
                                         + a[1:-1, :-2] + a[1:-1, 2:])
    return {"mat_out": out}
