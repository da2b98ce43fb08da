"""A bf16 transformer block in PyTorch: the program docs/profiling.md profiles with
`rooflint profile -- python examples/apps/transformer_block.py`.

Layer norm, the QKV projection, causal scaled-dot-product attention, the output
projection, a GELU MLP and two residual adds, as inference (no autograd), at B=8, S=1024,
D=2048 (16 heads of 128). Three warm-up steps, then the timed steps inside an NVTX range
named "timed" (so `--nvtx timed` profiles only those). `--compile` runs the block through
torch.compile, which fuses the element-wise work into Triton kernels: the second
program that `rooflint compare` sets against the first.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, seq, 3, self.heads, -1).unbind(2)
        attention = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                   v.transpose(1, 2), is_causal=True)
        x = x + self.proj(attention.transpose(1, 2).reshape(batch, seq, dim))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--compile", action="store_true", help="run through torch.compile")
    args = parser.parse_args()

    torch.manual_seed(0)
    block = Block(args.dim, args.heads).to("cuda", torch.bfloat16).eval()
    step = torch.compile(block) if args.compile else block
    x = torch.randn(args.batch, args.seq, args.dim, device="cuda", dtype=torch.bfloat16)
    with torch.inference_mode():
        for _ in range(args.warmup):
            step(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("timed")
        began = time.perf_counter()
        for _ in range(args.steps):
            step(x)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - began
        torch.cuda.nvtx.range_pop()
    print(f"{'compiled' if args.compile else 'eager'}: "
          f"{1e3 * elapsed / args.steps:.3f} ms per step")


if __name__ == "__main__":
    main()
