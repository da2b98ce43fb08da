"""Run a Python program under PyTorch's profiler: pass 1 of `rooflint profile` at the
program's own speed.

Executed as a script by the *program's* interpreter (``python trace_bootstrap.py TRACE
PREFIX -- train.py ARGS``), so it imports nothing from rooflint, which that interpreter may
not have.
It runs the program as ``python train.py ARGS`` (or ``-m module``, ``-c code``) would, with
the profiler recording CUDA activity (every kernel's duration, grid, block, registers,
shared memory, from CUPTI, whoever launched it: PyTorch, Triton, cuBLAS, CuPy) and CPU
operators (which operator launched each kernel, and the dtypes of its inputs: the tensor
precisions pass 2 reads), and writes the trace as Chrome JSON to
TRACE. NVTX ranges pushed through ``torch.cuda.nvtx`` are recorded as profiler ranges too,
so ``--nvtx`` can select launches in the trace. The profiler starts when the program first
imports torch or another library it launches kernels through (STARTING_IMPORTS), not
before the program: what the program sets in its environment before that import
(TORCH_LOGS, TORCHINDUCTOR_...) holds as it would without rooflint. A program whose first
such import is CuPy's, JAX's or another library's but PyTorch's or Triton's gets CUPTI's
recorder instead, where rooflint offers one (PROFILED_IMPORTS): no torch imported into it.

Which line of the program called each operator: every torch function the program calls runs
inside a profiler range named PREFIX + ``file(line): function``, the program's own frame
nearest the call (PyTorch's C++ range where it has one, _line_range; none around a call
that launches nothing, NO_LAUNCH). A compiled function's calls and kernels, which
TorchInductor's generated code makes, get the model's lines that code was compiled from, as
TorchInductor recorded them (_InductorLines), forward and backward alike; where it recorded
none, the line that called the compiled function (PyTorch's profiler records Python frames
only by the line each function starts at, and recording them all makes a compiled program's
trace gigabytes). Where the call was made by an installed package's code on the program's
behalf (a Hugging Face model's ``modeling_gpt2.py``, whose every kernel the program's one
``model(batch)`` line launches), a second range inside the first names the package's frame
nearest the call. A Triton kernel the program launches itself (``kernel[grid](...)``, no
torch function in between) gets the same ranges around Triton's launch.

Autotuners time candidate kernels before they pick one: Triton's ``@triton.autotune``
(every config of a kernel, on the first call for each key) and TorchInductor's (the
configs of a compiled kernel, its coordinate descent under ``max-autotune``). Those
launches are the tuner's, not the program's steps, and a losing config's trials can
outweigh the kernel the program then runs; each benchmarking call runs inside a profiler
range named AUTOTUNING + the tuner, so the analysis can leave them out. So do the
L2 flushes of Triton's ``do_bench`` between the runs it times (46 % of the GPU time of
Triton's fused-softmax tutorial, a sweep of do_bench calls).

Some calls repeat one piece of work thousands of times, and recording each adds nothing
but trace: a benchmark function timing a function until the times add up (Triton's
``do_bench``: 100 ms of calls after 25 ms of warm-up, twenty thousand calls of a function
of a few small kernels), and a DataLoader fetching batches (every sample's indexing and
collation a few CPU operators: attorch's regression example, 14 s plain, recorded
425,860 CPU operators in one epoch of its two models; its ten, a 2.14 GiB trace in pass
1's 130 s). Each run of such a call (a do_bench call; a DataLoader iterator's epoch) is
recorded for its first calls (REPEATED says how many) inside a range SAMPLED + ``who #n``
(around the do_bench call; around each recorded fetch); after them, the profiler's
collection is paused (a do_bench run's rest; each later batch's fetch), and a range
``SAMPLED who #n: N calls, K recorded`` at the run's end says how many there were, so that
the analysis counts each recorded launch as N / K launches of its kernel. Kernels still
running while the collection is paused are recorded (a probe on an H100: 160 of 160
GEMMs of 25 ms each, four queued before each paused fetch).

Triton's launches, the tuners' benchmarking, the flushes and the repeated calls are
wrapped as their modules are imported (_WrappedOnImport; nothing is imported here: a
program that never uses Triton does not pay for importing it). A release that renamed a
method is simply not wrapped.

A training program that runs for hours is profiled on its first steps: with STEPS above 0
(``python trace_bootstrap.py TRACE PREFIX STEPS -- train.py ARGS``) the program is ended
once its first optimizer (the first ``torch.optim`` optimizer to step: a GAN's
discriminator, whose generator steps as often) has stepped STEPS times (_StepLimit), its
trace written with STOPPED, the step it ended at, and its exit status 0.

Exit status: the program's own. Status 3 with nothing written means PyTorch is not
importable here (the program is not run); a program that imported none of
STARTING_IMPORTS, or whose PyTorch's profiler failed to start, runs untraced and leaves
no trace. Either way rooflint times the launches another way.

Pass 2 starts the program through this file too, with no profiler (``python
trace_bootstrap.py --pass-two STEPS -- train.py ARGS``): the program run as above, with
TorchDynamo imported right after its own ``import torch`` (see _import_dynamo), its
DataLoaders' batches not pinned (DATALOADER_INIT), and ended at the same optimizer step as
pass 1's. Pass 2 by rotation (``python trace_bootstrap.py --rotation CONFIG -- train.py
ARGS``) runs it so too, and measures it from its optimizer's steps (_Rotation).
"""

import ast
import functools
import importlib.machinery
import importlib.util
import json
import linecache
import os
import re
import runpy
import socket
import sys
import threading
import time
import weakref
from contextlib import contextmanager

NO_PROFILER = 3
# The first argument that starts the program for pass 2: no profiler, TorchDynamo imported
# with the program's torch (measure/program.py imports the name).
PASS_TWO = "--pass-two"
# The first argument that starts the program for pass 2 by rotation (_Rotation), the next a
# JSON file of ROTATION_FIELDS (measure/rotation.py writes it); and what is appended to the
# engine's records' path for the file that says why the rotation failed.
ROTATION = "--rotation"
ROTATION_FIELDS = ("engine", "metrics", "max_ranges", "warm_up", "most_steps", "chosen",
                   "path")
FAILED = ".failed"
# Written beside the rotation's configuration once the program waits for it: a program that
# has not (no import of STARTING_IMPORTS) may have run on the GPU beside pass 1.
WAITING = ".waiting"
# Written beside it by rooflint once pass 1 is over: the waiting program may then run on
# the GPU up to its first optimizer's first step's end (its CUDA context, its model, cuDNN's
# benchmark), beside rooflint's reading of pass 1, and waits there for the configuration.
GO = ".go"
CONFIG_POLL_S = 0.05
# The imports that start pass 1's profiler, once they have run: PyTorch's, or that of
# another library a Python program launches kernels through, whichever the program
# imports first. Not before the program: a program that sets PyTorch's environment
# (TORCH_LOGS, TORCHINDUCTOR_..., TORCHDYNAMO_...) in its own code before importing torch
# would be profiled without it.
STARTING_IMPORTS = ("torch", "cupy", "jax", "triton", "numba", "cuda", "pycuda")
# The first imports PyTorch's profiler starts at. A program whose first of STARTING_IMPORTS
# is another library's (CuPy, JAX...) is recorded instead by CUPTI's recorder
# (measure/kernel_trace.py), where rooflint offers it, in the environment variable RECORDER:
# PyTorch's profiler would import torch into it (pass 1 of a JAX training loop took 17.2 s
# against 12.0 s plain, H100), and gives such a program's kernels no operator or line.
PROFILED_IMPORTS = ("torch", "triton")
RECORDER = "ROOFLINT_KERNEL_RECORDER"
# The folder the recorder writes its records into, one file a process (kernel_trace.py).
RECORDS = "ROOFLINT_KERNEL_TRACE"
# The variable the CUDA driver reads, as the program initialises CUDA, for the library to
# load into it.
INJECTION = "CUDA_INJECTION64_PATH"
# The trace's top-level key for the most device memory PyTorch's allocator held
# (formats/trace_events.py reads it under the same name).
PEAK_RESERVED = "rooflint_peak_reserved_bytes"
# The trace's top-level key for the versions of PyTorch, its CUDA and its cuDNN, whose
# kernels' code they fix (formats/trace_events.py reads it under the same name).
LIBRARIES = "rooflint_libraries"
# The trace's top-level key for the optimizer step the program was ended at (_StepLimit;
# formats/trace_events.py reads it under the same name).
STOPPED = "rooflint_stopped_at_step"
# The trace's top-level key for which process it is of: its pid, its launcher's rank and its
# host (formats/ranks.py reads it under the same name, to merge a launcher's ranks' traces),
# and where launchers put the rank (formats/ranks.RANK_VARIABLES, in the same order).
PROCESS = "rooflint_process"
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
# In a trace's path, what stands for the process's pid: each rank of a launcher's job
# writes its own.
PID = "%p"
# The prefix of the ranges around an autotuner's benchmarking (formats/trace_events.py
# reads it under the same name).
AUTOTUNING = "rooflint.autotuning: "
# Each autotuner's benchmarking calls, and a benchmark's cache flushes: module, class,
# method, and what the analysis calls their launches.
AUTOTUNERS = (
    ("triton.runtime.autotuner", "Autotuner", "_bench", "Triton's autotuner"),
    # Inductor's benchmarker (PyTorch 2.5 on), which all its tuning times through: templates'
    # choices under max-autotune, configs, coordinate descent
    *(("torch._inductor.runtime.benchmarking", owner, method, "TorchInductor's autotuner")
      for owner, method in (("Benchmarker", "benchmark"), ("Benchmarker", "benchmark_gpu"),
                            ("TritonBenchmarker", "benchmark_gpu"),
                            ("InductorBenchmarker", "benchmark_gpu"))),
    ("torch._inductor.runtime.triton_heuristics", "CachingAutotuner", "benchmark_all_configs",
     "TorchInductor's autotuner"),
    ("torch._inductor.runtime.triton_heuristics", "CachingAutotuner",
     "coordinate_descent_tuning", "TorchInductor's autotuner"),
    ("torch._inductor.select_algorithm", "AlgorithmSelectorCache",
     "benchmark_in_current_process", "TorchInductor's autotuner"),
    ("triton.backends.driver", "GPUDriver", "clear_cache", "Triton's do_bench flushing L2"),
    ("triton.backends.nvidia.driver", "CudaDriver", "clear_cache",
     "Triton's do_bench flushing L2"),
)
# The calls whose repetitions past each run's first few go unrecorded: module, class (None:
# a function of the module), method, who, how many calls of a run are recorded, and
# whether the collection stays paused for the rest of the run (a benchmark's loop) or for
# each call alone (a batch's fetch, between the program's steps). formats/trace_events.py
# reads the ranges under the same names.
SAMPLED = "rooflint.sampled: "
# A benchmark's first hundred calls time its function's kernels (the first, cold one and
# do_bench's five that estimate its time among them), and a sweep of a few hundred do_bench
# calls writes tens of megabytes. A DataLoader's batches are alike, and one can hold
# thousands of CPU operators (4,400 in attorch's example, whose epochs are 39 batches).
REPEATED = (("triton.testing", None, "do_bench", "Triton's do_bench", 100, True),
            ("torch.utils.data.dataloader", "_BaseDataLoaderIter", "__next__",
             "PyTorch's DataLoader", 3, False))
# Pass 2 runs a DataLoader with its pin_memory off (_unpinned): Nsight Compute saves and
# restores every pinned host buffer (the GPU can reach each) around each replay pass of a
# profiled launch, and a DataLoader's workers keep batches pinned ahead of the steps:
# pytorch/examples' imagenet/main.py with 16 workers took 4.4 s a profiled launch under
# rooflint's metrics, 0.3 s unpinned (H200). Its kernels are the same; only the copies of
# its batches to the GPU are not asynchronous.
DATALOADER_INIT = ("torch.utils.data.dataloader", "DataLoader", "__init__")
# Where Triton launches a kernel the program calls itself: a jitted kernel's run, a
# compiled kernel's indexing by its grid.
TRITON_LAUNCH = ("triton.runtime.jit", "JITFunction", "run")
TRITON_COMPILED_LAUNCH = ("triton.compiler.compiler", "CompiledKernel", "__getitem__")
# Where TorchInductor's generated code launches a Triton kernel it compiled.
INDUCTOR_LAUNCH = ("torch._inductor.runtime.triton_heuristics", "CachingAutotuner", "run")
# TorchInductor's generated code (its folder's name) names the kernel each call launches
# in a comment above the call (PyTorch 2.8 on: ``# [Provenance debug handles]
# triton_poi_fused_gelu_3:5``, numbered afresh in each graph), and its compiler keeps each
# handle's stack traces (the model's lines of the nodes the kernel computes) in a
# dictionary while it compiles a graph (STACK_TRACES: the last graph's alone), where its
# provenance tracking is on (off by default) and not on a cache hit. Pass 1 sets them so
# (PROVENANCE), unless the program's environment sets them otherwise: the same kernels,
# compiled afresh. The dictionary is kept for each graph's generated code as it is
# compiled (INDUCTOR_COMPILED).
GENERATED = "torchinductor_"
HANDLES = "# [Provenance debug handles] "
STACK_TRACES = ("torch._inductor.debug", "_inductor_kernel_stack_trace")
INDUCTOR_COMPILED = ("torch._inductor.graph", "GraphLowering", "compile_to_module")
PROVENANCE = {"INDUCTOR_PROVENANCE": "1", "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
              "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}
TRACED_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')
# How far above a call its handle's comment may be (the comment, then ``stream0 = ...``).
HANDLE_REACH = 4


def _program(argv):
    """How to run ``argv`` (what followed ``python``) and what sys.path[0] it gets."""
    if argv[0] == "-m":
        return (lambda: runpy.run_module(argv[1], run_name="__main__", alter_sys=True)), \
            [argv[1], *argv[2:]], os.getcwd()
    if argv[0] == "-c":
        code = compile(argv[1], "<string>", "exec")
        return (lambda: exec(code, {"__name__": "__main__"})), ["-c", *argv[2:]], ""
    script = argv[0]
    return (lambda: runpy.run_path(script, run_name="__main__")), argv, \
        os.path.dirname(os.path.abspath(script))


def _nvtx_as_ranges(torch):
    """torch.cuda.nvtx.range_push/range_pop (and the ``range`` context built on them) open
    and close profiler ranges as well as NVTX ones."""
    nvtx = torch.cuda.nvtx
    push, pop, opened = nvtx.range_push, nvtx.range_pop, []

    def range_push(message):
        scope = torch.profiler.record_function(str(message))
        scope.__enter__()
        opened.append(scope)
        return push(message)

    def range_pop():
        if opened:
            opened.pop().__exit__(None, None, None)
        return pop()
    nvtx.range_push, nvtx.range_pop = range_push, range_pop


# What a frame's file is: the program's, an installed package's (a model library's, which
# runs code on the program's behalf), PyTorch's or the standard library's, or
# TorchDynamo's (which runs a compiled function's frame, and sits just outside it).
PROGRAM, PACKAGE, LIBRARY, DYNAMO = 0, 1, 2, 3


def _kinds(torch):
    """A function from a frame's file name to its kind (cached: it is asked on every torch
    call and Triton launch). PyTorch, Triton (found, not imported), the standard library,
    this file and TorchInductor's generated code (which runs a compiled region's kernels
    on behalf of the line that called it) are LIBRARY; the other installed packages
    PACKAGE."""
    import importlib.util
    import site
    import sysconfig
    paths = sysconfig.get_paths()
    try:
        triton = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        triton = None

    def folders(*names):
        return tuple(os.path.join(os.path.realpath(f), "") for f in set(names) if f)
    libraries = folders(os.path.dirname(torch.__file__), paths["stdlib"],
                        os.path.dirname(os.path.abspath(__file__)),
                        *(triton.submodule_search_locations or [] if triton else []))
    packages = folders(paths["purelib"], paths["platlib"], *site.getsitepackages(),
                       site.getusersitepackages())
    dynamo = os.path.join(os.path.realpath(os.path.dirname(torch.__file__)), "_dynamo", "")
    known = {}

    def kind(filename):
        if filename not in known:
            real = os.path.realpath(filename)
            known[filename] = (DYNAMO if real.startswith(dynamo) else
                               LIBRARY if filename.startswith("<") or real.startswith(libraries)
                               or "torchinductor_" in real else
                               PACKAGE if real.startswith(packages) else PROGRAM)
        return known[filename]
    return kind


def _programs_frames(frame, kind, compiled=None):
    """The program's own frame nearest ``frame`` (outwards), and the installed package's
    frame nearest it inside that one (None where the program called torch itself), each
    as ``file(line): function``. With no frame of the program's on the stack (a program
    run as ``-m`` from an installed package), the package's frame is the line.
    A frame that TorchDynamo runs (a torch.compile'd function, whose line stays at its
    entry while the compiled graph runs) gives way to the program's frame that called it.
    A call from TorchInductor's generated code is the model's lines that code was compiled
    from, where ``compiled`` (an _InductorLines) knows them: the program's (the model's
    own line) and the package's (a model library's); the program's frame that called the
    compiled function stands where the model's lines hold none of the program's."""
    program = package = None
    while frame is not None:
        found = kind(frame.f_code.co_filename)
        if found == PROGRAM:
            if program is not None:
                break
            program = frame
        elif found == PACKAGE and program is None and package is None:
            package = frame
        elif found == DYNAMO:
            program = package = None
        elif compiled is not None and program is None and package is None:
            lines = compiled.lines(frame)
            if lines is not None:
                return _with_caller(lines, frame.f_back, kind)
        frame = frame.f_back
    if program is None:
        return package and _named(package), None
    return _named(program), package and _named(package)


def _with_caller(lines, frame, kind):
    """The model's lines of a compiled call (program's, package's), the program's line
    that called the compiled function standing in for the first where it is None."""
    program, package = lines
    if program is not None or package is None:
        return program or package, None if program is None else package
    caller, _ = _programs_frames(frame, kind)
    return (caller, package) if caller is not None else (package, None)


def _named(frame):
    code = frame.f_code
    return f"{code.co_filename}({frame.f_lineno}): {getattr(code, 'co_qualname', code.co_name)}"


class _InductorLines:
    """The model's lines that a call from TorchInductor's generated code was compiled from:
    the handle in the comment above the call, its stack traces as the compiler kept them,
    and of its first (a fused kernel's first node's) the program's frame and the package's
    frame inside it, nearest the operation, as the stack walk picks them for an eager call.
    Looked up once per call site."""

    def __init__(self, kind):
        self.kind, self.known, self.kept = kind, {}, {}
        self.mode = None          # the line ranges' TorchFunctionMode, where there is one

    def keeping(self, compile_to_module):
        """GraphLowering.compile_to_module, keeping the stack traces of the graph it
        compiled for the generated code's file, and its ``call`` run with the line ranges'
        mode on in any thread (a compiled backward runs in autograd's, where the mode,
        the main thread's own, is not: its GEMMs and attention had kept the forward's
        line)."""
        @functools.wraps(compile_to_module)
        def compiling(graph, *args, **kwargs):
            module = compile_to_module(graph, *args, **kwargs)
            self.kept[getattr(module, "__file__", None)] = dict(_stack_traces())
            if callable(getattr(module, "call", None)):
                module.call = self._with_mode(module.call)
            return module
        return compiling

    def _with_mode(self, call):
        @functools.wraps(call)
        def calling(*args, **kwargs):
            if self.mode is None or _mode_on(self.mode):
                return call(*args, **kwargs)
            with self.mode:
                return call(*args, **kwargs)
        return calling

    def lines(self, frame):
        """(program's, package's) lines of a call made at ``frame``; None for a frame
        outside generated code, or a call whose handle or stack traces are unknown."""
        code = frame.f_code
        if GENERATED not in code.co_filename:
            return None
        site = (code.co_filename, frame.f_lineno)
        if site not in self.known:
            traces = self.kept.get(site[0]) or _stack_traces()
            self.known[site] = self._traced([t for h in _handles_above(*site)
                                             for t in traces.get(h, ()) if isinstance(t, str)])
        return self.known[site]

    def _traced(self, traces):
        frames = [m for trace in traces[:1] for m in TRACED_FRAME.finditer(trace)]
        program = package = None
        for match in reversed(frames):
            found = self.kind(match["file"])
            if found == PROGRAM:
                program = match
                break
            if found == PACKAGE and package is None:
                package = match
        if program is None and package is None:
            return None
        return _traced_named(program), _traced_named(package)


def _handles_above(filename, line):
    """The provenance handles in the comment just above ``line`` of generated code."""
    for above in range(line - 1, max(line - 1 - HANDLE_REACH, 0), -1):
        text = linecache.getline(filename, above).strip()
        if text.startswith(HANDLES):
            return [h.strip() for h in text[len(HANDLES):].split(",") if h.strip()]
        if text and not text.startswith(("#", "stream")):
            break
    return []


def _mode_on(mode):
    """Whether ``mode`` is on this thread's stack of torch function modes (assumed so where
    the release cannot say)."""
    try:
        from torch.overrides import _get_current_function_mode_stack
    except ImportError:
        return True
    return any(m is mode for m in _get_current_function_mode_stack())


def _stack_traces():
    """TorchInductor's stack traces of the graph it compiled last, by handle."""
    module, name = STACK_TRACES
    kept = getattr(sys.modules.get(module), name, None)
    return kept if isinstance(kept, dict) else {}


def _traced_named(match):
    """A stack trace's frame as ``file(line): qualified.name`` (the eager ranges' form)."""
    if match is None:
        return None
    line = int(match["line"])
    return f"{match['file']}({line}): {_qualname(match['file'], line, match['function'])}"


@functools.lru_cache(maxsize=None)
def _functions(filename):
    """(first line, last line, qualified name) of each function defined in a source file."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a file nested past
        return ()                                                     # the parser's depth
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)
    visit(tree, "")
    return tuple(found)


def _qualname(filename, line, function):
    """The qualified name (``Block.forward``) of the innermost function ``function`` around
    ``line`` in ``filename``; ``function`` itself where the source cannot say."""
    around = [(first, name) for first, last, name in _functions(filename)
              if first <= line <= last and name.rsplit(".", 1)[-1] == function]
    return max(around)[1] if around else function


class _Quiet(threading.local):
    """Whether this thread is inside a Triton launch or an autotuner's benchmarking, where
    no line ranges are opened: the torch calls Triton makes to launch (its tensors'
    data_ptr) would name the launch's line again, and a tuner's trials are left out
    whatever their lines (a range per call there made a Triton program's trace 11 MB of
    its 29)."""

    depth = 0

    @contextmanager
    def held(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1


_QUIET = _Quiet()


def _from_line(call, frame, kind, record, prefix, compiled=None):
    """``call()`` inside profiler ranges naming the program's line nearest ``frame`` and,
    where an installed package made the call on its behalf, the package's line."""
    line, package = (None, None) if _QUIET.depth else _programs_frames(frame, kind, compiled)
    if line is None:
        return call()
    with record(prefix + line):
        if package is None:
            return call()
        with record(prefix + package):
            return call()


# Torch functions that never launch a kernel, by name: a tensor's attributes read or set
# (.grad, .shape, .dtype: a getset descriptor's __get__ and __set__) and questions about its
# metadata. An optimizer's Python loop asks each parameter's .grad and is_complex: of the
# 11,000 torch function calls of a small CPU training loop's ten steps, 4,900 were these,
# each a walk up the stack and a range for no launch.
NO_LAUNCH = frozenset({
    "__get__", "__set__", "is_complex", "is_floating_point", "is_signed", "dim",
    "ndimension", "size", "stride", "numel", "nelement", "element_size", "data_ptr",
    "is_contiguous", "storage_offset", "get_device", "_set_grad_enabled", "__len__",
    "is_inference", "_is_view", "has_names"})


def _line_range(torch):
    """The profiler range a line is recorded in: PyTorch's C++ one where the release has
    it (``torch._C._profiler._RecordFunctionFast``: about 2 us a range against
    record_function's 22 us, CPU, PyTorch 2.13; in the trace a ``cpu_op``, which
    formats/trace_events.py tells from an operator by its name), else record_function."""
    profiler = getattr(getattr(torch, "_C", None), "_profiler", None)
    fast = getattr(profiler, "_RecordFunctionFast", None)
    return fast or torch.profiler.record_function


def _caller_lines(torch, kind, prefix, compiled):
    """A TorchFunctionMode that wraps each torch function call in a profiler range naming
    the program's line it came from (nested calls, made by PyTorch, are not seen: the mode
    is off inside its own handler), but a call that launches nothing (NO_LAUNCH). Inside a
    torch.compile trace it stays out of the way."""
    from torch.overrides import TorchFunctionMode
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)
    record, no_launch = _line_range(torch), NO_LAUNCH

    class CallerLines(TorchFunctionMode):
        # TorchDynamo traces this handler too, reading its globals from the module named
        # "__main__", which is the program's while it runs: only closures, and first of all
        # the test that it is compiling, are read before it returns
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if compiling() or getattr(func, "__name__", None) in no_launch:
                return func(*args, **kwargs)
            return _from_line(lambda: func(*args, **kwargs), sys._getframe(1), kind, record,
                              prefix, compiled)
    return CallerLines()


# The launches of each Triton kernel that get line ranges: a range costs the trace about
# 0.5 KB (with its GPU-side copy and flow events), and a benchmark sweep launches one
# kernel hundreds of thousands of times (Triton's fused-softmax tutorial: 600,000 launches
# in a 683 MB trace); the later launches carry no line, and are the same kernel's.
LINED_LAUNCHES = 100


def _launch_lines(kind, record, prefix):
    """A function ``lined(kernel, launch, frame)`` that runs ``launch()`` (a Triton kernel's)
    inside the line ranges of the program's frame nearest ``frame``, for the first
    LINED_LAUNCHES of each kernel outside an autotuner's trials, and quiet within."""
    launched = {}

    def lined(kernel, launch, frame):
        def quiet():
            with _QUIET.held():
                return launch()
        if _QUIET.depth:              # an autotuner's trial: not counted
            return quiet()
        launched[id(kernel)] = seen = launched.get(id(kernel), 0) + 1
        if seen > LINED_LAUNCHES:
            return quiet()
        return _from_line(quiet, frame, kind, record, prefix)
    return lined


def _launched_from_line(run, lined):
    """Triton's JITFunction.run, which launches a kernel the program calls as
    ``kernel[grid](...)`` (no torch function in between), launching through ``lined``."""
    @functools.wraps(run)
    def launching(kernel, *args, **kwargs):
        return lined(kernel, lambda: run(kernel, *args, **kwargs), sys._getframe(1))
    return launching


def _launched_by_inductor(run, kind, record, prefix, compiled):
    """TorchInductor's CachingAutotuner.run, which its generated code calls to launch each
    Triton kernel it compiled, launching inside the ranges of the model's lines the kernel
    was compiled from: every launch (a compiled step's kernels are the program's work, once
    a step), quiet within."""
    @functools.wraps(run)
    def launching(autotuner, *args, **kwargs):
        def quiet():
            with _QUIET.held():
                return run(autotuner, *args, **kwargs)
        return _from_line(quiet, sys._getframe(1), kind, record, prefix, compiled)
    return launching


def _indexed_from_line(getitem, lined):
    """Triton's CompiledKernel.__getitem__, whose runner launches a kernel compiled ahead
    (``compiled = kernel.warmup(...)``, then ``compiled[grid](...)``, as Triton's
    fused-softmax tutorial does), its runner launching through ``lined``."""
    @functools.wraps(getitem)
    def indexing(kernel, grid):
        runner = getitem(kernel, grid)

        def launching(*args, **kwargs):
            return lined(kernel, lambda: runner(*args, **kwargs), sys._getframe(1))
        return launching
    return indexing


def _in_range(function, name, record):
    """``function`` run inside a profiler range ``name`` (a class's plain, class or static
    method, as its class holds it), with no line ranges inside."""
    if isinstance(function, (classmethod, staticmethod)):
        return type(function)(_in_range(function.__func__, name, record))

    @functools.wraps(function)
    def ranged(*args, **kwargs):
        with record(name), _QUIET.held():
            return function(*args, **kwargs)
    return ranged


def _spec_then(name, path, after):
    """The spec the usual finders give module ``name``, its loader calling ``after(module)``
    once the module has run (None where no finder on the path knows it)."""
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or not hasattr(spec.loader, "exec_module"):
        return spec
    execute = spec.loader.exec_module

    def exec_module(module):
        execute(module)
        after(module)
    spec.loader.exec_module = exec_module
    return spec


class _AfterFirstImport:
    """A finder on sys.meta_path that lets the usual finders load the first module of
    ``names`` the program imports, then calls ``then()``, once; at once where one is
    imported already."""

    def __init__(self, names, then):
        self.names, self.then = frozenset(names), then
        if self.names.intersection(sys.modules):
            self._fire(None)

    def _fire(self, module):
        then, self.then = self.then, None
        if then is not None:
            then()

    def find_spec(self, name, path=None, target=None):
        if self.then is None or name not in self.names:
            return None
        return _spec_then(name, path, self._fire)


class _WrappedOnImport:
    """A finder on sys.meta_path that lets the usual finders load each module named in
    ``wrappers`` (module -> [(class, method, wrap)]), then replaces the method (the
    module's function, where the class is None) with ``wrap(method)``; a module imported
    already (with torch) is wrapped at once. A class or method a release no longer has is
    passed over."""

    def __init__(self, wrappers):
        self.pending = dict(wrappers)
        for name in [n for n in self.pending if n in sys.modules]:
            self._wrap(sys.modules[name], self.pending.pop(name))

    def find_spec(self, name, path=None, target=None):
        wrappers = self.pending.pop(name, None)
        if wrappers is None:
            return None
        return _spec_then(name, path, lambda module: self._wrap(module, wrappers))

    @staticmethod
    def _wrap(module, wrappers):
        for owner, method, wrap in wrappers:
            holder = module if owner is None else getattr(module, owner, None)
            function = getattr(holder, "__dict__", {}).get(method)
            if function is not None:
                setattr(holder, method, wrap(function))


class _Collection:
    """The profiler's collection of CPU operators and CUDA activity, paused and resumed
    (PyTorch 2.3 on; ``None`` from ``of`` before). Pauses nest: a do_bench inside another's
    timed function (an autotuner's, benchmarking a kernel that do_bench times) resumes
    nothing while the outer one holds it paused. The collection is the process's: another
    thread's launches meanwhile go unrecorded too."""

    def __init__(self, toggle, activities):
        self.toggle, self.activities, self.paused = toggle, activities, 0
        self.lock = threading.Lock()       # two threads' do_bench runs pause it alike

    @classmethod
    def of(cls, profiler):
        toggle = getattr(profiler, "toggle_collection_dynamic", None)
        if toggle is None:
            return None
        from torch.profiler import ProfilerActivity
        # XPU named as well: PyTorch warns on every toggle of CPU and CUDA without it
        activities = [getattr(ProfilerActivity, name) for name in ("CPU", "CUDA", "XPU")
                      if hasattr(ProfilerActivity, name)]
        return cls(toggle, activities)

    def pause(self):
        with self.lock:
            self.paused += 1
            if self.paused == 1:
                self.toggle(False, self.activities)

    def resume(self):
        with self.lock:
            self.paused -= 1
            if self.paused == 0:
                self.toggle(True, self.activities)


@contextmanager
def _unlined(lines):
    """Calls that open no line ranges: _QUIET held and, where the innermost torch function
    mode is the line ranges' own (``lines``), that mode off, so that the thousands of CPU
    operators of a paused batch's fetch do not each pass through its Python handler."""
    with _QUIET.held():
        try:
            from torch.overrides import _get_current_function_mode, _pop_mode_temporarily
        except ImportError:     # a release without them: the handler stays, quiet
            lines = None
        if lines is None or _get_current_function_mode() is not lines:
            yield
            return
        with _pop_mode_temporarily():
            yield


class _Run:
    """One run of a repeated call (a do_bench call, a DataLoader iterator): its first
    ``recorded`` calls recorded inside its range, the rest with the collection paused and
    no line ranges (``unlined()``); ``end`` writes how many there were. A run paused to its
    end (a benchmark's) is one call of the program's, ranged whole by its wrapper: a range
    around each of its calls cost the trace and the program as much again."""

    numbered = 0

    def __init__(self, who, recorded, record, collection, paused_to_end, unlined):
        _Run.numbered += 1
        self.name, self.calls = f"{SAMPLED}{who} #{_Run.numbered}", 0
        self.recorded, self.record, self.collection = recorded, record, collection
        self.paused_to_end, self.unlined, self.ended = paused_to_end, unlined, False

    def call(self, function, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.recorded:
            if self.paused_to_end:
                return function(*args, **kwargs)
            with self.record(self.name):
                return function(*args, **kwargs)
        if not self.paused_to_end or self.calls == self.recorded + 1:
            self.collection.pause()
        try:
            with self.unlined():
                return function(*args, **kwargs)
        finally:
            if not self.paused_to_end:
                self.collection.resume()

    def end(self):
        if self.ended or self.calls <= self.recorded:
            return
        self.ended = True
        if self.paused_to_end:
            self.collection.resume()
        with self.record(f"{self.name}: {self.calls} calls, {self.recorded} recorded"):
            pass


def _benchmark_recorded_at_first(bench, run_of):
    """A benchmark function (do_bench) whose timed function, its first argument, is called
    through a _Run (``run_of()``) for each call of the benchmark, inside its range."""
    @functools.wraps(bench)
    def benchmarking(*args, **kwargs):
        run = run_of()
        timed = lambda f: functools.wraps(f)(functools.partial(run.call, f))   # noqa: E731
        if args:
            args = (timed(args[0]), *args[1:])
        elif "fn" in kwargs:
            kwargs["fn"] = timed(kwargs["fn"])
        with run.record(run.name):
            try:
                return bench(*args, **kwargs)
            finally:
                run.end()
    return benchmarking


def _iterator_recorded_at_first(next_, run_of, runs):
    """An iterator's ``__next__`` (a DataLoader's) called through a _Run (``run_of()``) per
    iterator and epoch, ended when it is exhausted (an iterator with persistent workers
    serves the next epoch again, a new run); ``runs`` keeps the unended ones for the
    profiler's stop."""
    @functools.wraps(next_)
    def fetching(iterator):
        run = runs.get(iterator)
        if run is None:
            run = runs[iterator] = run_of()
        try:
            return run.call(next_, iterator)
        except StopIteration:
            run.calls -= 1          # the epoch's end: no batch
            run.end()
            runs.pop(iterator, None)
            raise
    return fetching


def _wrappers(kind, record, line_record, prefix, collection, runs, unlined, compiled):
    """What _WrappedOnImport wraps: each autotuner's benchmarking in its range (AUTOTUNERS),
    Triton's launch in its caller's line ranges, TorchInductor's in its model's lines (each
    opened by ``line_record``: _line_range), the repeated calls recording each run's first
    (REPEATED), where the profiler can pause."""
    wrappers = {}
    for module, owner, method, who, recorded, to_end in (REPEATED if collection else ()):
        run_of = functools.partial(_Run, who, recorded, record, collection, to_end, unlined)
        wrappers.setdefault(module, []).append((owner, method, (
            lambda f, run_of=run_of: _benchmark_recorded_at_first(f, run_of)) if to_end else (
            lambda f, run_of=run_of: _iterator_recorded_at_first(f, run_of, runs))))
    for module, owner, method, tuner in AUTOTUNERS:
        wrappers.setdefault(module, []).append(
            (owner, method, lambda f, name=AUTOTUNING + tuner: _in_range(f, name, record)))
    lined = _launch_lines(kind, line_record, prefix)
    for (module, owner, method), wrap in ((TRITON_LAUNCH, _launched_from_line),
                                          (TRITON_COMPILED_LAUNCH, _indexed_from_line)):
        wrappers.setdefault(module, []).append((owner, method, lambda f, w=wrap: w(f, lined)))
    module, owner, method = INDUCTOR_LAUNCH
    wrappers.setdefault(module, []).append((owner, method, lambda f: _launched_by_inductor(
        f, kind, line_record, prefix, compiled)))
    module, owner, method = INDUCTOR_COMPILED
    wrappers.setdefault(module, []).append((owner, method, compiled.keeping))
    return wrappers


def _record_memory(torch, profiler):
    """The most device memory the program's allocator held, into the trace: pass 2's
    replays save and restore what a program holds around each profiled launch; and the
    versions that fix the code of PyTorch's own kernels (the counter cache's key)."""
    add = getattr(profiler, "add_metadata_json", None)
    if add is not None:
        add(PEAK_RESERVED, str(torch.cuda.max_memory_reserved()))
        add(LIBRARIES, json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda,
                                   "cudnn": torch.backends.cudnn.version()}))


def _record_process(profiler):
    """Which process the trace is of, into it: a launcher's ranks each write one."""
    add = getattr(profiler, "add_metadata_json", None)
    if add is not None:
        rank = next((os.environ[v] for v in RANK_VARIABLES if os.environ.get(v)), "")
        add(PROCESS, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "rank": int(rank) if rank.isdigit() else None}))


def _import_dynamo():
    """TorchDynamo (and the 880 modules it brings: SymPy, mpmath...) imported as soon as the
    program has imported torch, as pass 1's profiler, started there, imports it. A program
    imports it anyway at its first optimizer (torch.optim's methods import it when first
    called) or torch.compile: after its first CUDA call, where pass 2's program waits for
    Nsight Compute, so on pass 2's clock (4.6 s of a training step's 18.5 s pass 2, H100).
    Imported with torch, it is done while pass 1 runs, and pass 2's run starts as pass 1's
    did. Where it cannot be imported, the program meets that as it would have."""
    try:
        import torch._dynamo  # noqa: F401
    except Exception:  # a TorchDynamo that fails to import: the program's own affair
        pass


def _started(steps, argv):
    """Pass 2's start: the program run as ``python ARGV`` would run it (its argv, its
    folder first on sys.path, its exit status), with TorchDynamo imported right after the
    program's own ``import torch`` (_import_dynamo), its DataLoaders unpinned (_unpinned),
    and ended at its first optimizer's ``steps``-th step where that is above 0
    (_StepLimit), as pass 1's was."""
    run, sys.argv, path = _program(argv)
    sys.path.insert(0, path)

    def after_torch():
        _import_dynamo()
        module, owner, method = DATALOADER_INIT
        sys.meta_path.insert(0, _WrappedOnImport({module: [(owner, method, _unpinned)]}))
        if steps:
            _StepLimit(steps, lambda step: None).install()
    sys.meta_path.insert(0, _AfterFirstImport(("torch",), after_torch))
    run()


def _rotated(config, argv):
    """Pass 2 by rotation: the program run as _started runs it (TorchDynamo imported with
    its torch; its DataLoaders left as they are: nothing is replayed), measured from its
    first optimizer's steps (_Rotation, as the JSON file ``config`` says). Right after its
    first import of a library it launches kernels through (STARTING_IMPORTS: importing
    one touches no GPU), it says so (WAITING) and waits for pass 1 to be over (GO) or
    ``config`` to be there: rooflint starts it while pass 1 runs and writes ``config`` once
    pass 1 has said what to measure, or kills it (measure/rotation.started_rotation)."""
    run, sys.argv, path = _program(argv)
    sys.path.insert(0, path)

    def after_first_import():
        if "torch" in sys.modules:
            _import_dynamo()
        with open(config + WAITING, "w"):
            pass
        while not (os.path.exists(config + GO) or os.path.exists(config)):
            time.sleep(CONFIG_POLL_S)
        _Rotation(config).install()
    sys.meta_path.insert(0, _AfterFirstImport(STARTING_IMPORTS, after_first_import))
    run()


def _unpinned(init):
    """A DataLoader's ``__init__`` that leaves it with ``pin_memory`` off, however it was
    given (by keyword or by position), for pass 2 (DATALOADER_INIT); a subclass that will
    not have it set (a read-only property) is left pinned, not failed."""
    @functools.wraps(init)
    def unpinned(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            self.pin_memory = False
        except (AttributeError, TypeError, ValueError):
            pass
    return unpinned


class _FirstOptimizerSteps:
    """Calls ``on_step(step)`` after each step of the program's first optimizer (the first
    ``torch.optim`` optimizer to step: a GAN's discriminator, whose generator steps as often,
    so that one call is one iteration; a first optimizer the program dropped is followed by
    the next to step), through torch.optim's hook after every optimizer's step (PyTorch 2.0
    on; where a release lacks it, nothing is called). Only on the main thread (a step on
    another runs the program on) and not while a CUDA graph is being captured (a step
    captured whole), where nothing could synchronise: the next step outside the capture
    is called."""

    def __init__(self):
        self.first, self.stepped = None, 0

    def install(self):
        """The hook, by its module's name: torch.optim deletes its submodules' names from
        its namespace (``torch.optim.optimizer`` is no attribute), and a release without
        the hook is not failed."""
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook
        except ImportError:
            return
        register_optimizer_step_post_hook(self._after_step)

    def _after_step(self, optimizer, args, kwargs):
        if self.first is None or self.first() is None:
            self.first = weakref.ref(optimizer)
        if self.first() is not optimizer:
            return
        self.stepped += 1
        if threading.current_thread() is threading.main_thread() and not _capturing():
            self.on_step(self.stepped)

    def on_step(self, step):
        raise NotImplementedError


class _StepLimit(_FirstOptimizerSteps):
    """Ends the program once its first optimizer has stepped ``steps`` times: ``end(step)``
    first (pass 1's trace written), then the process (_exit_now)."""

    def __init__(self, steps, end):
        super().__init__()
        self.steps, self.end = steps, end

    def on_step(self, step):
        if step >= self.steps:
            self.end(step)
            _exit_now()


class _Rotation(_FirstOptimizerSteps):
    """Pass 2 by rotation (measure/rotation.py), as the JSON file ``config`` says
    (ROTATION_FIELDS, _configure): after the first optimizer's ``warm_up``-th
    step, the engine (rotation_engine.cpp, through ``engine``: its rl_ functions) is given
    the counters and the ``chosen`` kernels (each a pattern on its mangled name, its grid
    and its block, the first launch of each in a step ranged) and each step from
    then on is a pass of them, until every pass is in; then the engine writes its records
    to ``path`` and the program is ended (_exit_now). The GPU is synchronised at each
    step's end, so that a pass holds its step's kernels and no other's. What fails (the
    engine's error, or passes still wanted after ``most_steps`` steps) is written to
    ``path`` + FAILED and ends the program too: pass 2 is then Nsight Compute's."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.warm_up = self.lib = None

    def on_step(self, step):
        if self.warm_up is None:
            self._configure()
        if step < self.warm_up:
            return
        sync = sys.modules["torch"].cuda.synchronize
        sync()
        if self.lib is None:
            self._begin()
        elif self._called("rl_stop", self.lib.rl_stop()):
            self._called("rl_finish", self.lib.rl_finish(self.path.encode()))
            _exit_now()
        elif step - self.warm_up >= self.most_steps:
            self._failed(f"the engine wanted more passes after {self.most_steps} steps")
        self._called("rl_start", self.lib.rl_start())

    def _configure(self):
        """The configuration's fields, waited for at the first step's end, where a program
        let run before rooflint knew what to measure (GO) stops: no rotation begins before
        (rotation.rotation_steps: a step of warm-up at least)."""
        while not os.path.exists(self.config):
            time.sleep(CONFIG_POLL_S)
        with open(self.config) as given:
            fields = json.load(given)
        (self.engine, self.metrics, self.max_ranges, self.warm_up, self.most_steps,
         self.chosen, self.path) = (fields[name] for name in ROTATION_FIELDS)

    def _begin(self):
        import ctypes
        try:
            self.lib = ctypes.CDLL(self.engine)
        except OSError as exc:
            self._failed(f"the engine would not load: {exc}")
        self.lib.rl_error.restype = ctypes.c_char_p
        self._called("rl_begin", self.lib.rl_begin(
            ",".join(self.metrics).encode(), self.max_ranges, 1,
            "".join("\t".join(kernel) + "\n" for kernel in self.chosen).encode()))

    def _called(self, name, result):
        """``result`` of the engine's ``name``, where it is not an error (below 0)."""
        if result < 0:
            self._failed(f"{name}: {self.lib.rl_error().decode(errors='replace')}")
        return result

    def _failed(self, why):
        with open(self.path + FAILED, "w") as out:
            out.write(why)
        _exit_now()


def _capturing():
    """Whether the current CUDA stream is capturing a graph (False where PyTorch cannot say)."""
    try:
        return bool(sys.modules["torch"].cuda.is_current_stream_capturing())
    except Exception:  # a PyTorch without the call, or a CUDA that cannot answer
        return False


def _exit_now():
    """The process ended as a program that finished: its output flushed, the processes it
    started through multiprocessing (a DataLoader's workers, which would hold its output
    open for seconds) ended, exit status 0. Nothing else of the program runs, its exit
    handlers neither (a logger's upload, a last checkpoint)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a stream the program closed or replaced
            pass
    import multiprocessing
    for child in multiprocessing.active_children():
        child.terminate()
    os._exit(0)


class _StartAtFirstImport:
    """A finder on sys.meta_path for pass 1: what times the program's launches, chosen at
    its first import of a STARTING_IMPORTS module (at once where one is imported already).
    PyTorch's or Triton's: PyTorch's profiler, started once the module has run. Another
    library's: CUPTI's recorder where rooflint offers one, named to the CUDA driver before
    the module runs (it may initialise CUDA); should the program import torch before CUDA
    is initialised (a PyTorch program whose first import brought in Numba, say), the
    recorder is unnamed and PyTorch's profiler started instead, with its operators and
    lines."""

    def __init__(self, profiling):
        self.profiling, self.watched = profiling, set(STARTING_IMPORTS)
        imported = [name for name in STARTING_IMPORTS if name in sys.modules]
        if imported and self._first(imported[0]):
            self.profiling.start()

    def find_spec(self, name, path=None, target=None):
        if name not in self.watched:
            return None
        if not self._first(name):
            return None
        return _spec_then(name, path, lambda module: self.profiling.start())

    def _first(self, name):
        """Whether PyTorch's profiler is to start once module ``name`` has run."""
        if name in PROFILED_IMPORTS or not self.profiling.recorder:
            self.watched = set()
            return not self.profiling.recording()
        self.watched = set(PROFILED_IMPORTS)
        self.profiling.record()
        return False


class _Profiling:
    """Pass 1's profiler and line ranges: started (start) by the program's first import of
    a STARTING_IMPORTS module, stopped (stop) when the program ends, its trace written; or
    CUPTI's recorder (record), where rooflint offers one (_StartAtFirstImport says when)."""

    def __init__(self, trace, prefix, recorder, records, steps=0):
        self.trace, self.prefix, self.steps = trace, prefix, steps
        self.recorder, self.records = recorder, records
        self.torch = self.profiler = self.lines = None
        self.runs = weakref.WeakKeyDictionary()    # DataLoader iterators' runs, not ended

    def record(self):
        """The recorder named to the CUDA driver, which loads it as the program initialises
        CUDA, into every process of the program."""
        os.environ[INJECTION] = self.recorder

    def recording(self):
        """Whether the driver has loaded the recorder into this process (it opens its file
        as it is loaded): CUDA is initialised, and PyTorch's profiler may not start beside
        it. Where it has not, it is unnamed."""
        if self.recorder and os.path.exists(
                os.path.join(self.records or "", f"kernels.{os.getpid()}.tsv")):
            return True
        if self.recorder and os.environ.get(INJECTION) == self.recorder:
            del os.environ[INJECTION]
        return False

    def start(self):
        """Where PyTorch or its profiler fails to import or to start, the program runs on
        untraced (rooflint then says so and times it another way), as it would have run:
        this runs inside the program's own import. Line ranges only where the program
        imports from its main thread (a TorchFunctionMode is the thread's own)."""
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile
            profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                               record_shapes=True)
            profiler.__enter__()
        except Exception:
            return
        self.profiler = profiler
        _nvtx_as_ranges(torch)
        kind = _kinds(torch)
        compiled = _InductorLines(kind)
        sys.meta_path.insert(0, _WrappedOnImport(_wrappers(
            kind, torch.profiler.record_function, _line_range(torch), self.prefix,
            _Collection.of(profiler),
            self.runs, lambda: _unlined(self.lines), compiled)))
        if threading.current_thread() is threading.main_thread():   # where stop runs
            self.lines = compiled.mode = _caller_lines(torch, kind, self.prefix, compiled)
            self.lines.__enter__()
        self.torch = torch
        if self.steps:
            _StepLimit(self.steps, self.stop).install()

    def stop(self, stopped_at=None):
        """The trace written, where the profiler started (else none), with the optimizer
        step the program was ended at (_StepLimit), if it was."""
        if self.profiler is None:
            return
        if stopped_at is not None and hasattr(self.profiler, "add_metadata_json"):
            self.profiler.add_metadata_json(STOPPED, str(stopped_at))
        if self.lines is not None:
            self.lines.__exit__(None, None, None)
        for run in list(self.runs.values()):     # iterators the program left unexhausted
            run.end()
        if self.torch.cuda.is_initialized():
            self.torch.cuda.synchronize()
            _record_memory(self.torch, self.profiler)
        _record_process(self.profiler)
        self.profiler.__exit__(None, None, None)
        self.profiler.export_chrome_trace(self.trace.replace(PID, str(os.getpid())))


def main():
    sys.path.pop(0)                  # this file's folder is not the program's
    if sys.argv[1] == PASS_TWO:
        _started(int(sys.argv[2]), sys.argv[4:])
        return
    if sys.argv[1] == ROTATION:
        _rotated(sys.argv[2], sys.argv[4:])
        return
    trace, prefix, steps, argv = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[5:]
    if importlib.util.find_spec("torch") is None:
        sys.exit(NO_PROFILER)
    run, sys.argv, path = _program(argv)
    sys.path.insert(0, path)
    for variable, value in PROVENANCE.items():
        os.environ.setdefault(variable, value)
    profiling = _Profiling(trace, prefix, os.environ.pop(RECORDER, None),
                           os.environ.get(RECORDS), steps)
    sys.meta_path.insert(0, _StartAtFirstImport(profiling))
    status = 0
    try:
        run()
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    finally:
        profiling.stop()
    sys.exit(status)


if __name__ == "__main__":
    main()
