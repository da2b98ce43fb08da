"""References for the causes family (float64 on the host)."""

import numpy as np


def barrier_chain(bufs, params):
    """Warp 0's threads iterate a <- 0.99 a + 0.01 (ITERS * CHAIN times) from
    a0 = thread * 1e-3; the other threads keep a0. Closed form: 1 + (a0 - 1) 0.99^n."""
    blocks, n = 8 * int(params["num_sms"]), int(params["ITERS"]) * int(params["CHAIN"])
    a0 = np.tile(np.arange(256) * 1e-3, blocks)
    worker = np.tile(np.arange(256) < 32, blocks)
    return {"out": np.where(worker, 1 + (a0 - 1) * 0.99 ** n, a0)}


def axpy_chain(bufs, params):
    """y = a x, then y += a x seven times (the manifest's eight launches): y = 8 a x, a = 0.5."""
    return {"out": 8 * 0.5 * bufs["x"].astype(np.float64)}


def ex2_chains(bufs, params):
    """Four chains a <- 2^(0.1 - 0.5 a) from t*1e-7 + {0, 0.25, 0.5, 0.75}, summed.
    The map contracts by |0.5 ln2 a| < 0.4 per step, so 64 steps reach its fixed point
    to float64 precision; more are identical."""
    t = np.arange(2048 * int(params["num_sms"]), dtype=np.float64) * 1e-7
    chains = np.stack([t, t + 0.25, t + 0.5, t + 0.75])
    for _ in range(min(int(params["EX2_ITERS"]), 64)):
        chains = np.exp2(0.1 - 0.5 * chains)
    return {"out": chains.sum(axis=0)}


def l2_sums(bufs, params):
    """Sweep p of block b reads block (b + 7p) % blocks's slice: four float4 per thread,
    x4[slice + k*T], all four components summed."""
    blocks = 8 * int(params["num_sms"])
    T = 256 * blocks
    x = bufs["xl2"].astype(np.float64).reshape(4, blocks, 256, 4)
    per_block = x.sum(axis=(0, 3))                                  # [block, thread]
    sources = (np.arange(blocks)[:, None] + 7 * np.arange(int(params["PASSES"]))) % blocks
    return {"out": per_block[sources].sum(axis=1).reshape(T)}
