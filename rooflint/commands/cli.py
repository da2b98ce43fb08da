"""The `rooflint` command line: parse, call, render, exit code. Nothing else.

Exit codes: 0 ok, 1 a correctness failure, 2 usage or environment error (bad input,
no GPU). Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import signal
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence

import functools

import typer
from rich.console import Console
from typer.core import TyperCommand
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from rooflint.common.errors import RooflintError
from rooflint.formats.gpus import PRECISIONS, find_spec, load_specs

try:                       # typer carries its own copy of click since 0.2x
    from typer._click.exceptions import NoSuchOption
except ImportError:        # pragma: no cover - older typer, on click itself
    from click.exceptions import NoSuchOption

if TYPE_CHECKING:
    from rooflint.commands.gate import Report
    from rooflint.output.outputs import Named, Output

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Roofline profiler and kernel diagnostician for NVIDIA GPUs.")
console = Console()
errors = Console(stderr=True)


def _print_version(value: bool) -> None:
    if value:
        from rooflint.common.version import __version__
        try:
            emit(f"rooflint {__version__}")
        except RooflintError as exc:    # eager: before any command's one_line_errors
            fail(str(exc))
        raise typer.Exit()


SIGPIPE_STATUS = 141    # 128 + SIGPIPE, as a shell reports `yes | head`


class GuardedOutput:
    """Standard output whose failure is a RooflintError, so `rooflint specs > /dev/full` is
    one line and exit 2 like any other unwritable output. A reader that stopped reading
    (`rooflint show r.json | head`) is not an error: rooflint stops quietly with the
    status a shell gives a program ended by SIGPIPE. Once it has failed, the descriptor
    is pointed at /dev/null: the interpreter's last flush of what is still buffered then
    has nowhere to fail."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self._stream.write, text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call, *args):
        try:
            return call(*args)
        except OSError as exc:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), self._stream.fileno())
            if exc.errno == errno.EPIPE:
                raise typer.Exit(SIGPIPE_STATUS) from None
            raise RooflintError(f"cannot write to standard output: "
                                f"{exc.strerror or exc}") from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def emit(text: str) -> None:
    """A line of plain output (JSON, the version) on standard output, flushed now so a
    full disk or a closed pipe is reported by GuardedOutput, not lost at exit."""
    out = sys.stdout if isinstance(sys.stdout, GuardedOutput) else GuardedOutput(sys.stdout)
    out.write(text + "\n")
    out.flush()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_print_version,
                                      is_eager=True, help="Print the version and exit.")) -> None:
    """Roofline profiler and kernel diagnostician for NVIDIA GPUs."""
    if not isinstance(sys.stdout, GuardedOutput):
        sys.stdout = GuardedOutput(sys.stdout)


class Cache(str, Enum):
    cold = "cold"
    warm = "warm"


class Counters(str, Enum):
    auto = "auto"
    ncu = "ncu"
    off = "off"


def say(message: str) -> None:
    """One line on stderr, as every rooflint error is printed: the one door for errors, so
    the names from files that messages quote are made printable here (an escape sequence
    in a variant's name would otherwise drive the terminal, a newline split the line)."""
    from rooflint.common.printable import printable
    errors.print(f"rooflint: {printable(message)}", markup=False, highlight=False,
                 soft_wrap=True)


def fail(message: str, code: int = 2) -> None:
    say(message)
    raise typer.Exit(code)


def one_line_errors(command):
    """User errors become one line on stderr and exit code 2, never a traceback; Ctrl-C
    becomes one line and exit code 130."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except KeyboardInterrupt:
            fail("interrupted; nothing written", 130)
        except RooflintError as exc:
            fail(str(exc))
        except Exception as exc:
            if os.environ.get("ROOFLINT_DEBUG"):
                raise
            fail(f"internal error: {type(exc).__name__}: {exc} "
                 "(set ROOFLINT_DEBUG=1 for the traceback)")
    return wrapper


STDOUT = Path("-")  # `--json -`: the result document goes to standard output


@app.command()
@one_line_errors
def run(
    target: Optional[str] = typer.Argument(None, help="Kernel family: a directory with kernel.yaml, "
                                           "a kernel.yaml, or a bundled name. Default: all bundled."),
    variants: Optional[List[str]] = typer.Argument(None, help="Variants to run (default: all)."),
    size: List[str] = typer.Option([], "--size", help="Override a parameter, e.g. --size N=2048."),
    gpu: Optional[str] = typer.Option(None, help="GPU spec id to judge against (default: match the device)."),
    cache: Cache = typer.Option(Cache.cold, help="cold: flush L2 before each timed run; warm: do not."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the result document "
                                             "here (- for standard output; the rest goes to stderr)."),
    svg: Optional[Path] = typer.Option(None, "--svg", help="Draw the roofline of this run (.svg/.png/.pdf)."),
    timeout: float = typer.Option(120.0, help="Seconds a variant may take before it is abandoned."),
    counters: Counters = typer.Option(Counters.auto, help="auto: Nsight Compute counters when ncu "
                                      "works, else model bytes; ncu: require them; off."),
    timings: bool = typer.Option(False, "--timings", help="Say where the run's seconds went "
                                 "(start-up, inputs, compile, check, timing, counters...)."),
    devices: Optional[str] = typer.Option(None, help="Spread the families over these GPUs: "
                                          "all, or indices such as 0,2 (of those "
                                          "CUDA_VISIBLE_DEVICES leaves visible)."),
    gpm: bool = typer.Option(False, "--gpm", help="Sample NVML GPM utilizations (SM, DRAM, "
                             "pipes) for each variant too: 0.2 s each, shown as evidence."),
    source: bool = typer.Option(False, "--source", help="Profile each CUDA variant once more "
                                "with Nsight Compute's source counters and print, under its "
                                "top move, the lines of its .cu that move is about."),
) -> None:
    """Measure kernel variants on this GPU and place each on its roofline."""
    from rooflint.measure.devices import device_indices, parse_devices, visible_devices
    from rooflint.measure.runner import timing_pools
    from rooflint.commands.run import RunOptions, check_inputs, parse_sizes, run as run_families

    to_stdout = json_path == STDOUT
    if source and counters == Counters.off:
        fail("--source reads Nsight Compute's source counters: it cannot run with --counters off")
    check_outputs(None if to_stdout else json_path, picture=svg)
    if devices is not None:
        device_indices(devices)    # nonsense is refused before any GPU is counted
    chosen = parse_devices(devices, visible_devices()) if devices is not None else None
    options = RunOptions(targets=[target] if target else [], variants=variants or [],
                         sizes=parse_sizes(size), gpu=gpu, cache=cache.value,
                         timeout_s=timeout, json_path=None if to_stdout else json_path,
                         counters=counters.value, devices=chosen, gpm=gpm, source=source)
    manifests = check_inputs(options)   # every input mistake, before any worker starts
    pools = timing_pools(chosen)   # their start-up runs while the rest of rooflint loads
    try:
        from rooflint.output.live import RunDisplay
        screen = errors if to_stdout else console
        display = RunDisplay(screen, tables=True)
        try:
            with display:
                result = run_families(options, display.listener(), pools, manifests)
        except KeyboardInterrupt:
            fail(interrupted_run(display.done, display.timed, options.json_path), 130)
    finally:
        for pool in pools:   # already closed by the run, unless it never began
            pool.kill()
    if timings:
        from rooflint.output.tables import render_timings
        render_timings(screen, result)
    if to_stdout:
        emit(json.dumps(result.to_json(), indent=1))
    elif json_path:
        screen.print(f"result written to {json_path}", markup=False)
    if svg:
        from rooflint.output import plotting
        plotting.save(plotting.figure([result]), svg)
        screen.print(f"roofline drawn to {svg}", markup=False)
    if any(v.status in ("fail", "error") for f in result.families for v in f.variants):
        raise typer.Exit(1)


class ProgramCommand(TyperCommand):
    """`profile`'s parser. Without ``--``, the profiled program's own options
    (``python -c``) reach rooflint's parser, which alone would say only "No such option:
    -c"; an unknown option there is answered with where ``--`` goes."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        typed = list(args)          # the parser consumes ``args``
        try:
            return super().parse_args(ctx, args)
        except NoSuchOption as exc:
            start = self._program_start(ctx, typed)
            if "--" in typed or exc.option_name in typed[:start]:
                raise               # before the program: a misspelt rooflint option
            fail(f"no such option {exc.option_name} for {ctx.command_path}; if it is the "
                 f"program's, put -- before the program: {ctx.command_path} "
                 f"{shlex.join([*typed[:start], '--', *typed[start:]])}")

    def _program_start(self, ctx, args: list[str]) -> int:
        """Where the program begins in ``args``: the first word that is neither one of
        rooflint's options nor an option's value."""
        valued = {name for param in self.get_params(ctx)
                  if param.param_type_name == "option" and not param.is_flag
                  for name in param.opts}
        start = 0
        while start < len(args) and args[start].startswith("-"):
            start += 2 if args[start] in valued else 1
        return start


@app.command(cls=ProgramCommand)
@one_line_errors
def profile(
    command: List[str] = typer.Argument(..., help="The program to profile, after --: "
                                        "rooflint profile -- python train.py --steps 20"),
    top: Optional[int] = typer.Option(None, min=1, help="Profile the N kernels with the most "
                                      "GPU time (default: those covering --coverage)."),
    coverage: float = typer.Option(0.90, min=0.01, max=1.0, help="Profile the kernels that "
                                   "together take this fraction of the GPU time."),
    nvtx: Optional[str] = typer.Option(None, help="Only launches inside this NVTX range "
                                       "(push/pop name), e.g. to leave out warm-up."),
    kernel: Optional[str] = typer.Option(None, help="Only kernels whose demangled name "
                                         "matches this regular expression."),
    skip: int = typer.Option(0, min=0, help="Leave out the first N kernel launches (warm-up)."),
    gpu: Optional[str] = typer.Option(None, help="GPU spec id (default: match the device)."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the result document "
                                             "(the schema show, plot, compare and gate read)."),
    svg: Optional[Path] = typer.Option(None, "--svg", help="Draw the kernels' roofline."),
    logs: Optional[Path] = typer.Option(None, help="Keep Nsight Compute's CSV logs in this "
                                        "directory."),
    model: Optional[Path] = typer.Option(None, help="YAML giving kernels (by name pattern) "
                                         "their FLOPs and compulsory bytes per launch, so they "
                                         "get an algorithmic intensity."),
) -> None:
    """Diagnose the kernels of any CUDA program, ranked by what fixing them would save."""
    import re

    from rooflint.commands.profile import ProfileOptions, profile_program
    from rooflint.output.tables import render_run

    if kernel:
        try:
            re.compile(kernel)
        except re.error as exc:
            fail(f"--kernel {kernel!r} is not a regular expression: {exc}")
    if logs and not logs.is_dir():
        fail(f"--logs {logs}: no such directory")
    check_outputs(json_path, picture=svg, logs=logs, model=model)
    terminate = signal.signal(signal.SIGTERM, _interrupt)
    try:
        result, stopped = profile_program(
            ProfileOptions(command=command, coverage=coverage, top=top, nvtx=nvtx,
                           kernel=kernel, skip=skip, gpu=gpu, logs=str(logs) if logs else None,
                           model=str(model) if model else None), say)
    finally:
        signal.signal(signal.SIGTERM, terminate)
    render_run(console, result)
    if json_path:
        from rooflint.formats.results import write_result
        write_result(result, json_path)
        console.print(f"result written to {json_path}", markup=False)
    if svg and not stopped:
        from rooflint.output import plotting
        plotting.save(plotting.figure([result]), svg)
        console.print(f"roofline drawn to {svg}", markup=False)
    if stopped:       # pass 2 failed or was interrupted: pass 1's times are all there is
        kept = f"{json_path} keeps" if json_path else "the table shows"
        fail(f"{stopped.why}; {kept} pass 1's kernel times, without counters"
             + (f" (no roofline to draw in {svg})" if svg else ""),
             130 if stopped.interrupted else 2)


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM while a program is profiled (``timeout``, a batch scheduler's limit) is
    handled as Ctrl-C is: pass 1's times are kept, and pass 2's early-started program, in
    a session of its own that the signal does not reach, is stopped, not left waiting."""
    raise KeyboardInterrupt


def check_outputs(json_path: Optional[Path], picture: Optional[Path] = None,
                  logs: Optional[Path] = None, model: Optional[Path] = None) -> None:
    """`run`'s and `profile`'s outputs, checked before minutes of measuring, not after:
    --json replaces only a rooflint result, --svg only a picture of its format, profile's
    --logs only its own earlier logs, none of them is --model, and all can be written
    (see rooflint.outputs)."""
    from rooflint.output import outputs
    from rooflint.measure.program import LOGS
    asked = ([outputs.Output("--json", json_path, outputs.RESULT)] if json_path else []) + \
        ([outputs.Output("--svg", picture, outputs.PICTURE)] if picture else []) + \
        [outputs.Output("--logs", logs / name, outputs.PROFILE_LOG) for name in LOGS
         if logs]
    guard_outputs(asked, [outputs.Named("--model", model)] if model else [])


def guard_outputs(asked: Sequence[Output], inputs: Sequence[Named] = (),
                  writable: bool = True) -> None:
    """The guard every command runs first: nothing the user named is overwritten unless it
    is the output asked for, of its kind (rooflint.outputs); with ``writable``, each
    replaced output can be written, too (jsonfile.require_writable)."""
    from rooflint.formats.jsonfile import require_writable
    from rooflint.output.outputs import refuse_overwrites
    refuse_overwrites(asked, inputs)
    for output in asked if writable else ():
        if output.kind is not None:
            require_writable(output.path)


def interrupted_run(done: list[str], timed: list[str], json_path: Optional[Path]) -> str:
    """What an interrupted run leaves: the families already in the result file, if any
    (those timed but not yet profiled, with their timings and model bytes)."""
    if json_path and timed:
        partial = [name for name in timed if name not in done]
        kept = [", ".join(done)] if done else []
        kept += [f"{', '.join(partial)} timed only (counters not taken)"] if partial else []
        return f"interrupted; {json_path} keeps {'; '.join(kept)}"
    if json_path:
        return f"interrupted before a family finished; {json_path} not written"
    return "interrupted; nothing written"


@app.command()
@one_line_errors
def show(
    result_path: Path = typer.Argument(..., metavar="RESULT", help="A result file written by "
                                       "`rooflint run --json`."),
    variants: Optional[List[str]] = typer.Argument(None, help="Only these variants (default: all)."),
) -> None:
    """Print a saved result as `run` printed it: tables, notes, causes, moves (no GPU needed)."""
    from rooflint.output.tables import only_variants, render_run
    from rooflint.formats.results import read_result

    render_run(console, only_variants(read_result(result_path), variants or [], result_path))


@app.command()
@one_line_errors
def explain(
    time: str = typer.Option(..., help="Kernel time: 0.713ms, 40us, 2.1e-3 (seconds)."),
    flops: str = typer.Option(..., help="Floating-point operations: 537e6, 137.4G, 0."),
    bytes_: str = typer.Option(..., "--bytes", help="DRAM bytes moved: 128MiB, 201MB, 8GiB."),
    gpu: str = typer.Option(..., help="GPU spec id (see `rooflint specs`)."),
    algorithmic_bytes: Optional[str] = typer.Option(None, help="Compulsory bytes (default: --bytes)."),
    precision: str = typer.Option("fp32", help=f"Compute roof: {', '.join(PRECISIONS)}."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    datasheet: bool = typer.Option(False, help="Judge against datasheet roofs even when a "
                                   "calibration of this GPU is cached."),
) -> None:
    """Place a kernel on a GPU's roofline from typed numbers (no GPU needed)."""
    from rooflint.analysis import calibration as calibrations
    from rooflint.commands.explain import explain as explain_point
    from rooflint.output.roofs import render_explanation
    from rooflint.common.units import parse_bytes, parse_count, parse_time

    if precision not in PRECISIONS:
        fail(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    spec = find_spec(gpu, load_specs())
    compulsory = parse_bytes(algorithmic_bytes) if algorithmic_bytes else None
    if compulsory == 0:
        fail(f"--algorithmic-bytes {algorithmic_bytes}: a kernel's compulsory bytes are more "
             f"than 0 (it reads its inputs and writes its outputs); leave the option out to "
             f"take --bytes")
    calibration = None if datasheet else calibrations.find(spec.id)
    explanation = explain_point(spec, parse_time(time), parse_count(flops), parse_bytes(bytes_),
                                compulsory, precision, calibration)
    if as_json:
        emit(json.dumps(explanation.to_json(), indent=1))
    else:
        render_explanation(console, explanation)


class GpuMismatch(str, Enum):
    error = "error"
    warn = "warn"


@app.command()
@one_line_errors
def gate(
    baseline_path: Path = typer.Option(..., "--baseline", help="Baseline file (written by --update)."),
    targets: Optional[List[str]] = typer.Argument(None, help="Families to measure now (default: all bundled)."),
    current: Optional[Path] = typer.Option(None, help="Judge this result file instead of measuring."),
    update: bool = typer.Option(False, help="Write the baseline from this run instead of judging."),
    max_slowdown: Optional[str] = typer.Option(None, help="Time threshold, a percentage: 5% (the default, or the manifest's)."),
    max_bytes_growth: Optional[str] = typer.Option(None, help="DRAM-bytes threshold, a percentage (default 2%)."),
    max_flops_growth: Optional[str] = typer.Option(None, help="Counted-FLOPs threshold, a percentage (default 2%)."),
    gpu_mismatch: GpuMismatch = typer.Option(GpuMismatch.error, help="A baseline from another GPU: error or warn."),
    markdown: Optional[Path] = typer.Option(None, help="Also write a Markdown summary here."),
    junit: Optional[Path] = typer.Option(None, help="Also write JUnit XML here."),
    counters: Counters = typer.Option(Counters.auto, help="Counters for measured runs."),
    recheck: bool = typer.Option(False, help="Before failing on time, re-measure the suspect "
                                 "variants interleaved with the baseline's code (git revision "
                                 "recorded in the baseline)."),
) -> None:
    """Fail (exit 1) when a kernel got slower, moves more bytes, or turned wrong."""
    import os

    from rooflint.formats import baseline as baselines
    from rooflint.commands.gate import evaluate, recheck as gate_recheck
    from rooflint.common.printable import printable
    from rooflint.commands.sides import remeasure_against
    from rooflint.output.live import RunDisplay
    from rooflint.output.gate_report import render_gate
    from rooflint.formats.results import read_result
    from rooflint.commands.run import RunOptions, run as run_families

    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    summary_path = Path(step_summary) if step_summary else None
    guard_gate_files(baseline_path, current, update, markdown, junit, summary_path)
    if current and targets:
        fail(f"--current {current} is judged instead of measuring, so TARGET "
             f"{' '.join(targets)} would be ignored: drop the targets, or drop --current")
    unjudged = [option for option, path in (("--markdown", markdown), ("--junit", junit)) if path]
    if update and unjudged:
        fail(f"--update writes the baseline and judges nothing: drop {' and '.join(unjudged)}")
    overrides = {key: threshold(f"--{key.replace('_', '-')}", value) for key, value in (
        ("max_slowdown", max_slowdown), ("max_bytes_growth", max_bytes_growth),
        ("max_flops_growth", max_flops_growth)) if value is not None}
    if current is None and not update and not baseline_path.exists():
        fail(f"no baseline at {baseline_path}; make one with: rooflint gate --update "
             f"--baseline {baseline_path}")
    if current:
        result = read_result(current)
    else:
        with RunDisplay(console, tables=False) as display:
            result = run_families(RunOptions(targets=targets or [], variants=[], sizes={},
                                             counters=counters.value), display.listener())
    measured = baselines.from_result(result)
    if update:
        baselines.write(measured, baseline_path)
        console.print(f"baseline written to {baseline_path}: {len(measured.entries)} variants "
                      f"on {printable(measured.gpu)}, driver {printable(measured.driver)}",
                      markup=False)
        return
    reference = baselines.read(baseline_path)
    report = evaluate(reference, measured, overrides, gpu_mismatch.value)
    if recheck:
        report = gate_recheck(report, remeasure_against(reference, result))
    render_gate(console, report)
    written = write_gate_reports(report, markdown, junit, summary_path)
    if not report.passed:
        raise typer.Exit(1)
    if not written:
        raise typer.Exit(2)


def guard_gate_files(baseline: Path, current: Path | None, update: bool, markdown: Path | None,
                     junit: Path | None, step_summary: Path | None) -> None:
    """The gate's files, guarded: with --update it writes the baseline (from --current, if
    given); otherwise it reads the baseline (and --current) and writes the reports. With
    --current, a report that cannot be written is said after the verdict; measuring takes
    minutes, so then every path must work first."""
    from rooflint.output import outputs
    read = [outputs.Named("--current", current)] if current else []
    if update:
        written = [outputs.Output("--baseline", baseline, outputs.BASELINE)]
    else:
        read.append(outputs.Named("--baseline", baseline))
        written = [outputs.Output(option, path, kind) for option, path, kind in (
            ("--markdown", markdown, outputs.GATE_SUMMARY), ("--junit", junit, outputs.JUNIT),
            ("GITHUB_STEP_SUMMARY", step_summary, None)) if path]
    guard_outputs(written, read, writable=current is None)


def threshold(option: str, value: str) -> float:
    """A gate threshold typed on the command line (``--max-slowdown 5%``) as a fraction;
    an error names the option."""
    from rooflint.formats.thresholds import parse_fraction
    try:
        return parse_fraction(value)
    except RooflintError as exc:
        raise RooflintError(f"{option} {exc}") from None


def write_gate_reports(report: Report, markdown: Path | None, junit: Path | None,
                       step_summary: Path | None) -> bool:
    """Write every report the gate was asked for, after its verdict is on the screen; one
    that cannot be written is one line on stderr, and neither stops the others nor hides
    the verdict. False if any failed."""
    from rooflint.formats.jsonfile import append_text, write_text
    from rooflint.output.gate_report import gate_junit, gate_markdown

    summary = gate_markdown(report)
    writes = [(write_text, summary, markdown), (append_text, summary, step_summary),
              (write_text, gate_junit(report), junit)]
    written = True
    for write, text, path in writes:
        try:
            if path:
                write(text, path)
        except RooflintError as exc:
            say(str(exc))
            written = False
    return written


@app.command()
@one_line_errors
def calibrate(
    gpu: Optional[str] = typer.Option(None, help="GPU spec id (default: match the device)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Also write the calibration JSON here."),
) -> None:
    """Measure this GPU's ceilings (DRAM, L2, FP32, FP64, tensor) and keep them for run and explain."""
    from rooflint.analysis import calibration as calibrations
    from rooflint.measure.runner import calibrate as measure_ceilings
    from rooflint.output.roofs import render_calibration
    from rooflint.commands.judge import device_spec

    if gpu:
        find_spec(gpu, load_specs())     # a typo is said now, not after the measuring
    if output:
        from rooflint.output.outputs import CALIBRATION, Output
        guard_outputs([Output("--output", output, CALIBRATION)])
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("calibrating", total=None)

        def update(step: str, total: int) -> None:
            if bar.tasks[task].total is None:
                bar.update(task, total=total)
            else:
                bar.advance(task)
            bar.update(task, description=f"calibrating: {step}")
        device, steps, skipped = measure_ceilings(update)
    spec = device_spec(device, gpu, load_specs())
    calibration = calibrations.from_steps(device, spec, steps, skipped)
    path = calibrations.default_path(spec.id, device.driver)
    calibrations.save(calibration, path)
    if output:
        calibrations.save(calibration, output)
    render_calibration(console, calibration, spec)
    console.print(f"saved to {path}" + (f" and {output}" if output else ""))


@app.command()
@one_line_errors
def plot(
    results: List[Path] = typer.Argument(..., help="Result files written by `rooflint run --json`."),
    output: Path = typer.Option(Path("roofline.svg"), "--output", "-o",
                                help="Picture to write: .svg, .png or .pdf."),
    variant: List[str] = typer.Option([], "--variant", "-v",
                                      help="Only these variants, in this order (repeatable)."),
    trajectory: bool = typer.Option(False, help="Arrows from each variant to the next, in order."),
) -> None:
    """Draw the roofline of measured results (no GPU needed)."""
    from rooflint.output import plotting
    from rooflint.output.outputs import PICTURE, Named, Output
    from rooflint.formats.results import read_result

    # a bad or precious path fails before any file is read
    guard_outputs([Output("--output", output, PICTURE)], [Named("RESULT", p) for p in results])
    plotting.save(plotting.figure([read_result(p) for p in results], variant or None,
                                  trajectory), output)
    console.print(f"roofline drawn to {output}", markup=False)


@app.command()
@one_line_errors
def compare(
    a: str = typer.Argument(..., help="A: result.json, result.json:VARIANT, or TARGET:VARIANT to measure."),
    b: Optional[str] = typer.Argument(None, help="B, as A; omitted with --rev."),
    rev: Optional[str] = typer.Option(None, help="Compare A as it was at this git revision "
                                      "(A must be TARGET:VARIANT) with the working tree."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    allow_different_gpu: bool = typer.Option(False, help="Compare results from different GPUs."),
    gpu: Optional[str] = typer.Option(None, help="GPU spec id for measured sides."),
    counters: Counters = typer.Option(Counters.auto, help="Counters for measured sides."),
    max_slowdown: Optional[str] = typer.Option(None, help="Minimum clear gap of the time "
                                               "decision, as in gate (default: B's manifest "
                                               "threshold, else 5%)."),
) -> None:
    """Compare two variants: speedup with an interval, movement on the roofline, prediction."""
    from dataclasses import asdict

    from rooflint.analysis.comparison import compare as compare_variants
    from rooflint.common.printable import printable
    from rooflint.output.tables import render_comparison
    from rooflint.commands.sides import gpu_warning, resolve_pairs, split_side, unmatched

    gap = threshold("--max-slowdown", max_slowdown) if max_slowdown is not None else None
    if gpu:
        find_spec(gpu, load_specs())     # an unknown id is an error, whatever the sides are

    with Progress(TextColumn("{task.description}"), console=console, transient=True) as bar:
        bar.add_task("reading" if split_side(a)[0].endswith(".json") else "measuring both sides, interleaved")
        pairs = resolve_pairs(a, b, rev, gpu, counters.value,
                              lambda family, phase: (lambda event, variant: None))
    warning = gpu_warning(pairs, allow_different_gpu)
    comparisons = [compare_variants(x.variant, y.variant, x.label, y.label, gap)
                   for x, y in pairs]
    vanished, new = unmatched(a, b) if b is not None else ([], [])
    if as_json:
        emit(json.dumps({"warning": warning, "vanished": vanished, "new": new,
                               "comparisons": [
            {**asdict(c), "sentence": c.sentence,
             "attribution": c.attribution and {**asdict(c.attribution),
                                               "sentence": c.attribution.sentence}}
            for c in comparisons]}, indent=1))
        return
    if warning:
        errors.print(f"rooflint: {printable(warning)}", style="bold yellow", markup=False)
    for comparison in comparisons:
        render_comparison(console, comparison)
    for what, names in (("only in A (vanished in B)", vanished), ("only in B (new)", new)):
        if names:
            console.print(f"{what}: {printable(', '.join(names))}", markup=False)


@app.command()
@one_line_errors
def specs(gpu: Optional[str] = typer.Argument(None, help="Show one GPU (id or name).")) -> None:
    """List the GPU datasheet specs, or show one with its ridge points."""
    from rooflint.output.roofs import render_spec, render_specs

    known = load_specs()
    if gpu:
        render_spec(console, find_spec(gpu, known))
    else:
        render_specs(console, known)
