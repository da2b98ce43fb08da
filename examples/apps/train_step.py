"""A small GPT-style training step in PyTorch: the program `rooflint profile` is shown on
for a whole training step (forward, backward, optimizer), eager and under torch.compile.

Token and position embeddings, four pre-norm transformer blocks (layer norm, QKV
projection, causal scaled-dot-product attention, output projection, GELU MLP, residual
adds), a final norm, the tied output projection and a cross-entropy loss, under bf16
autocast with fp32 weights; backward; gradient clipping; fused AdamW. Batch 8 x 512
tokens, width 768 (12 heads of 64), vocabulary 8192. Three warm-up steps, then the timed
steps inside an NVTX range named "timed" (torch.cuda.nvtx, which both Nsight Compute and
PyTorch's profiler see), so `--nvtx timed` leaves warm-up and compilation out.
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


class Model(nn.Module):
    def __init__(self, vocab: int, context: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tokens(tokens) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.norm(x) @ self.tokens.weight.t()
        return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps (after 3 warm-up)")
    parser.add_argument("--compile", action="store_true", help="run under torch.compile")
    args = parser.parse_args()
    torch.manual_seed(0)
    vocab, context, batch = 8192, 512, 8
    model = Model(vocab, context, dim=768, heads=12, layers=4).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    tokens = torch.randint(vocab, (batch, context), device="cuda")
    targets = torch.randint(vocab, (batch, context), device="cuda")
    forward = torch.compile(model) if args.compile else model

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    began = time.perf_counter()
    torch.cuda.nvtx.range_push("timed")
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    print(f"{args.steps} steps: {(time.perf_counter() - began) / args.steps * 1e3:.1f} ms a step")


if __name__ == "__main__":
    main()
