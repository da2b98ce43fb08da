"""Reference outputs of the one-move corpus, in float64, on the GPU (``xp=cupy``) or the host."""

import numpy as np

# The chain step's constants as the kernels hold them (float32), so the reference follows
# the same recurrence: p <- DECAY p + RATE v, from p = 0.
DECAY = float(np.float32(0.999))
RATE = float(np.float32(0.001))


def axpy(bufs, params, xp=np):
    return {"out": params["A"] * bufs["x"].astype(xp.float64) + bufs["y"].astype(xp.float64)}


def transpose(bufs, params, xp=np):
    s = params["S"]
    return {"out": bufs["x"].astype(xp.float64).reshape(s, s).T.reshape(-1)}


def _chain(v, steps):
    """The recurrence's closed form after ``steps`` steps."""
    return RATE * v * (1 - DECAY ** steps) / (1 - DECAY)


def chain(bufs, params, xp=np):
    n = 512 * params["num_sms"]
    return {"chain_out": _chain(bufs["x"][:n].astype(xp.float64), params["STEPS"])}


def chain_half(bufs, params, xp=np):
    return {"chain_out": _chain(bufs["xh"].astype(xp.float64), params["STEPS"])}


def waves(bufs, params, xp=np):
    n = 5120 * params["num_sms"]
    return {"wave_out": _chain(bufs["x"][:n].astype(xp.float64), params["WAVE_STEPS"])}


def copy(bufs, params, xp=np):
    return {"out": bufs["x"].astype(xp.float64)}


def _row_sums(bufs, params, rows, xp):
    return bufs["x"].astype(xp.float64).reshape(rows, -1).sum(axis=1)


def row_sums_small(bufs, params, xp=np):
    return {"sums_small": _row_sums(bufs, params, params["SMALL_ROWS"], xp)}


def row_sums_big(bufs, params, xp=np):
    return {"sums_big": _row_sums(bufs, params, params["BIG_ROWS"], xp)}


def accumulate(bufs, params, xp=np):
    """32 accumulators per thread, acc_j <- acc_j v + 1/(j + 1) over the thread's elements."""
    threads, per = 2048 * params["num_sms"], params["SPILL_PER"]
    values = bufs["x"][:threads * per].astype(xp.float64).reshape(per, threads)
    constants = xp.asarray(np.float32(1) / np.arange(1, 33, dtype=np.float32), dtype=xp.float64)
    acc = xp.zeros((32, threads))
    for k in range(per):
        acc = acc * values[k] + constants[:, None]
    return {"spill_out": acc.sum(axis=0)}
