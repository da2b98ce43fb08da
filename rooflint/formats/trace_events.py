"""Kernel launches from PyTorch's profiler trace: pass 1 of `rooflint profile` for a Python
program, with where each launch came from.

The trace (Chrome JSON, written by measure/trace_bootstrap.py) holds, per kernel, its
duration, grid and block from CUPTI, and a correlation id that ties it to the CUDA launch
call on the CPU; around that call, on the same thread, sit the PyTorch operator that made
it (``aten::mm``) and the range the bootstrap opened around the torch function call that
reached it, named after the program's line that made the call (LINE_RANGE). A kernel
launched from the backward pass runs on autograd's own thread, where PyTorch's backward
formulas have no Python frame: its operator's autograd node (``AddmmBackward0``) carries
the sequence number of the forward operator it differentiates, whose line is the one the
user wrote. The backward of the program's own torch.autograd.Function is Python, and a
launch from it carries its own line range there (Liger-Kernel's RMSNorm backward
launching its Triton kernel): that line is the one to change. A node that differentiates
no forward operator (AccumulateGrad, adding a gradient into a leaf's ``.grad``) is traced
to the line that ran the backward pass, held on another thread meanwhile. NVTX ranges
pushed through ``torch.cuda.nvtx`` are in the trace as profiler ranges
(``user_annotation``). The operator's input dtypes (recorded with its shapes) say which
tensor-core precisions its kernels can have run: the only ones pass 2 reads FLOPs for.

Pure: a parsed document in, launches out.
"""

from __future__ import annotations

import json
import re
import sys
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from rooflint.common.sense import Size
from rooflint.common.vocabularies import Precision

FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<function>.+)$")
# The ranges the bootstrap opens around each torch function call: this prefix, then the
# calling frame as FRAME reads it.
LINE_RANGE = "rooflint.line: "
# TorchDynamo's operator (a range in older releases) around each run of a compiled
# function: its Triton kernels run under no torch function call, and the line that
# launched them is the one that called the compiled function, which the line ranges of
# the region's other calls (its GEMMs, its allocations) name.
COMPILED_REGION = "Torch-Compiled Region"
# The ranges the bootstrap opens around an autotuner's benchmarking of candidate kernels
# (Triton's, TorchInductor's) and a benchmark's cache flushes: this prefix, then whose
# ("Triton's autotuner"). Their launches are not the program's work
# (judge/program_kernels.py leaves them out).
AUTOTUNING_RANGE = "rooflint.autotuning: "
# The ranges the bootstrap opens around a run of repeated calls (a do_bench call, whole) or
# around each recorded call of one (a DataLoader epoch's first batches): this prefix, who,
# the run's number; and the range at the end of a run that went on past its recorded
# calls: the same name, then how many calls, how many recorded. A launch inside the run's
# range stands for calls / recorded launches of its kernel.
SAMPLED_RANGE = "rooflint.sampled: "
SAMPLED_COUNT = re.compile(r"^(?P<run>rooflint\.sampled: (?P<who>.+) #\d+): (?P<calls>\d{1,15}) "
                           r"calls, (?P<recorded>\d{1,15}) recorded$")
AUTOGRAD_NODE = "autograd::engine::evaluate_function: "
# An ATen operator's kernels compute on its inputs' dtypes (after autocast's casts, which
# are operators of their own), so the tensor-core precisions they can run are these, by the
# dtype names the profiler writes in an operator's "Input type" (record_shapes). Pass 2
# reads the tensor FLOPs of only the precisions its kernels' operators name: each costs up
# to three replay passes of every profiled launch. Only the operators that can reach a
# tensor core name one, their first tensor input's: products, convolutions, attention
# and recurrent cells (an element-wise add of fp32 tensors runs no TF32 MMA; an attention
# backward's fp32 log-sum-exp input is not what its MMAs take; a tensor pipe busy where no
# FLOPs were read shows in ncu.TENSOR_PIPE). Any other operator (a custom op, a compiled
# region) may run anything.
ATEN = "aten::"
TENSOR_CORE_OPERATOR = re.compile(r"mm|matmul|linear|einsum|tensordot|conv|attention|rnn"
                                  r"|lstm|gru")
TENSOR_PRECISION_OF_DTYPE = {
    "c10::Half": Precision.FP16_TENSOR, "c10::BFloat16": Precision.BF16_TENSOR,
    "float": Precision.TF32_TENSOR, "double": Precision.FP64_TENSOR,
    "signed char": Precision.INT8_TENSOR, "unsigned char": Precision.INT8_TENSOR,
    **{f"c10::Float8_{kind}": Precision.FP8_TENSOR
       for kind in ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz")},
}

# Bytes per element by the same names, for the casts: a copy whose destination (aten::copy_'s
# first input) is wider than its source writes an upcast for an operator autocast runs in
# fp32 (the loss, a softmax), not a weight cast.
DTYPE_BYTES = {"double": 8, "long int": 8, "float": 4, "int": 4, "c10::BFloat16": 2,
               "c10::Half": 2, "short int": 2, "bool": 1, "signed char": 1, "unsigned char": 1,
               **{f"c10::Float8_{kind}": 1 for kind in ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz")}}
COPY = "aten::copy_"
# The most device memory the program's allocator held, as measure/trace_bootstrap.py (which
# imports nothing of rooflint) writes it at the trace's top level.
PEAK_RESERVED = "rooflint_peak_reserved_bytes"
# The versions of PyTorch, its CUDA and its cuDNN, as the bootstrap writes them there.
LIBRARIES = "rooflint_libraries"
# The optimizer step the bootstrap ended the program at (profile's --stop-after), there too.
STOPPED = "rooflint_stopped_at_step"


@dataclass
class Launch:
    """One kernel launch in the trace."""

    name: str                      # demangled by the C++ runtime
    grid: str                      # "(8, 64, 1)", as Nsight Compute writes it
    block: str
    duration_s: float
    start_us: float
    stream: str = ""               # the CUDA stream it ran on, as CUPTI numbers it
    traced_call: bool = False      # its launch call is in the trace: where it came from is known
    operator: str | None = None    # the PyTorch operator that launched it: "aten::mm"
    backward_of: str | None = None  # its autograd node, for a backward kernel: "AddmmBackward0"
    line: str | None = None        # the user's Python line: "model.py:62 in forward"
    via: str | None = None         # the program's line, where ``line`` is a package's
    ranges: tuple[str, ...] = ()   # the NVTX / profiler ranges around its launch
    dtypes: tuple[str, ...] | None = None  # its ATen operator's input dtypes ("float"); None:
    #                                        no ATen operator launched it, or none recorded
    inputs: str | None = None      # its ATen operator, input dims and types, as one text;
    #                                None: no ATen operator launched it, or none recorded
    autotuner: str | None = None   # the benchmarking that launched it: "Triton's autotuner"
    weight: float = 1.0            # the launches it stands for: more than one where a run
    #                                of repeated calls recorded only its first (SAMPLED_RANGE)
    graph: bool = False            # launched by a CUDA graph's replay (cudaGraphLaunch)
    registers: int = 0             # per thread, as CUPTI recorded the kernel (0: not given)
    shared_bytes: int = 0          # per block, static and dynamic (CUPTI's)

    @property
    def tensor_precisions(self) -> frozenset[str] | None:
        """The tensor-core precisions its kernel can have run; None: any."""
        if self.dtypes is None:
            return None
        if not TENSOR_CORE_OPERATOR.search(self.operator or ""):
            return frozenset()
        first = next((t for t in self.dtypes if t in TENSOR_PRECISION_OF_DTYPE), None)
        return frozenset([TENSOR_PRECISION_OF_DTYPE[first]] if first else [])

    @property
    def widens(self) -> bool:
        """A copy to a wider dtype than its source's (bf16 logits to fp32)."""
        if self.operator != COPY or not self.dtypes or len(self.dtypes) != 2:
            return False
        destination, source = (DTYPE_BYTES.get(t, 0) for t in self.dtypes)
        return destination > source > 0


def tensor_precisions(launches: Iterable[Launch]) -> frozenset[str] | None:
    """The tensor-core precisions some launches' kernels can have run; None: any."""
    return union_unless_any(x.tensor_precisions for x in launches)


def union_unless_any(precisions: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    """The union of some sets of precisions, where None (any precision) absorbs the rest."""
    found: set[str] = set()
    for mine in precisions:
        if mine is None:
            return None
        found |= mine
    return frozenset(found)


@dataclass
class Origin:
    """Where a kernel's launches came from, the most frequent first."""

    operator: str | None
    line: str | None
    backward_of: str | None = None
    launches: int = 0
    via: str | None = None         # the program's line that called ``line``, a package's
    time_s: float = 0.0            # the GPU time of its launches (0: timed by no trace)

    @property
    def short(self) -> str:
        """``aten::mm, model.py:62``: what a table has room for."""
        return ", ".join(filter(None, [self.operator, self.line and self.line.split(" in ")[0]]))

    @property
    def words(self) -> str:
        """``by aten::mm (backward: AddmmBackward0) at model.py:62 in forward``, ``at
        softmax.py:40 in softmax`` (a Triton kernel the program launched itself), or
        ``outside PyTorch's operators``: what follows "launched"."""
        parts = ([f"by {self.operator}"] if self.operator else
                 [] if self.line else ["outside PyTorch's operators"])
        if self.backward_of and self.backward_of != self.operator:   # CompiledFunctionBackward
            parts.append(f"(backward: {self.backward_of})")
        if self.line:
            parts.append(f"at {self.line}")
        if self.via:
            parts.append(f"(from {self.via})")
        return " ".join(parts)


def peak_reserved_bytes(trace: dict[str, Any]) -> int | None:
    """The most device memory the program's PyTorch allocator held; None where the trace
    does not say (an older PyTorch, a program that never touched CUDA)."""
    value = trace.get(PEAK_RESERVED)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return int(value) if number and value >= 0 else None


def stopped_at_step(trace: dict[str, Any]) -> int | None:
    """The optimizer step at which the bootstrap ended the program (profile's --stop-after);
    None where it ran to its own end (or the trace does not say)."""
    value = trace.get(STOPPED)
    text = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    return int(text) if re.fullmatch(r"[0-9]{1,9}", text) and int(text) > 0 else None


def origins(launches: Iterable[Launch]) -> list[Origin]:
    """Every distinct origin of some launches, with its launches and their GPU time, the
    most time first; those with a line before those without, and launches with none known
    last (a Triton kernel's launches past the bootstrap's first LINED_LAUNCHES carry no
    line, and are the same kernel's: a sweep's 163 unlined launches of Liger-Kernel's
    RMSNorm backward had put its line out of the table). None is dropped: a Llama's
    RMSNorm read a third of its size when only three lines per kernel were kept. A launch
    whose call the trace lacks (CUPTI's records of a program with no PyTorch hold kernels
    alone) has none."""
    tally: Counter = Counter()
    times: Counter = Counter()
    for x in launches:
        if x.traced_call:
            key = (x.operator, x.line, x.backward_of, x.via)
            tally[key] += 1
            times[key] += x.duration_s * x.weight
    known = sorted(tally, key=lambda key: (not any(key), key[1] is None, -times[key],
                                           -tally[key]))
    return [Origin(op, line, backward, tally[op, line, backward, via], via,
                   times[op, line, backward, via])
            for op, line, backward, via in known]


@dataclass(frozen=True)
class Unrecorded:
    """The calls of one kind of repeated call (SAMPLED_RANGE) that a trace did not record:
    their launches are counted from the recorded ones."""

    by: str                          # "Triton's do_bench", "PyTorch's DataLoader"
    calls: Size                      # not recorded, over all its runs
    recorded: Size                   # the calls each run recorded, at its start


def unrecorded(trace: dict[str, Any]) -> list[Unrecorded]:
    """What the repeated calls of ``trace`` left unrecorded, by whose, first seen first."""
    counts: dict[str, list[int]] = {}
    for e in trace.get("traceEvents", []):
        match = (SAMPLED_COUNT.match(str(e.get("name", "")))
                 if isinstance(e, dict) and e.get("cat") == "user_annotation" else None)
        if _went_past(match):
            mine = counts.setdefault(match["who"], [0, 0])
            mine[0] += int(match["calls"]) - int(match["recorded"])
            mine[1] = max(mine[1], int(match["recorded"]))
    return [Unrecorded(by, calls, recorded) for by, (calls, recorded) in counts.items()]


def _went_past(count: re.Match | None) -> bool:
    """Whether a run's count says it went on past the calls it recorded (a trace the
    bootstrap wrote always does; any other count is not read)."""
    return count is not None and 0 < int(count["recorded"]) < int(count["calls"])


KERNEL = "kernel"        # a kernel's event: its category in the trace
# In a collective kernel's args, its call's own time in microseconds (the shortest of its
# ranks' kernels: judge/collectives.with_calls_own_time), which its launch is counted at:
# the rest of its duration (``dur``, which the program's timing reads) was a wait for a peer.
CALL_TIME = "rooflint_call_us"

# NCCL's collectives (ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclKernel_...): kernels that
# wait on their peers on the other GPUs.
COLLECTIVE = re.compile(r"nccl")
# The runtime or driver call that replays a CUDA graph: cudaGraphLaunch, cuGraphLaunch.
GRAPH_LAUNCH = "GraphLaunch"


# A kernel event's arguments for what each of its blocks needs, as PyTorch's profiler names
# them (CUPTI's kernel record: the shared memory is its static and dynamic together).
REGISTERS, SHARED_MEMORY = "registers per thread", "shared memory"
# torch.optim's range around each optimizer step ("Optimizer.step#AdamW.step"), on the host:
# once a training step (nanoGPT's DDP job runs more forward passes, its evaluations', than
# steps, and a job that accumulates gradients several a step). PyTorch 2.11's traces carry
# it projected onto the GPU's timeline too, in the category GPU_ANNOTATION.
OPTIMIZER_STEP, GPU_ANNOTATION = "Optimizer.step#", "gpu_user_annotation"


def optimizer_steps(trace: dict[str, Any]) -> list[float]:
    """When each of the program's optimizer steps ended (us, the trace's clock), in order:
    the steps of the first optimizer's class to step (a GAN's two Adams are both counted), as
    the host ran them (their projections onto the GPU are not steps of their own)."""
    steps = sorted((e for e in trace.get("traceEvents", [])
                    if isinstance(e, dict) and str(e.get("name", "")).startswith(OPTIMIZER_STEP)
                    and e.get("ph") == "X" and e.get("cat") != GPU_ANNOTATION),
                   key=lambda e: float(e.get("ts", 0.0)))
    if not steps:
        return []
    first = steps[0]["name"]
    return [float(e["ts"]) + float(e.get("dur", 0.0)) for e in steps if e["name"] == first]


def _whole(value: Any) -> int:
    """A count from the trace; 0 where it gives none or not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def launches(trace: dict[str, Any]) -> list[Launch]:
    """Every kernel launch in ``trace``, in launch order, with its origin."""
    # an event whose name is not text (a foreign or hand-edited trace) is not read
    events = [e for e in trace.get("traceEvents", [])
              if isinstance(e, dict) and isinstance(e.get("name", ""), str)]
    calls, kernels = {}, []
    for e in events:
        category = e.get("cat")
        if category in ("cuda_runtime", "cuda_driver"):
            args = e.get("args")
            if isinstance(args, dict) and "correlation" in args:
                calls[args["correlation"]] = e
        elif category == KERNEL and "grid" in e.get("args", {}):
            kernels.append(e)
    scopes = _Scopes(events)
    found = []
    for kernel in kernels:
        call = calls.get(kernel["args"].get("correlation"))
        launch = Launch(name=str(kernel.get("name", "")), grid=shape_text(kernel["args"]["grid"]),
                        block=shape_text(kernel["args"].get("block", [])),
                        duration_s=float(kernel["args"].get(CALL_TIME,
                                                            kernel.get("dur", 0.0))) * 1e-6,
                        start_us=float(call["ts"] if call else kernel.get("ts", 0.0)),
                        stream=str(kernel["args"].get("stream", "")),
                        traced_call=call is not None,
                        graph=bool(call) and GRAPH_LAUNCH in str(call.get("name", "")),
                        registers=_whole(kernel["args"].get(REGISTERS)),
                        shared_bytes=_whole(kernel["args"].get(SHARED_MEMORY)))
        if call:
            scopes.attribute(launch, call)
        found.append(launch)
    return sorted(found, key=lambda x: x.start_us)


def launch_count(trace: dict[str, Any]) -> int:
    """How many kernel launches ``trace`` holds, as launches reads them."""
    return sum(1 for e in trace.get("traceEvents", []) if isinstance(e, dict)
               and e.get("cat") == KERNEL and isinstance(e.get("name", ""), str)
               and "grid" in e.get("args", {}))


def shape_text(values: Any) -> str:
    """``[8, 64, 1]`` -> ``(8, 64, 1)``: the way Nsight Compute writes a grid or block."""
    return "(" + ", ".join(str(int(v)) for v in values) + ")" if values else ""


@dataclass
class _Intervals:
    """Properly nested intervals on one thread (a call stack over time), for 'what holds
    this moment': the last interval to start before it, or one of its ancestors."""

    starts: list[float] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, events: list[dict]) -> "_Intervals":
        ordered = sorted(events, key=lambda e: (e["ts"], -e.get("dur", 0.0)))
        parents, open_ = [], []
        for i, event in enumerate(ordered):
            while open_ and _end(ordered[open_[-1]]) < event["ts"]:
                open_.pop()
            parents.append(open_[-1] if open_ else -1)
            open_.append(i)
        return cls([e["ts"] for e in ordered], ordered, parents)

    def around(self, moment: float) -> list[dict]:
        """The intervals that hold ``moment``, outermost first."""
        i = bisect_right(self.starts, moment) - 1
        while i >= 0 and _end(self.events[i]) < moment:
            i = self.parents[i]
        held = []
        while i >= 0:
            held.append(self.events[i])
            i = self.parents[i]
        return held[::-1]

    def within(self, outer: dict) -> list[dict]:
        """The intervals that start inside ``outer``, in order."""
        first = bisect_right(self.starts, outer["ts"] - 1e-9)
        last = bisect_right(self.starts, _end(outer))
        return self.events[first:last]


def _end(event: dict) -> float:
    return event["ts"] + event.get("dur", 0.0)


def _process(event: dict) -> tuple[Any, Any]:
    """The process an operator ran in: its rank's mark in a launcher's merged trace
    (formats/ranks.merged), and its pid."""
    return (event.get("args") or {}).get("process"), event.get("pid")


def _is_line_range(event: dict) -> bool:
    """Whether ``event`` is one of the bootstrap's line ranges: a ``user_annotation``, or,
    where PyTorch has its C++ range (trace_bootstrap._line_range), a ``cpu_op`` by its
    name, not an operator."""
    return event.get("cat") in ("user_annotation", "cpu_op") \
        and str(event.get("name", "")).startswith(LINE_RANGE)


class _Scopes:
    """The operators and ranges of a trace, by thread."""

    def __init__(self, events: list[dict]):
        operators, ranges, frames, numbered = [], [], [], []
        for e in events:               # one reading of the trace's timed events, in order
            if e.get("ph") != "X" or "ts" not in e:
                continue
            category = e.get("cat")
            if category == "user_annotation" or _is_line_range(e):
                ranges.append(e)
            elif category == "cpu_op":
                operators.append(e)
                if (e.get("args") or {}).get("Sequence number") is not None \
                        and "Backward" not in e["name"] and not e["name"].startswith(AUTOGRAD_NODE):
                    numbered.append(e)
            elif category == PYTHON_FRAME:
                frames.append(e)
        self.operators = _by_thread(operators)
        self.lines = _by_thread([e for e in ranges if e["name"].startswith(LINE_RANGE)])
        # a trace the bootstrap did not write (torch.profiler's, with_stack=True): its
        # Python frames stand for the line ranges, the nearest of the program's the line
        self.frames = not self.lines
        if self.frames:
            self.lines = _by_thread([e for e in frames if _programs_frame(e["name"])])
        self.autotuning = _by_thread([e for e in ranges
                                      if e["name"].startswith(AUTOTUNING_RANGE)])
        sampled = [e for e in ranges if e["name"].startswith(SAMPLED_RANGE)]
        self.sampled = _by_thread([e for e in sampled if not SAMPLED_COUNT.match(e["name"])])
        self.weights = {m["run"]: int(m["calls"]) / int(m["recorded"])
                        for e in sampled for m in [SAMPLED_COUNT.match(e["name"])]
                        if _went_past(m)}
        # by process: a launch is inside its own process's ranges (on any of its threads:
        # autograd's backward runs under the range its main thread opened), not another
        # rank's of a merged job that held the same moment
        self.ranges = _by_pid([e for e in ranges if not e["name"].startswith(
            (LINE_RANGE, AUTOTUNING_RANGE, SAMPLED_RANGE))])
        # (process, sequence number) -> the forward operators that carry it, in time order:
        # a number is unique among one step's differentiable operators of one process (a
        # launcher's ranks, merged into one trace, number theirs alike), but the operators
        # a program runs before any (a model's .cuda(), its .detach()es) carry 0 as well.
        self.forward: dict[Any, list[dict]] = {}
        for e in sorted(numbered, key=lambda e: e["ts"]):
            self.forward.setdefault((_process(e), e["args"]["Sequence number"]), []).append(e)

    def attribute(self, launch: Launch, call: dict) -> None:
        """Set ``launch``'s operator, autograd node, Python line and ranges from its call."""
        thread = (call.get("pid"), call.get("tid"))
        operators = self.operators.get(thread, _Intervals()).around(call["ts"])
        launch.operator = operators[-1]["name"] if operators else None
        launch.dtypes = _input_dtypes(operators[-1]) if operators else None
        launch.inputs = _inputs(operators[-1]) if operators else None
        launch.ranges = tuple(dict.fromkeys(e["name"] for e in self._ranges(thread, call["ts"])))
        tuning = self.autotuning.get(thread, _Intervals()).around(call["ts"])
        launch.autotuner = tuning[0]["name"].removeprefix(AUTOTUNING_RANGE) if tuning else None
        launch.weight = self._weight(thread, call["ts"])
        node = next((e for e in operators if e["name"].startswith(AUTOGRAD_NODE)), None)
        at = call
        if node is not None:
            launch.backward_of = node["name"].removeprefix(AUTOGRAD_NODE)
            own = self.lines.get(thread, _Intervals()).around(call["ts"])
            if own:       # the program's own backward (a torch.autograd.Function's) launched it
                launch.line, launch.via = self._line_and_caller(own)
                return
            forward = self._forward_of(node)
            if forward is None:   # none (AccumulateGrad's): the line that ran backward()
                launch.line, launch.via = self._line_and_caller(
                    self._lines_elsewhere(thread, call["ts"]))
                return
            at, thread = forward, (forward.get("pid"), forward.get("tid"))
        launch.line, launch.via = self._lines_at(thread, at["ts"])

    def _weight(self, thread: tuple[Any, Any], moment: float) -> float:
        """How many launches one at ``moment`` stands for: calls / recorded of the innermost
        recorded call of a run around it; 1 where none, or its run recorded every call."""
        runs = self.sampled.get(thread, _Intervals()).around(moment)
        return self.weights.get(runs[-1]["name"], 1.0) if runs else 1.0

    def _ranges(self, thread: tuple[Any, Any], moment: float) -> list[dict]:
        """The ranges ``thread``'s process holds at ``moment``, outermost first."""
        return self.ranges.get(thread[0], _Intervals()).around(moment)

    def _lines_elsewhere(self, thread: tuple[Any, Any], moment: float) -> list[dict]:
        """The line ranges another thread of its process holds at ``moment``, outermost
        first: the call (``loss.backward()``) that autograd's thread works for meanwhile;
        of several threads holding some, the one whose innermost range began last."""
        stacks = [held for other, lines in self.lines.items()
                  if other != thread and other[0] == thread[0]
                  for held in [lines.around(moment)] if held]
        return max(stacks, key=lambda held: held[-1]["ts"], default=[])

    def _forward_of(self, node: dict) -> dict | None:
        """The forward operator an autograd node differentiates: the last one before it
        with its sequence number."""
        carriers = self.forward.get(
            (_process(node), (node.get("args") or {}).get("Sequence number")), [])
        before = bisect_left([e["ts"] for e in carriers], node["ts"])
        return carriers[before - 1] if before else None

    def _lines_at(self, thread: tuple[Any, Any], moment: float) -> tuple[str | None, str | None]:
        """The line around ``moment`` and, where that is an installed package's, the
        program's that called it (the bootstrap's two nested ranges): the innermost line
        range; inside a compiled region with none around it, the region's first; else none
        (a kernel launched outside any torch call, as a Triton kernel the program calls
        itself)."""
        lines = self.lines.get(thread, _Intervals())
        calls = lines.around(moment)
        if not calls:
            scopes = [*self.operators.get(thread, _Intervals()).around(moment),
                      *self._ranges(thread, moment)]
            region = next((r for r in scopes if r["name"].startswith(COMPILED_REGION)), None)
            calls = lines.within(region)[:1] if region is not None else []
        return self._line_and_caller(calls)

    def _line_and_caller(self, calls: list[dict]) -> tuple[str | None, str | None]:
        """The line and the program's line that called it, of the line ranges ``calls``
        (outermost first); of Python frames, the innermost alone: they tell no installed
        package from the program, so the outermost is the program's entry (its
        ``<module>``), not a line that called on its behalf."""
        return _line_and_caller(calls[-1:] if self.frames else calls)


# PyTorch's profiler's Python frames (with_stack=True), each named ``file(line):
# function`` by the line its function begins at (it records calls, not lines), the file
# relative to the sys.path entry it was found under (``torch/nn/modules/linear.py``,
# ``typing.py``, the program's ``train.py``), or absolute where none held it. The frames of
# these packages and of Python's standard library are not the program's.
PYTHON_FRAME = "python_function"
NOT_THE_PROGRAMS = frozenset({"torch", "triton", "functorch", "torchgen", "torchvision",
                              "torchaudio", "pytorch_triton"})
INSTALLED = ("site-packages", "dist-packages")


def _programs_frame(name: str) -> bool:
    """Whether a Python frame of the profiler's is the program's own code: neither
    PyTorch's nor another of NOT_THE_PROGRAMS, nor the standard library's, nor a
    built-in (``<built-in method ...>``), nor a module's range (``nn.Module: Linear_0``)."""
    frame = FRAME.match(name)
    if frame is None or frame["file"].startswith("<"):
        return False
    parts = frame["file"].split("/")
    installed = [i for i, part in enumerate(parts) if part in INSTALLED]
    if installed:
        parts = parts[installed[-1] + 1:]
    elif frame["file"].startswith("/") and re.search(r"/lib/python3[\d.]*/", frame["file"]):
        return False
    top = parts[0].removesuffix(".py")
    return top not in NOT_THE_PROGRAMS and top not in sys.stdlib_module_names


def _line_and_caller(calls: list[dict]) -> tuple[str | None, str | None]:
    """The innermost of the line ranges ``calls`` and, where it is not the only one, the
    outermost (the program's line, where the innermost is an installed package's)."""
    # a torch call inside a Triton launch (its tensors' data_ptr) names the line again
    named = list(dict.fromkeys(_line(c["name"].removeprefix(LINE_RANGE)) for c in calls))
    return (named[-1], named[0]) if len(named) > 1 else (named[0] if named else None, None)


def _input_dtypes(operator: dict) -> tuple[str, ...] | None:
    """The dtypes of an ATen operator's inputs that have at least one dimension, as the
    profiler recorded them (tensor lists and scalars have none; a 0-d tensor, as the double
    that gradient clipping multiplies by, feeds no matrix product); None for any other
    operator, or a trace without input types."""
    args = operator.get("args") or {}
    types, dims = args.get("Input type"), args.get("Input Dims")
    if not operator["name"].startswith(ATEN) or not isinstance(types, list):
        return None
    dims = dims if isinstance(dims, list) and len(dims) == len(types) else [[1]] * len(types)
    return tuple(t for t, d in zip(types, dims) if isinstance(t, str) and t and d)


def _inputs(operator: dict) -> str | None:
    """An ATen operator's name with its inputs' dims and types as the profiler recorded
    them (record_shapes), as one text: what a PyTorch kernel's work depends on beside its
    launch shape (a reduction's fixed grid reads any length); None for any other operator,
    or a trace without them."""
    args = operator.get("args") or {}
    if not operator["name"].startswith(ATEN) or "Input Dims" not in args:
        return None
    return json.dumps([operator["name"], args.get("Input Dims"), args.get("Input type")])


def libraries(trace: dict[str, Any]) -> dict[str, Any] | None:
    """The versions of PyTorch, its CUDA and its cuDNN the program ran (the bootstrap writes
    them); None where the trace does not say."""
    value = trace.get(LIBRARIES)
    return value if isinstance(value, dict) and value.get("torch") else None


def _by_pid(events: list[dict]) -> dict[Any, _Intervals]:
    processes: dict[Any, list[dict]] = {}
    for e in events:
        processes.setdefault(e.get("pid"), []).append(e)
    return {pid: _Intervals.of(items) for pid, items in processes.items()}


def _by_thread(events: list[dict]) -> dict[tuple[Any, Any], _Intervals]:
    threads: dict[tuple[Any, Any], list[dict]] = {}
    for e in events:
        threads.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    return {thread: _Intervals.of(items) for thread, items in threads.items()}


def _line(frame: str) -> str:
    """``/home/me/model.py(62): forward`` -> ``model.py:62 in forward`` (a range named
    otherwise, by something other than the bootstrap, as it is)."""
    match = FRAME.match(frame)
    if match is None:
        return frame
    return f"{match['file'].rsplit('/', 1)[-1]}:{match['line']} in {match['function']}"


# What torch.profiler records only when asked, by the option that asks for it: the CPU's
# activity (the operators behind each kernel), the operators' input shapes and dtypes, and
# the Python stack (the program's lines; the bootstrap's line ranges stand for it).
CPU_ACTIVITY, RECORD_SHAPES, WITH_STACK = "ProfilerActivity.CPU", "record_shapes", "with_stack"


def recorded_without(trace: dict[str, Any], found: list[Launch]) -> list[str]:
    """The options above that ``trace``, whose launches are ``found``, was recorded
    without: a trace PyTorch's profiler wrote for its user, asked for no more than its
    kernels (``prof.export_chrome_trace``), has no shapes and no stack."""
    if not any(x.operator for x in found):
        return [CPU_ACTIVITY]
    lacks = [] if any(x.inputs for x in found) else [RECORD_SHAPES]
    frames = any(isinstance(e, dict) and e.get("cat") == PYTHON_FRAME
                 for e in trace.get("traceEvents", []))
    return lacks if frames or any(x.line for x in found) else [*lacks, WITH_STACK]
