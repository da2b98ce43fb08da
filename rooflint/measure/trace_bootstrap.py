"""Run a Python program under PyTorch's profiler: pass 1 of `rooflint profile` at the
program's own speed.

Executed as a script by the *program's* interpreter (``python trace_bootstrap.py TRACE --
train.py ARGS``), so it imports nothing from rooflint, which that interpreter may not have.
It runs the program as ``python train.py ARGS`` (or ``-m module``, ``-c code``) would, with
the profiler recording CUDA activity (every kernel's duration, grid, block, registers,
shared memory, from CUPTI, whoever launched it: PyTorch, Triton, cuBLAS, CuPy) and CPU
operators with Python stacks (which operator and which line launched each kernel), and
writes the trace as Chrome JSON to TRACE. NVTX ranges pushed through ``torch.cuda.nvtx``
are recorded as profiler ranges too, so ``--nvtx`` can select launches in the trace.

Exit status: the program's own. Status 3 with nothing written means PyTorch's profiler
is not importable here; rooflint then times the launches with Nsight Compute instead.
"""

import os
import runpy
import sys

NO_PROFILER = 3


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


def main():
    trace, argv = sys.argv[1], sys.argv[3:]
    sys.path.pop(0)                  # this file's folder is not the program's
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except Exception:
        sys.exit(NO_PROFILER)
    run, sys.argv, path = _program(argv)
    sys.path.insert(0, path)
    _nvtx_as_ranges(torch)
    profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       with_stack=True)
    profiler.__enter__()
    status = 0
    try:
        run()
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    finally:
        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
        profiler.__exit__(None, None, None)
        profiler.export_chrome_trace(trace)
    sys.exit(status)


if __name__ == "__main__":
    main()
