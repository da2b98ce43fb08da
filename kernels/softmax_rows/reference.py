"""Reference and the PyTorch baseline for the softmax_rows family."""

import numpy as np


def softmax(bufs, params, xp=np):
    """Row-wise softmax in float64 (on the GPU when given ``xp=cupy``), the row's maximum
    subtracted first."""
    x = bufs["x"].astype(xp.float64)
    e = xp.exp(x - x.max(axis=1, keepdims=True))
    return {"out": e / e.sum(axis=1, keepdims=True)}


_TORCH_VIEWS = {}


def torch_softmax(xp, bufs, params):
    """torch.softmax over the rows, written straight into out (no copy).

    rooflint runs it with PyTorch's current stream set to its timed stream. The torch
    views of the CuPy buffers (zero copy) are made once per buffer pair.
    """
    import torch

    key = (bufs["x"].data.ptr, bufs["out"].data.ptr, bufs["x"].shape)
    if key not in _TORCH_VIEWS:
        _TORCH_VIEWS.clear()
        _TORCH_VIEWS[key] = (torch.from_dlpack(bufs["x"]), torch.from_dlpack(bufs["out"]))
    x, out = _TORCH_VIEWS[key]
    torch.softmax(x, dim=1, out=out)
