"""The training step of train_step.py, data-parallel: one process per GPU under
``torchrun --nproc_per_node=N``, DistributedDataParallel over NCCL (gradients all-reduced
in buckets while the backward pass runs), bf16 autocast, fused AdamW. The program issue 49
profiles: `rooflint profile -- torchrun --nproc_per_node=2 examples/apps/ddp_train.py`.
Each rank prints its mean step time; rank 0 prints the slowest rank's.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from train_step import Model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps (after 3 warm-up)")
    args = parser.parse_args()
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    torch.manual_seed(rank)
    vocab, context, batch = 8192, 512, 8
    model = DistributedDataParallel(Model(vocab, context, dim=768, heads=12, layers=4).cuda(),
                                    device_ids=[local])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    tokens = torch.randint(vocab, (batch, context), device="cuda")
    targets = torch.randint(vocab, (batch, context), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets)
        loss.backward()
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
    mean = torch.tensor((time.perf_counter() - began) / args.steps, device="cuda")
    print(f"rank {rank}: {mean.item() * 1e3:.1f} ms a step")
    dist.all_reduce(mean, op=dist.ReduceOp.MAX)
    if rank == 0:
        print(f"slowest rank: {mean.item() * 1e3:.1f} ms a step")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
