"""nanoGPT's GPT-2 124M (its model.py, unmodified) trained under
torch.compile(mode="reduce-overhead"): CUDA graphs, as rooflint's cuda_graphs move advises;
3 warm-up + 5 steps, bf16 autocast, fused AdamW, batch 8 x 1024, random tokens.

    NANOGPT=path/to/nanoGPT rooflint profile -- python examples/apps/nanogpt_graphs.py
"""
import os
import sys
sys.path.insert(0, os.environ["NANOGPT"])     # a checkout of github.com/karpathy/nanoGPT
import torch
from model import GPT, GPTConfig
torch.manual_seed(0)   # no blank line above: the committed profiles name lines 17 and 19
model = GPT(GPTConfig(block_size=1024, vocab_size=50304, n_layer=12, n_head=12, n_embd=768,
                      dropout=0.0, bias=False)).cuda()
optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cuda")
step = torch.compile(model, mode="reduce-overhead")
x = torch.randint(0, 50304, (8, 1024), device="cuda")
y = torch.randint(0, 50304, (8, 1024), device="cuda")
for _ in range(8):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits, loss = step(x, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("loss", loss.item())
