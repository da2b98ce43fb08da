"""Triton's fused softmax (the Triton tutorial's kernel) as a python variant.

One program per row; the whole row is one block of BLOCK_SIZE = the next power of two of
N lanes, so it is read once, reduced in registers and written once. Without triton
installed this module does not import and rooflint marks the variant skipped.
"""

import triton
import triton.language as tl
import torch


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x = tl.load(in_ptr + row * in_row_stride + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + offsets, y, mask=mask)


def num_warps(block_size):
    """The tutorial's choice: more warps for longer rows, so each thread holds fewer."""
    return 4 if block_size < 2048 else 8 if block_size < 4096 else 16


_VIEWS = {}


def triton_softmax(xp, bufs, params):
    """Launches on PyTorch's current stream, which rooflint sets to its timed stream.
    The CuPy buffers are viewed as torch tensors (zero copy), once per buffer pair."""
    key = (bufs["x"].data.ptr, bufs["out"].data.ptr, bufs["x"].shape)
    if key not in _VIEWS:
        _VIEWS.clear()
        _VIEWS[key] = (torch.from_dlpack(bufs["x"]), torch.from_dlpack(bufs["out"]))
    x, out = _VIEWS[key]
    rows, cols = x.shape
    block_size = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols,
                            BLOCK_SIZE=block_size, num_warps=num_warps(block_size))
