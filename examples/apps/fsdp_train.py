"""The training step of train_step.py, sharded: one process per GPU under
``torchrun --nproc_per_node=N``, each block and the model under FSDP2's ``fully_shard``
(parameters all-gathered before each block's forward and backward, gradients
reduce-scattered after), bf16 parameters for compute and fp32 gradient reduction
(MixedPrecisionPolicy), AdamW. The sharded program issue 49 profiles:
`rooflint profile -- torchrun --nproc_per_node=2 examples/apps/fsdp_train.py`. Each rank
prints its mean step time; rank 0 prints the slowest rank's. ``--dim``, ``--layers`` and
``--batch`` size the model and its batch, as in ddp_train.py.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from ddp_train import timed
from train_step import Model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps (after 3 warm-up)")
    parser.add_argument("--dim", type=int, default=768, help="the model's width")
    parser.add_argument("--layers", type=int, default=4, help="the model's blocks")
    parser.add_argument("--batch", type=int, default=8, help="sequences a step")
    args = parser.parse_args()
    if min(args.steps, args.dim, args.layers, args.batch) < 1 or args.dim % 64:
        parser.error("--steps, --layers and --batch must be 1 or more, --dim a multiple of 64")
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    torch.manual_seed(0)
    vocab, context = 8192, 512
    model = Model(vocab, context, dim=args.dim, heads=args.dim // 64, layers=args.layers).cuda()
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    torch.manual_seed(rank)
    tokens = torch.randint(vocab, (args.batch, context), device="cuda")
    targets = torch.randint(vocab, (args.batch, context), device="cuda")

    def step() -> None:
        loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    timed(step, args.steps, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
