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
so ``--nvtx`` can select launches in the trace.

Which line of the program called each operator: every torch function the program calls
runs inside a profiler range named PREFIX + ``file(line): function``, the program's own
frame nearest the call; for a call made inside a torch.compile'd function, the line that
called the compiled function (PyTorch's profiler records Python frames only by the line
each function starts at, and recording them all makes a compiled program's trace
gigabytes). Where the call was made by an installed package's code on the program's
behalf (a Hugging Face model's ``modeling_gpt2.py``, whose every kernel the program's
one ``model(batch)`` line launches), a second range inside the first names the package's
frame nearest the call.

Exit status: the program's own. Status 3 with nothing written means PyTorch's profiler
is not importable here; rooflint then times the launches with Nsight Compute instead.
"""

import os
import runpy
import sys

NO_PROFILER = 3
# The trace's top-level key for the most device memory PyTorch's allocator held
# (formats/trace_events.py reads it under the same name).
PEAK_RESERVED = "rooflint_peak_reserved_bytes"


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
    call). PyTorch, the standard library, this file and TorchInductor's generated code
    (which runs a compiled region's kernels on behalf of the line that called it) are
    LIBRARY; the other installed packages PACKAGE."""
    import site
    import sysconfig
    paths = sysconfig.get_paths()

    def folders(*names):
        return tuple(os.path.join(os.path.realpath(f), "") for f in set(names) if f)
    libraries = folders(os.path.dirname(torch.__file__), paths["stdlib"],
                        os.path.dirname(os.path.abspath(__file__)))
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


def _programs_frames(frame, kind):
    """The program's own frame nearest ``frame`` (outwards), and the installed package's
    frame nearest it inside that one (None where the program called torch itself), each
    as ``file(line): function``. With no frame of the program's on the stack (a program
    run as ``-m`` from an installed package), the package's frame is the line.
    A frame that TorchDynamo runs (a torch.compile'd function, whose line stays at its
    entry while the compiled graph runs) gives way to the program's frame that called it:
    that call launched the region's kernels."""
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
        frame = frame.f_back
    if program is None:
        return package and _named(package), None
    return _named(program), package and _named(package)


def _named(frame):
    code = frame.f_code
    return f"{code.co_filename}({frame.f_lineno}): {getattr(code, 'co_qualname', code.co_name)}"


def _caller_lines(torch, prefix):
    """A TorchFunctionMode that wraps each torch function call in a profiler range naming
    the program's line it came from (nested calls, made by PyTorch, are not seen: the mode
    is off inside its own handler). Inside a torch.compile trace it stays out of the way."""
    from torch.overrides import TorchFunctionMode
    kind = _kinds(torch)
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)
    record = torch.profiler.record_function

    class CallerLines(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if compiling():
                return func(*args, **kwargs)
            line, package = _programs_frames(sys._getframe(1), kind)
            if line is None:
                return func(*args, **kwargs)
            with record(prefix + line):
                if package is None:
                    return func(*args, **kwargs)
                with record(prefix + package):
                    return func(*args, **kwargs)
    return CallerLines()


def _record_memory(torch, profiler):
    """The most device memory the program's allocator held, into the trace: pass 2's
    replays save and restore what a program holds around each profiled launch."""
    add = getattr(profiler, "add_metadata_json", None)
    if add is not None:
        add(PEAK_RESERVED, str(torch.cuda.max_memory_reserved()))


def main():
    trace, prefix, argv = sys.argv[1], sys.argv[2], sys.argv[4:]
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
                       record_shapes=True)
    profiler.__enter__()
    status = 0
    try:
        with _caller_lines(torch, prefix):
            run()
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    finally:
        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
            _record_memory(torch, profiler)
        profiler.__exit__(None, None, None)
        profiler.export_chrome_trace(trace)
    sys.exit(status)


if __name__ == "__main__":
    main()
