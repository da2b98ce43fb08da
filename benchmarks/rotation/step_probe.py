"""The rotation probe's program (the engine: rooflint/measure/rotation_engine.cpp):
examples/apps/train_step.py's training step, or with PROGRAM=convnet
examples/apps/convnet_train.py's ResNet-50 step, 3 warm-up steps, then
- MODE=rotate: CUPTI's range profiler, one pass of the counter configuration a step
  (ROTATION_LIB, METRICS, MAX_RANGES, FLUSH; CHOSEN, the engine's chosen kernels, a line
  each, or none: automatic ranges), its ranges written to $OUT/rotate-<TAG>.tsv;
- MODE=traced-rotate: TRACED steps (5) under PyTorch's profiler, its trace exported to
  $OUT/traced-<TAG>.json, then MODE=rotate in the same process: whether the range profiler
  (its cuptiSubscribe, CUPTI 13.0 allowing one subscriber) works once Kineto has stopped
  (with TEARDOWN_CUPTI=1 Kineto finalizes CUPTI at its stop), and what one run of the
  program for both passes would cost;
- MODE=rotate-traced: the other order, the rotation first, then TRACED steps under
  PyTorch's profiler: whether Kineto records the kernels once the engine has let CUPTI go;
- before a rotation after traced steps, the loaded CUPTI libraries are named and each is
  asked to subscribe every 50 ms (a CUDA call between, the callback Kineto's teardown
  thread finalizes CUPTI in) until one does or WAIT_S passes;
- MODE=ncu: one step between cudaProfilerStart/Stop (run under ncu --profile-from-start off);
- MODE=plain: one step, timed.
Run from the repository's root (probe.sh)."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from typing import Callable

import torch

sys.path.insert(0, "examples/apps")
WARM_UP = 3
MOST_PASSES = 40


def training_step() -> Callable[[], None]:
    """train_step.py's model and step, as that program builds them."""
    from train_step import Model
    vocab, context, batch = 8192, 512, 8
    model = Model(vocab, context, dim=768, heads=12, layers=4).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    tokens = torch.randint(vocab, (batch, context), device="cuda")
    targets = torch.randint(vocab, (batch, context), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


def convnet_step() -> Callable[[], None]:
    """convnet_train.py's ResNet-50 step (cuDNN's benchmark unless BENCHMARK=0)."""
    import torch.nn.functional as F
    import torchvision
    torch.backends.cudnn.benchmark = os.environ.get("BENCHMARK", "1") == "1"
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(64, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(1000, (64,), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


def timed(step: Callable[[], None]) -> float:
    began = time.perf_counter()
    step()
    torch.cuda.synchronize()
    return time.perf_counter() - began


def rotate(step: Callable[[], None], tag: str) -> None:
    """One pass of the configuration a step until every pass is submitted, then decoded."""
    lib = ctypes.CDLL(os.environ["ROTATION_LIB"])
    lib.rl_error.restype = ctypes.c_char_p

    def checked(result: int, call: str) -> int:
        if result < 0:
            sys.exit(f"{call}: {lib.rl_error().decode()}")
        return result

    began = time.perf_counter()
    passes = checked(lib.rl_begin(os.environ["METRICS"].encode(),
                                  int(os.environ.get("MAX_RANGES", "8000")),
                                  int(os.environ.get("FLUSH", "1")),
                                  os.environ.get("CHOSEN", "").encode()), "rl_begin")
    print(f"configured: {passes} passes in {1e3 * (time.perf_counter() - began):.0f} ms")
    for number in range(1, MOST_PASSES + 1):
        pass_began = time.perf_counter()
        checked(lib.rl_start(), "rl_start")
        step()
        torch.cuda.synchronize()
        done = checked(lib.rl_stop(), "rl_stop")
        print(f"pass step {number}: {1e3 * (time.perf_counter() - pass_began):.1f} ms")
        if done:
            break
    decode_began = time.perf_counter()
    ranges = checked(lib.rl_finish(f"{os.environ['OUT']}/rotate-{tag}.tsv".encode()),
                     "rl_finish")
    print(f"decoded {ranges} ranges in {1e3 * (time.perf_counter() - decode_began):.0f} ms; "
          f"whole {time.perf_counter() - began:.2f} s")


def loaded_cupti() -> list[str]:
    """The CUPTI libraries mapped into this process (torch's own and the engine's may differ)."""
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "libcupti" in line})


def wait_for_cupti(step: Callable[[], None]) -> None:
    """Ask each loaded CUPTI for a subscription until one is given or WAIT_S passes."""
    ctypes.CDLL(os.environ["ROTATION_LIB"])
    libraries = loaded_cupti()
    print(f"loaded CUPTI: {libraries}", flush=True)
    began = time.perf_counter()
    tries = 0
    while time.perf_counter() - began < float(os.environ.get("WAIT_S", "10")):
        tries += 1
        answers = []
        for path in libraries:
            cupti = ctypes.CDLL(path)
            handle = ctypes.c_void_p()
            result = cupti.cuptiSubscribe(ctypes.byref(handle), None, None)
            answers.append(result)
            if result == 0:
                cupti.cuptiUnsubscribe(handle)
                print(f"subscribed through {path} after {tries} tries, "
                      f"{time.perf_counter() - began:.2f} s", flush=True)
                return
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1)
        time.sleep(0.05)
    print(f"no subscription after {tries} tries: {answers}", flush=True)


def traced(step: Callable[[], None], tag: str) -> None:
    """TRACED steps under PyTorch's profiler (CUDA activities, shapes recorded, as pass 1
    runs it), stopped and exported before the rotation begins."""
    from torch.profiler import ProfilerActivity, profile
    began = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True) as tracing:
        for _ in range(int(os.environ.get("TRACED", "5"))):
            step()
        torch.cuda.synchronize()
    stopped = time.perf_counter()
    path = f"{os.environ['OUT']}/traced-{tag}.json"
    tracing.export_chrome_trace(path)
    print(f"traced steps {stopped - began:.2f} s, exported in "
          f"{time.perf_counter() - stopped:.2f} s", flush=True)
    import json
    with open(path) as trace:
        events = json.load(trace)["traceEvents"]
    print(f"traced kernels: {sum(1 for event in events if event.get('cat') == 'kernel')}",
          flush=True)


def main() -> None:
    torch.manual_seed(0)
    step = convnet_step() if os.environ.get("PROGRAM") == "convnet" else training_step()
    for _ in range(WARM_UP):
        step()
    torch.cuda.synchronize()
    print(f"plain step {1e3 * timed(step):.1f} ms", flush=True)
    mode = os.environ.get("MODE", "plain")
    if mode == "traced-rotate":
        traced(step, os.environ.get("TAG", ""))
        wait_for_cupti(step)
    if mode in ("rotate", "traced-rotate", "rotate-traced"):
        rotate(step, os.environ.get("TAG", ""))
    if mode == "rotate-traced":
        traced(step, os.environ.get("TAG", ""))
    elif mode == "ncu":
        torch.cuda.profiler.start()
        seconds = timed(step)
        torch.cuda.profiler.stop()
        print(f"ncu step {seconds:.2f} s")


if __name__ == "__main__":
    main()
