"""A Llama-architecture language model from Hugging Face transformers, trained for a few
steps: the model-library program `rooflint profile` is shown on, eager and compiled.

LlamaForCausalLM from a config (no download): 8 decoder layers of width 1024, 16 query
heads sharing 4 key/value heads (GQA), RMSNorm, rotary embeddings, SwiGLU MLP, SDPA
attention, vocabulary 32,000; batch 8 x 1,024 tokens under bf16 autocast with fp32
weights; fused AdamW. Three warm-up steps, then the timed steps; prints the time a step.
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps (after 3 warm-up)")
    parser.add_argument("--compile", action="store_true", help="run under torch.compile")
    args = parser.parse_args()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816,
                         num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=4,
                         max_position_embeddings=2048, attn_implementation="sdpa")
    model = LlamaForCausalLM(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    tokens = torch.randint(config.vocab_size, (8, 1024), device="cuda")
    forward = torch.compile(model) if args.compile else model

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    print(f"{(time.perf_counter() - began) / args.steps * 1e3:.2f} ms a step")


if __name__ == "__main__":
    main()
