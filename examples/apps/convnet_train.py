"""A convolutional network's training step (torchvision's ResNet-50), as vision code
commonly runs it: the program `rooflint profile` is shown on for convolutions, batch norm
and cuDNN's autotuning.

Channels-last memory format, bf16 autocast with fp32 weights, `cudnn.benchmark` (cuDNN
times its algorithms for each new convolution shape on the first call), SGD with momentum.
Batch 64 of 224 x 224 images, 1,000 classes. Three warm-up steps, then the timed steps;
prints the time a step.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
import torchvision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps (after 3 warm-up)")
    parser.add_argument("--compile", action="store_true", help="run under torch.compile")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(1000, (64,), device="cuda")
    forward = torch.compile(model) if args.compile else model

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(forward(images), labels)
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
