"""The program's time from pass 1's trace (issue 47, item 1): wall, GPU busy, the idle gaps
by what the host did, and the steps; on the recorded traces and on a hand-built one whose
every gap is known."""

from __future__ import annotations

import json
import random

import pytest

from edges import REPO
from rooflint.formats.trace_timing import (IdleTime, Steps, overlap, program_timing, step_spans,
                                           union)

TRACES = REPO / "tests" / "fixtures" / "trace"


def load(name: str) -> dict:
    return json.loads((TRACES / name).read_text())


def busy_by_sweep(events: list[dict], window: tuple[float, float]) -> float:
    """Kernel time on any stream within ``window``, counted another way: a sweep over the
    starts and ends of the kernels cut to it."""
    cut = [(max(e["ts"], window[0]), min(e["ts"] + e["dur"], window[1])) for e in events
           if e.get("cat") == "kernel"]
    edges = sorted(t for start, end in cut if end > start for t in ((start, 1), (end, -1)))
    busy, depth, since = 0.0, 0, 0.0
    for moment, step in edges:
        if depth == 0 and step == 1:
            since = moment
        depth += step
        if depth == 0:
            busy += moment - since
    return busy * 1e-6


@pytest.mark.parametrize("name", ["h200-step-trace.json", "h100-step-trace.json",
                                  "h100-step-compiled-trace.json",
                                  "h100-repeated-calls-trace.json"])
def test_busy_is_the_union_of_kernels_and_idle_the_rest_of_the_wall_time(name):
    trace = load(name)
    timing = program_timing(trace)
    events = trace["traceEvents"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    region = (min(e["ts"] for e in gpu), max(e["ts"] + e["dur"] for e in gpu))
    steps = step_spans([e for e in events if "ts" in e], region)
    window = (steps[1][0], steps[-1][1]) if len(steps) >= 2 else region
    assert timing.wall_s == pytest.approx((window[1] - window[0]) * 1e-6, rel=1e-9)
    assert timing.busy_s == pytest.approx(busy_by_sweep(events, window), rel=1e-9)
    assert timing.busy_s + timing.idle.total_s == pytest.approx(timing.wall_s, rel=1e-9)


def test_the_h200_step_trace():
    """Two training steps after the model's upload: the first step holds the upload (its
    pageable copies synchronise for seconds), so the time is the second step's: 18.9 ms, the
    GPU busy 2.1 ms of it, a small model's step waiting mostly on the host."""
    timing = program_timing(load("h200-step-trace.json"))
    assert timing.wall_s == pytest.approx(18.93e-3, abs=1e-5)
    assert timing.busy_s == pytest.approx(2.1213e-3, abs=1e-7)
    assert timing.idle.sync_s == 0
    assert timing.idle.launch_s == pytest.approx(2.42e-3, abs=1e-5)
    assert timing.idle.copy_s == pytest.approx(15.2e-6, abs=1e-7)
    # two Optimizer.step ranges: the first step holds the upload, the second is one step
    assert timing.steps.count == 2
    assert timing.steps.step_s == pytest.approx(18.93e-3, abs=1e-5)
    assert timing.steps.warmup_s == pytest.approx(2.40566, abs=1e-5)


def test_a_trace_without_kernels_or_timestamps_has_no_timing():
    assert program_timing({"traceEvents": []}) is None
    assert program_timing({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm",
                                            "ts": 0, "dur": 5}]}) is None


def kernel(start: float, end: float, correlation: int, stream: int = 7) -> dict:
    return {"ph": "X", "cat": "kernel", "name": f"k{correlation}", "ts": start,
            "dur": end - start, "args": {"correlation": correlation, "stream": stream}}


def call(name: str, start: float, end: float, correlation: int | None = None) -> dict:
    args = {"correlation": correlation} if correlation is not None else {}
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "ts": start, "dur": end - start,
            "pid": 1, "tid": 1, "args": args}


def annotation(name: str, start: float, end: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": start,
            "dur": end - start, "pid": 1, "tid": 1}


def hand_built(*ranges: dict) -> dict:
    """Kernels at 0-10 and 5-8 (another stream), 30-40, 50-60 and 200-210 us; a copy at
    100-120. 10-30: the host synchronised (5-12), having waited 5 us when the gap began,
    then launched the kernel at 30 at 20, 22 us after the launch before (back to back);
    40-50: the kernel at 50 was launched at 45, 25 us after the launch before (back to
    back); 60-200: a copy, then 120 us with the kernel at 200 launched at 190, 145 us after
    the launch before (the host elsewhere)."""
    return {"traceEvents": [
        kernel(0, 10, 1), kernel(5, 8, 2, stream=13), kernel(30, 40, 3), kernel(50, 60, 4),
        kernel(200, 210, 5),
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 100, "dur": 20},
        call("cudaLaunchKernel", -4, -2, 1), call("cudaLaunchKernel", -2, 0, 2),
        call("cudaStreamSynchronize", 5, 12), call("cudaLaunchKernel", 20, 22, 3),
        call("cudaLaunchKernel", 45, 47, 4), call("cudaLaunchKernel", 190, 192, 5), *ranges]}


def test_each_idle_gap_is_named_by_what_the_host_did():
    timing = program_timing(hand_built())
    assert timing.wall_s == pytest.approx(210e-6)
    assert timing.busy_s == pytest.approx(40e-6)
    assert timing.idle == IdleTime(sync_s=pytest.approx(5e-6), launch_s=pytest.approx(25e-6),
                                   copy_s=pytest.approx(20e-6), other_s=pytest.approx(120e-6))
    assert timing.steps is None


def test_item_synchronises():
    """``.item()``'s operator around the gap names it, whatever its runtime calls."""
    item = {"ph": "X", "cat": "cpu_op", "name": "aten::item", "ts": 2, "dur": 11}
    trace = hand_built()
    trace["traceEvents"] = [e for e in trace["traceEvents"]
                            if e["name"] != "cudaStreamSynchronize"] + [item]
    assert program_timing(trace).idle.sync_s == pytest.approx(8e-6)


def host_waits_then_works(wait_us: float, work_us: float) -> dict:
    """A step's kernel at 0-100 us, the host's ``.item()`` from 100 - wait_us until the
    kernel ends, then work_us of its own (a batch fetched, a loss logged) before it launches
    the next step's kernel, 500 us after its launch before (the host elsewhere)."""
    start = 100 + work_us
    return {"traceEvents": [
        kernel(0, 100, 1), kernel(start, start + 100, 2),
        call("cudaLaunchKernel", -10, -8, 1), call("cudaLaunchKernel", start - 10, start - 8, 2),
        {"ph": "X", "cat": "cpu_op", "name": "aten::item", "ts": 100 - wait_us,
         "dur": wait_us + 1}]}


@pytest.mark.parametrize("wait_us, work_us, sync_us", [
    (80, 20, 20),      # the GPU's step outlasts the host's: without the wait, no gap at all
    (80, 60, 60),
    (5, 4000, 5),      # a host-bound step (DCGAN's): the wait hides 5 us of its 4 ms
    (0.5, 4000, 0.5),
])
def test_a_synchronisation_costs_the_gap_only_as_long_as_the_host_had_waited(
        wait_us, work_us, sync_us):
    """Had the host not waited, it would have started its own work that much sooner and
    launched the next step that much sooner: a synchronisation names at most its wait of
    the gap after it, the rest is the host's work (DCGAN, host-bound, had read 1.12 s of
    its 1.5 s idle as synchronisation behind each step's ``.item()``)."""
    idle = program_timing(host_waits_then_works(wait_us, work_us)).idle
    assert idle.sync_s == pytest.approx(sync_us * 1e-6)
    assert idle.sync_s + idle.other_s == pytest.approx(work_us * 1e-6)


def test_profiler_steps_are_whole_steps_the_first_apart():
    trace = hand_built(annotation("ProfilerStep#1", 0, 45), annotation("ProfilerStep#2", 45, 130),
                       annotation("ProfilerStep#3", 130, 215))
    assert program_timing(trace).steps == Steps(count=3, step_s=pytest.approx(85e-6),
                                                warmup_s=pytest.approx(45e-6))


def test_a_repeated_top_level_range_ends_each_step():
    """``train`` repeats around ``inner``, which repeats as often: the outer one is the
    step; each step ends as one of its occurrences ends, the first from the region's start."""
    trace = hand_built(annotation("train", 20, 48), annotation("inner", 21, 30),
                       annotation("train", 50, 100), annotation("inner", 51, 60),
                       annotation("train", 110, 160), annotation("inner", 111, 120),
                       annotation("once", 0, 210), call("cudaLaunchKernel", 52, 53),
                       call("cudaLaunchKernel", 112, 113))
    assert program_timing(trace).steps == Steps(count=3, step_s=pytest.approx(56e-6),
                                                warmup_s=pytest.approx(48e-6))


def test_ranges_that_launch_nothing_or_only_trials_are_not_steps():
    """A compiled program's warm-up repeats TorchInductor's compile-time ranges many more
    times than it runs steps (an H200 step read '20 steps of 4.48 ms, GPU busy 0 ns'):
    a range whose occurrences launch nothing, or only the autotuner's trials, is passed
    over for the one that launches the program's kernels."""
    steps = [annotation("train", 20, 48), annotation("train", 50, 100),
             annotation("train", 110, 160), call("cudaLaunchKernel", 52, 53),
             call("cudaLaunchKernel", 112, 113)]
    compiling = [annotation("compile_fx_inner", 120 + 2 * i, 121 + 2 * i) for i in range(20)]
    tuned = [annotation("benchmark_gpu", 161 + i, 161.5 + i) for i in range(20)]
    trials = [annotation("rooflint.autotuning: TorchInductor's autotuner", 161, 185),
              *(call("cudaLaunchKernel", 161.1 + i, 161.2 + i) for i in range(20))]
    trace = hand_built(*steps, *compiling, *tuned, *trials)
    assert program_timing(trace).steps == Steps(count=3, step_s=pytest.approx(56e-6),
                                                warmup_s=pytest.approx(48e-6))


def test_the_optimizers_steps_are_the_steps_however_many_forward_passes_they_hold():
    """nanoGPT's DDP job (two H200s) runs DDP's forward more often than its optimizer
    steps (its evaluations' passes; gradients accumulated over micro-steps): its merged
    trace read 24 steps for 21 optimizer steps. Two micro-steps a step and an evaluation
    here: three steps, not seven."""
    launches = [call("cudaLaunchKernel", t, t + 1)
                for t in (7, 22, 42, 52, 102, 107, 112, 162, 182)]
    forwards = [annotation("DistributedDataParallel.forward", a, a + 5)
                for a in (5, 21, 45, 51, 105, 111, 181)]
    optimizer = [annotation("Optimizer.step#AdamW.step", a, a + 8) for a in (40, 100, 160)]
    collective = [annotation("nccl:all_reduce", a, a + 1) for a in range(30, 200, 10)]
    trace = hand_built(*launches, *forwards, *optimizer, *collective)
    assert program_timing(trace).steps == Steps(count=3, step_s=pytest.approx(60e-6),
                                                warmup_s=pytest.approx(48e-6))


def test_with_steps_the_time_is_the_steps_after_the_first():
    """The first step pays for warm-up: its kernels (0-10, 5-8, 30-40 us) and its gaps are
    left out; steps 2 and 3 run 45-215 us, busy 50-60 and 200-210."""
    trace = hand_built(annotation("ProfilerStep#1", 0, 45), annotation("ProfilerStep#2", 45, 130),
                       annotation("ProfilerStep#3", 130, 215))
    timing = program_timing(trace)
    assert timing.wall_s == pytest.approx(170e-6)
    assert timing.busy_s == pytest.approx(20e-6)
    assert timing.busy_s + timing.idle.total_s == pytest.approx(timing.wall_s)


def test_overlap_reads_only_the_spans_near_its_window_and_agrees_with_a_full_sum():
    """overlap bisects to the spans around its window (a ResNet-50's 21,000 idle gaps over
    all its spans took 43 s of a profile on an H200, 0.3 s this way); over random merged
    spans and windows, including windows that start or end on a span's edge, it sums what
    every span would."""
    rng = random.Random(7)
    for _ in range(300):
        spans = union((t, t + rng.choice([0.0, 0.5, 1.0, 3.0]))
                      for t in (rng.randrange(0, 60) for _ in range(rng.randrange(0, 25))))
        edges = [t for span in spans for t in span] + [rng.uniform(-5, 70) for _ in range(4)]
        start = rng.choice(edges)
        window = (start, start + rng.choice([0.0, 0.25, 1.0, rng.uniform(0, 40)]))
        full = sum(max(0.0, min(end, window[1]) - max(begin, window[0])) for begin, end in spans)
        assert overlap(spans, window) == pytest.approx(full)


def _kernel(name: str, start: float, end: float, process: int | None, device: int) -> dict:
    args = {"device": device, **({"process": process} if process is not None else {})}
    return {"ph": "X", "cat": "kernel", "name": name, "ts": start, "dur": end - start,
            "args": args}


ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def test_a_collective_is_exposed_where_no_kernel_of_its_own_rank_runs_beside_it():
    """Two ranks, by hand: rank 0's all-reduce (50-150 us) half under its GEMM (0-100 us),
    rank 1's (100-200 us) wholly after its own GEMM (0-60 us), and rank 0's GEMM hides
    nothing of rank 1's: exposed 50 and 100 us, a mean of 75 of 100."""
    from rooflint.formats.trace_timing import communication
    events = [_kernel("nvjet_sm90_tst_128x128", 0, 100, 11, 0),
              _kernel(ALL_REDUCE, 50, 150, 11, 0),
              _kernel("nvjet_sm90_tst_128x128", 0, 60, 12, 1),
              _kernel(ALL_REDUCE, 100, 200, 12, 1)]
    found = communication(events)
    assert found.ranks == 2
    assert found.collective_s == pytest.approx(100e-6)
    assert found.exposed_s == pytest.approx(75e-6)
    assert found.overlapped == pytest.approx(0.25)
    assert communication([e for e in events if "nccl" not in e["name"]]) is None


@pytest.mark.parametrize("seed", range(100))
def test_exposed_communication_is_the_collective_time_a_sweep_finds_uncovered(seed):
    """Property, one rank of PyTorch's profiler (no process named): exposed time is the
    collectives' union less its overlap with the other kernels' union, as a sweep over
    every microsecond counts it; never more than the collectives' time."""
    from rooflint.formats.trace_timing import communication
    rng = random.Random(seed)
    events = []
    for _ in range(rng.randint(1, 12)):
        start = rng.randrange(0, 500)
        name = ALL_REDUCE if rng.random() < 0.4 else "gemm"
        events.append(_kernel(name, start, start + rng.randrange(1, 80), None, 0))
    def covered(collectives: bool) -> set[int]:
        return {t for e in events if (e["name"] == ALL_REDUCE) == collectives
                for t in range(int(e["ts"]), int(e["ts"] + e["dur"]))}
    collective, others = covered(True), covered(False)
    found = communication(events)
    if not collective:
        assert found is None
        return
    assert found.collective_s == pytest.approx(len(collective) * 1e-6)
    assert found.exposed_s == pytest.approx(len(collective - others) * 1e-6)
    assert 0.0 <= found.overlapped <= 1.0


def test_a_one_gpu_trace_has_no_communication():
    assert program_timing(load("h200-step-trace.json")).communication is None


def test_kernel_steps_end_where_the_steps_last_kernel_recurs():
    """By hand: a warm-up kernel, then four steps of a, b, c (c the optimizer's): the steps
    end at each c, the first taking the warm-up; a kernel of no period (d, at 1, 2, 5) and a
    run of one kernel back to back make no steps."""
    from rooflint.formats.trace_timing import kernel_steps
    names = ["init", "a", "b", "c", "a", "b", "c", "a", "b", "c", "a", "b", "c"]
    kernels = [_kernel(name, 10 * i, 10 * i + 5, 1, 0) for i, name in enumerate(names)]
    assert kernel_steps(kernels) == [(0, 35), (35, 65), (65, 95), (95, 125)]
    assert kernel_steps([_kernel(n, 10 * i, 10 * i + 5, 1, 0)
                         for i, n in enumerate(["x", "d", "d", "y", "z", "d"])]) == []
    assert kernel_steps([_kernel("copy", 10 * i, 10 * i + 5, 1, 0) for i in range(9)]) == []


def _rank_kernels(trace: dict) -> dict[tuple, list[dict]]:
    ranks: dict[tuple, list[dict]] = {}
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel":
            ranks.setdefault((e["args"]["process"], e["args"]["device"]), []).append(e)
    return {rank: sorted(kernels, key=lambda e: e["ts"]) for rank, kernels in ranks.items()}


def test_a_ddp_jobs_collectives_a_step_are_what_its_steps_after_the_first_hold():
    """The recorded two-rank DDP job on two H200s (CUPTI's records, no host ranges): each
    rank's 4,412 kernels make 13 steps (3 warm-up steps and 10 timed, each ending at the
    fused AdamW's kernel); over the 12 after the first, a step's collective and exposed
    time are what a count over each rank's NCCL kernels in those steps gives, within 10 %
    (its other kernels' time a step too), and the first step's wait (DDP's first
    all-reduce, about 109 ms on rank 1) is not in them."""
    import lzma
    from rooflint.formats.trace_timing import kernel_steps
    trace = json.loads(lzma.open(REPO / "tests" / "fixtures" / "ranks" /
                                 "h200x2-ddp-nccl-pass1-trace.json.xz").read())
    found = program_timing(trace).communication
    assert found.ranks == 2 and found.steps == 13
    collective, exposed, own = [], [], []
    for kernels in _rank_kernels(trace).values():
        steps = kernel_steps(kernels)
        assert len(steps) == 13 and "multi_tensor_apply" in next(
            k["name"] for k in kernels if k["ts"] + k["dur"] == steps[1][1])
        start, end = steps[1][0], steps[-1][1]
        mine = [k for k in kernels if start <= k["ts"] and k["ts"] + k["dur"] <= end]
        nccl = [k for k in mine if k["name"].startswith("ncclDevKernel")]
        others = [(k["ts"], k["ts"] + k["dur"]) for k in mine
                  if not k["name"].startswith("ncclDevKernel")]
        collective.append(sum(k["dur"] for k in nccl) / 12)
        own.append(sum(k["dur"] for k in mine if not k["name"].startswith("ncclDevKernel")) / 12)
        exposed.append(sum(k["dur"] - sum(max(0, min(b, k["ts"] + k["dur"]) - max(a, k["ts"]))
                                          for a, b in others) for k in nccl) / 12)
    assert found.step_collective_s == pytest.approx(sum(collective) / 2 * 1e-6, rel=0.1)
    assert found.step_exposed_s == pytest.approx(sum(exposed) / 2 * 1e-6, rel=0.1)
    assert found.step_kernels_s == pytest.approx(sum(own) / 2 * 1e-6, rel=0.1)
    assert found.step_exposed_s * 12 < found.exposed_s / 2


def _operator(start: float, end: float, numbered: bool = True) -> dict:
    args = {"Sequence number": int(start)} if numbered else {}
    return {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": start, "dur": end - start,
            "pid": 1, "tid": 1, "args": args}


def test_the_hosts_time_once_a_step_is_what_lies_outside_its_forward_and_backward():
    """By hand, three steps of 100 us, the first left out. Step 2: autograd's operators
    from 110 to 150 us (forward and backward), its DataLoader's batches at 102-108 (outside
    them, a micro-batch's work) and 125-128 (inside): 100 - 40 - 6 = 54 us once. Step 3:
    from 230 to an operator that runs past the step's end at 300 (cut there), an
    unnumbered one (the optimizer's, under no_grad) among them: 100 - 70 = 30 us. The mean,
    42 us; nothing where no step after the first holds a numbered operator."""
    from rooflint.formats.trace_timing import once_a_step
    events = [_operator(20, 60), _operator(110, 120), _operator(130, 150),
              annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 102, 108),
              annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 125, 128),
              _operator(160, 190, numbered=False), _operator(230, 240), _operator(290, 310),
              _operator(250, 280, numbered=False)]
    steps = [(0.0, 100.0), (100.0, 200.0), (200.0, 300.0)]
    assert once_a_step(events, steps) == pytest.approx(42.0)
    assert once_a_step([e for e in events if e["ts"] < 100], steps) == 0.0
    assert once_a_step(events, steps[:1]) == 0.0
