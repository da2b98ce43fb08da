"""The training step of train_step.py, data-parallel: one process per GPU under
``torchrun --nproc_per_node=N``, DistributedDataParallel over NCCL (gradients all-reduced
in buckets while the backward pass runs), bf16 autocast, fused AdamW. The program issue 49
profiles: `rooflint profile -- torchrun --nproc_per_node=2 examples/apps/ddp_train.py`.
Each rank prints its mean step time; rank 0 prints the slowest rank's.

``--dim``, ``--layers`` and ``--batch`` size the model and its batch: a wide, deep model
on a small batch moves more gradient bytes for its compute, and waits on the interconnect.
The communication fixes a profile can name, to measure what each saves: ``--bucket-mb``
(DDP's gradient bucket size, 25 MB by default), ``--compress bf16`` (gradients all-reduced
in bf16: DDP's bf16_compress_hook) and ``--accumulate K`` (gradients accumulated over K
micro-steps under ``no_sync``, all-reduced once: a step is then K micro-steps, and the time
printed is a micro-step's).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from train_step import Model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps (after 3 warm-up)")
    parser.add_argument("--dim", type=int, default=768, help="the model's width")
    parser.add_argument("--layers", type=int, default=4, help="the model's blocks")
    parser.add_argument("--batch", type=int, default=8, help="sequences a micro-step")
    parser.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb")
    parser.add_argument("--compress", choices=("none", "bf16"), default="none",
                        help="all-reduce the gradients in bf16 (DDP's bf16_compress_hook)")
    parser.add_argument("--accumulate", type=int, default=1,
                        help="micro-steps a step, gradients all-reduced once (no_sync)")
    args = parser.parse_args()
    if min(args.steps, args.dim, args.layers, args.batch, args.accumulate) < 1 \
            or args.bucket_mb <= 0 or args.dim % 64:
        parser.error("--steps, --layers, --batch and --accumulate must be 1 or more, "
                     "--bucket-mb above 0, --dim a multiple of 64")
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    torch.manual_seed(rank)
    vocab, context, batch = 8192, 512, args.batch
    model = DistributedDataParallel(Model(vocab, context, dim=args.dim, heads=args.dim // 64,
                                          layers=args.layers).cuda(),
                                    device_ids=[local], bucket_cap_mb=args.bucket_mb)
    if args.compress == "bf16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    tokens = torch.randint(vocab, (batch, context), device="cuda")
    targets = torch.randint(vocab, (batch, context), device="cuda")

    def micro_step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets)
        loss.backward()

    def step() -> None:
        with model.no_sync():
            for _ in range(args.accumulate - 1):
                micro_step()
        micro_step()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    timed(step, args.steps, rank, args.accumulate)
    dist.destroy_process_group()


def timed(step: Callable[[], None], steps: int, rank: int, micro_steps: int = 1) -> None:
    """Three warm-up steps, then ``steps`` inside the NVTX range "timed": each rank prints
    its mean (a micro-step's where a step is several), rank 0 the slowest rank's."""
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    began = time.perf_counter()
    torch.cuda.nvtx.range_push("timed")
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    mean = torch.tensor((time.perf_counter() - began) / (steps * micro_steps), device="cuda")
    each = "a micro-step" if micro_steps > 1 else "a step"
    print(f"rank {rank}: {mean.item() * 1e3:.1f} ms {each}")
    dist.all_reduce(mean, op=dist.ReduceOp.MAX)
    if rank == 0:
        print(f"slowest rank: {mean.item() * 1e3:.1f} ms {each}")


if __name__ == "__main__":
    main()
