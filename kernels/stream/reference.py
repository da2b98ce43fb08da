"""Reference outputs for the stream family (float64 on the host)."""

import numpy as np


def copy(bufs, params):
    return {"out": bufs["x"].astype(np.float64)}


def triad(bufs, params):
    return {"out": bufs["x"].astype(np.float64) + 2.0 * bufs["y"].astype(np.float64)}


def strided(bufs, params):
    n, stride = params["N"], params["STRIDE"]
    x = bufs["x"].astype(np.float64)
    return {"out": x.reshape(n // stride, stride).T.reshape(-1)}
