"""Reference outputs for the stream family, in float64: on the GPU (rooflint passes
``xp=cupy`` and the inputs there), or with numpy on the host."""

import numpy as np


def copy(bufs, params, xp=np):
    return {"out": bufs["x"].astype(xp.float64)}


def triad(bufs, params, xp=np):
    return {"out": bufs["x"].astype(xp.float64) + 2.0 * bufs["y"].astype(xp.float64)}


def strided(bufs, params, xp=np):
    n, stride = params["N"], params["STRIDE"]
    x = bufs["x"].astype(xp.float64)
    return {"out": x.reshape(n // stride, stride).T.reshape(-1)}
