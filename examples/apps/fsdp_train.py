"""The training step of train_step.py, sharded: one process per GPU under
``torchrun --nproc_per_node=N``, each block and the model under FSDP2's ``fully_shard``
(parameters all-gathered before each block's forward and backward, gradients
reduce-scattered after), bf16 parameters for compute and fp32 gradient reduction
(MixedPrecisionPolicy), AdamW. The sharded program issue 49 profiles:
`rooflint profile -- torchrun --nproc_per_node=2 examples/apps/fsdp_train.py`. Each rank
prints its mean step time; rank 0 prints the slowest rank's. ``--dim``, ``--layers`` and
``--batch`` size the model and its batch, as in ddp_train.py. Two of the fixes a profile
offers a sharded job can be tried: ``--accumulate N`` (gradients reduce-scattered once
every N micro-steps: ``set_requires_gradient_sync(False)`` on the others) and
``--prefetch N`` (each block's forward and backward all-gathers the parameters of the next
N blocks ahead: ``set_modules_to_forward_prefetch``, ``set_modules_to_backward_prefetch``).
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
    parser.add_argument("--batch", type=int, default=8, help="sequences a micro-step")
    parser.add_argument("--accumulate", type=int, default=1,
                        help="micro-steps a step, gradients reduce-scattered once")
    parser.add_argument("--prefetch", type=int, default=0,
                        help="blocks whose parameters each block all-gathers ahead (0: FSDP2's "
                             "own order)")
    args = parser.parse_args()
    if min(args.steps, args.dim, args.layers, args.batch, args.accumulate) < 1 \
            or args.prefetch < 0 or args.dim % 64:
        parser.error("--steps, --layers, --batch and --accumulate must be 1 or more, "
                     "--prefetch 0 or more, --dim a multiple of 64")
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
    if args.prefetch:
        prefetched(list(model.blocks), args.prefetch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    torch.manual_seed(rank)
    tokens = torch.randint(vocab, (args.batch, context), device="cuda")
    targets = torch.randint(vocab, (args.batch, context), device="cuda")

    def micro_step(last: bool) -> None:
        model.set_requires_gradient_sync(last)
        model(tokens, targets).backward()

    def step() -> None:
        for micro in range(args.accumulate):
            micro_step(micro == args.accumulate - 1)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    timed(step, args.steps, rank, args.accumulate)
    dist.destroy_process_group()


def prefetched(blocks: list, ahead: int) -> None:
    """Each block all-gathers the next ``ahead`` blocks' parameters as its forward starts,
    and the ``ahead`` blocks before it as its backward starts (FSDP2's explicit
    prefetching, which overlaps more of the all-gathers with compute)."""
    for i, block in enumerate(blocks):
        block.set_modules_to_forward_prefetch(blocks[i + 1:i + 1 + ahead])
        block.set_modules_to_backward_prefetch(blocks[max(0, i - ahead):i][::-1])


if __name__ == "__main__":
    main()
