"""The `rooflint` command line: each command's options and help, and one call to the
module that does the command (rooflint/commands/<command>.py). Nothing else.

Exit codes: 0 ok, 1 a correctness failure, 2 usage or environment error (bad input,
no GPU). Errors are one line on stderr, never a traceback (rooflint.commands.stdio).

Each command imports its module inside its function, not at the top: so `rooflint --help`,
`specs` and `explain` start without CuPy, matplotlib, the live display or the worker.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import OptionInfo

from rooflint.commands.completion import CompletingGroup
from rooflint.commands.stdio import (GuardedErrors, GuardedOutput, set_quiet, console,
                                      emit, fail, one_line_errors, say)
from rooflint.common.errors import RooflintError
from rooflint.common.vocabularies import CacheMode, CountersMode, GpuMismatch, Precision
from rooflint.common.version import __version__
from rooflint.commands.requests import (CalibrateRequest, CompareRequest, ExplainRequest,
                                        Exports, GateRequest, ImportRequest, PlotRequest,
                                        ProfileRequest, ReportRequest, RunRequest, ShowRequest)
from rooflint.formats.thresholds import DEFAULT_MAX_GROWTH, DEFAULT_MAX_SLOWDOWN, as_percent
from rooflint.output.depth import Depth

# click's usage error (a missing or unknown option, a bad value), whichever click typer
# builds on: its own copy since typer 0.2x, click itself before.
UsageError = typer.BadParameter.__mro__[1]
QUIET = ("-q", "--quiet")
QUIET_HELP = ("Print no tables, progress or warnings: only errors, and the outputs asked for "
              "on standard output (--json -, --csv -).")


class OneLineUsage:
    """A parser whose usage mistakes (a missing or unknown option or argument, a bad
    value, an unknown command) are one line, exit 2, as every rooflint error is, not
    click's usage block ("Usage: ... Try 'rooflint explain --help' for help. Error: ...").
    A group given no words still prints its help (click >= 8.2 raises that as a usage
    error too)."""

    def make_context(self, info_name, args, parent=None, **extra):
        help_asked = not args and getattr(self, "no_args_is_help", False)
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as exc:
            if help_asked:
                raise
            usage_mistake(exc, info_name, parent)

    def resolve_command(self, ctx, args):
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            usage_mistake(exc, ctx.info_name, ctx.parent)


def usage_mistake(exc, info_name: str, parent) -> None:
    """Fail with click's usage error ``exc`` as rooflint's one line, naming the command
    it was made in (``rooflint: cache clear: ...``) and where its options are listed."""
    path = f"{parent.command_path} {info_name}" if parent else info_name
    said = exc.format_message().rstrip(".")
    command = path.partition(" ")[2]
    fail(f"{command + ': ' if command else ''}{said[:1].lower()}{said[1:]} ({path} --help "
         f"lists what it takes)")


class Group(OneLineUsage, CompletingGroup):
    """rooflint's own parser: completion answered (CompletingGroup), mistakes in one line."""


class SubGroup(OneLineUsage, TyperGroup):
    """A group of commands under rooflint (`cache`): its mistakes in one line."""


app = typer.Typer(cls=Group, no_args_is_help=True, rich_markup_mode=None,
                  help="Roofline profiler and kernel diagnostician for NVIDIA GPUs.")


def _print_version(value: bool) -> None:
    if value:
        try:
            emit(f"rooflint {__version__}")
        except RooflintError as exc:    # eager: before any command's one_line_errors
            fail(str(exc))
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_print_version,
                                      is_eager=True, help="Print the version and exit."),
         quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP)) -> None:
    """Roofline profiler and kernel diagnostician for NVIDIA GPUs."""
    if not isinstance(sys.stdout, GuardedOutput):
        sys.stdout = GuardedOutput(sys.stdout)
    if not isinstance(sys.stderr, GuardedErrors):
        sys.stderr = GuardedErrors(sys.stderr)
    set_quiet(quiet)


CSV_HELP = ("Also write a CSV table here, a row per variant or kernel: time, FLOP/s, "
            "bandwidth, intensities and fractions of each level, verdict, top move and gain "
            "(- for standard output).")
MARKDOWN_HELP = "Also write that table as Markdown here (- for standard output)."
HTML_HELP = ("Also write the result as `rooflint report` would: one self-contained HTML page "
             "(- for standard output).")
SUMMARY_HELP = ("Print the verdicts alone: each family's table, a profile's fixes (the "
                "default adds the roofs and the notes that matter, a profile's top kernels).")
DETAIL_HELP = ("Print everything: each variant's notes with the moves its verdict ruled out, "
               "a profile's every kernel row under its fixes.")
SVG_HELP = "(.svg/.png/.pdf; - for SVG on standard output)."
FORCE_HELP = ("Replace an output file that exists though it is not of the kind written (by "
              "default rooflint stops rather than replace a file it did not write).")


def force_option() -> OptionInfo:
    """--force, as every command that writes a file takes it."""
    return typer.Option(False, "--force", help=FORCE_HELP)


def depth_of(summary: bool, detail: bool) -> Depth:
    """The depth --summary or --detail asks for; both at once is a usage mistake."""
    if summary and detail:
        raise RooflintError("--summary and --detail ask for opposite things: give one")
    return Depth.SUMMARY if summary else Depth.DETAIL if detail else Depth.DEFAULT
GPU_HELP = ("GPU spec id (see `rooflint specs`), or its family (h100: the board in this "
            "machine)")


class Command(OneLineUsage, TyperCommand):
    """Every command's parser: arguments shown by their names alone in --help, not with
    the Python types typer adds (``RESULT <list[Path]>``); options show their metavars.
    ``renamed`` maps an option's old spelling to its name now (issue 27: one name for one
    kind of output in every command); the old one still works, and says it is deprecated.
    Every command takes ``-q`` as rooflint itself does (`rooflint show -q r.json`), and a
    mistake in its options is one line (OneLineUsage)."""

    renamed: dict[str, str] = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.epilog = f"{' or '.join(QUIET)} (here or before the command): {QUIET_HELP}"

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for param in params:
            if param.param_type_name == "argument":
                param.display_type_rich = lambda ctx: None
        return params

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, respelled(without_quiet(args), self.renamed))


def without_quiet(args: list[str]) -> list[str]:
    """``args`` less ``-q``/``--quiet`` before a program's ``--``, which turn quiet on: the
    option rooflint takes before the command, taken after it too."""
    end = args.index("--") if "--" in args else len(args)
    if not set(QUIET) & set(args[:end]):
        return args
    set_quiet(True)
    return [a for a in args[:end] if a not in QUIET] + args[end:]


def respelled(args: list[str], renamed: dict[str, str]) -> list[str]:
    """``args`` with each old spelling (``-o FILE``, ``--output=FILE``) written as the
    option is named now, each saying it is deprecated; a program's arguments, after
    ``--``, are its own."""
    end = args.index("--") if "--" in args else len(args)
    words = []
    for arg in args[:end]:
        name, equals, value = arg.partition("=")
        if name in renamed:
            deprecated(name, f"{renamed[name]} FILE")
            arg = renamed[name] + equals + value
        words.append(arg)
    return words + args[end:]


def deprecated(spelling: str, instead: str) -> None:
    say(f"{spelling} is deprecated: write {instead}")


class JsonFileCommand(Command):
    """explain's and compare's parser: their --json printed JSON, taking no value, before it
    came to take a file as everywhere else (issue 27). A bare --json (last, or before
    another option) still prints to standard output, and says it is deprecated."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        args = list(args)
        for i, arg in enumerate(args):
            if arg == "--json" and (i + 1 == len(args) or
                                    args[i + 1].startswith("-") and args[i + 1] != "-"):
                args.insert(i + 1, "-")
                deprecated("--json without a file", "--json - for standard output")
                break
        return super().parse_args(ctx, args)


class CalibrateCommand(Command):
    """calibrate's parser: its JSON copy was ``-o``/``--output``, the name the other
    commands give the one file they exist to write (a plot, a report), not a copy beside
    their work; it is ``--json`` now, as in run, profile, explain and compare."""

    renamed = {"-o": "--json", "--output": "--json"}


@app.command(cls=Command)
@one_line_errors
def run(
    target: Optional[str] = typer.Argument(None, help="Kernel family: a directory with "
                                           "kernel.yaml, a kernel.yaml, or a bundled name. "
                                           "Default: all bundled.", metavar="TARGET"),
    variants: Optional[List[str]] = typer.Argument(None, help="Variants to run (default: all).",
                                                   metavar="VARIANT"),
    size: List[str] = typer.Option([], "--size", help="Override a parameter, e.g. --size N=2048.",
                                   metavar="NAME=VALUE"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help=f"{GPU_HELP} to judge against "
                                      "(default: match the device).", metavar="GPU"),
    cache: CacheMode = typer.Option(RunRequest.cache, "--cache", help="cold: flush L2 before "
                                    "each timed run; warm: do not."),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the result document "
                                             "here (- for standard output; the rest goes to "
                                             "stderr).", metavar="FILE"),
    svg: Optional[Path] = typer.Option(None, "--svg", help="Draw the roofline of this run "
                                       f"{SVG_HELP}", metavar="FILE"),
    timeout: float = typer.Option(RunRequest.timeout_s, "--timeout", help="Seconds a variant "
                                  "may take before it is abandoned.", metavar="SECONDS"),
    counters: CountersMode = typer.Option(RunRequest.counters, "--counters", help="auto: "
                                          "Nsight Compute counters when ncu works, else model "
                                          "bytes; ncu: require them; off."),
    timings: bool = typer.Option(False, "--timings", help="Say where the run's seconds went "
                                 "(start-up, inputs, compile, check, timing, counters...)."),
    devices: Optional[str] = typer.Option(None, "--devices", help="Spread the families over "
                                          "these GPUs: all, or indices such as 0,2 (of those "
                                          "CUDA_VISIBLE_DEVICES leaves visible).",
                                          metavar="DEVICES"),
    gpm: bool = typer.Option(False, "--gpm", help="Sample NVML GPM utilizations (SM, DRAM, "
                             "pipes) for each variant too: 0.2 s each, shown as evidence."),
    source: bool = typer.Option(False, "--source", help="Profile each CUDA variant once more "
                                "with Nsight Compute's source counters and print, under its "
                                "top move, the lines of its .cu that move is about."),
    csv: Optional[Path] = typer.Option(None, "--csv", help=CSV_HELP, metavar="FILE"),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help=MARKDOWN_HELP, metavar="FILE"),
    html: Optional[Path] = typer.Option(None, "--html", help=HTML_HELP, metavar="FILE"),
    no_reference_cache: bool = typer.Option(False, "--no-reference-cache", help="Compute "
                                            "host references afresh, neither reading nor "
                                            "writing the outputs kept from earlier runs "
                                            "(`rooflint cache clear` removes them)."),
    no_counter_cache: bool = typer.Option(False, "--no-counter-cache", help="Profile every "
                                          "variant afresh, neither reading nor writing the "
                                          "counters kept from earlier runs of unchanged "
                                          "variants (`rooflint cache clear` removes them)."),
    summary: bool = typer.Option(False, "--summary", help=SUMMARY_HELP),
    detail: bool = typer.Option(False, "--detail", help=DETAIL_HELP),
    force: bool = force_option(),
) -> None:
    """Measure kernel variants on this GPU and place each on its roofline."""
    from rooflint.commands.run import run_command   # start-up: see the top
    run_command(RunRequest(
        target=target, variants=tuple(variants or ()), sizes=tuple(size), gpu=gpu,
        cache=cache, json_path=json_path, svg=svg, timeout_s=timeout, counters=counters,
        timings=timings, devices=devices, gpm=gpm, source=source,
        exports=Exports(csv, markdown, html), reference_cache=not no_reference_cache,
        counter_cache=not no_counter_cache, depth=depth_of(summary, detail), force=force))


class ProgramCommand(Command):
    """`profile`'s parser. Without ``--``, the profiled program's own options
    (``python -c``) reach rooflint's parser, which alone would say only "No such option:
    -c"; an option rooflint does not know, written after the program begins, is answered
    with where ``--`` goes. One written before the program is a misspelt rooflint option,
    left to the parser to name. (Read from the words, not from the parser's exception:
    that class lives in typer's private copy of click on newer typers.)"""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if "--" not in args:
            options = self._option_names(ctx)
            start = self._program_start(args, options)
            programs = [arg for arg in args[start:] if arg.startswith("-") and arg != "-"
                        and arg.partition("=")[0] not in options]
            if programs:
                fail(f"no such option {programs[0]} for {ctx.command_path}; if it is the "
                     f"program's, put -- before the program: {ctx.command_path} "
                     f"{shlex.join([*args[:start], '--', *args[start:]])}")
        return super().parse_args(ctx, args)

    def _option_names(self, ctx) -> dict[str, bool]:
        """Each of rooflint's option spellings, and whether it takes a value."""
        return {name: not param.is_flag for param in self.get_params(ctx)
                if param.param_type_name == "option"
                for name in (*param.opts, *param.secondary_opts)}

    @staticmethod
    def _program_start(args: list[str], options: dict[str, bool]) -> int:
        """Where the program begins in ``args``: the first word that is neither one of
        rooflint's options nor an option's value."""
        start = 0
        while start < len(args) and args[start].startswith("-"):
            start += 2 if options.get(args[start], False) else 1
        return start


@app.command(cls=ProgramCommand)
@one_line_errors
def profile(
    command: List[str] = typer.Argument(..., help="The program to profile, after --: "
                                        "rooflint profile -- python train.py --steps 20",
                                        metavar="PROGRAM"),
    top: Optional[int] = typer.Option(None, "--top", min=1, help="Profile the N kernels with "
                                      "the most GPU time, each with its function's other launch "
                                      "shapes, which ncu profiles with it (default: those "
                                      "covering --coverage).", metavar="N"),
    coverage: float = typer.Option(ProfileRequest.coverage, "--coverage", min=0.01, max=1.0,
                                   help="Profile the kernels that together take this "
                                   "fraction of the GPU time.", metavar="FRACTION"),
    nvtx: Optional[str] = typer.Option(None, "--nvtx", help="Only launches inside this NVTX range "
                                       "(push/pop name), e.g. to leave out warm-up.",
                                       metavar="RANGE"),
    kernel: Optional[str] = typer.Option(None, "--kernel", help="Only kernels whose demangled name "
                                         "matches this regular expression.", metavar="REGEX"),
    skip: int = typer.Option(ProfileRequest.skip, "--skip", min=0, help="Leave out the first N "
                             "kernel launches (warm-up).", metavar="N"),
    stop_after: int = typer.Option(ProfileRequest.stop_after, "--stop-after", min=0,
                                   help="End a Python program at its first optimizer's Nth "
                                   "step, in both passes: a training run is profiled on its "
                                   "first N steps (0: run it to its end).", metavar="N"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help=f"{GPU_HELP} (default: match the "
                                      "device).", metavar="GPU"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the result document "
                                             "(the schema show, plot, compare and gate read; "
                                             "- for standard output).", metavar="FILE"),
    svg: Optional[Path] = typer.Option(None, "--svg", help="Draw the kernels' roofline "
                                       f"{SVG_HELP}", metavar="FILE"),
    logs: Optional[Path] = typer.Option(None, "--logs", help="Keep the passes' logs (Nsight "
                                        "Compute's CSV, pass 1's trace, NCCL's logs) in this "
                                        "directory, made if missing.", metavar="DIR"),
    model: Optional[Path] = typer.Option(None, "--model", help="YAML giving kernels (by name "
                                         "pattern) their FLOPs and compulsory bytes per launch, "
                                         "so they get an algorithmic intensity.", metavar="FILE"),
    csv: Optional[Path] = typer.Option(None, "--csv", help=CSV_HELP, metavar="FILE"),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help=MARKDOWN_HELP, metavar="FILE"),
    html: Optional[Path] = typer.Option(None, "--html", help=HTML_HELP, metavar="FILE"),
    summary: bool = typer.Option(False, "--summary", help=SUMMARY_HELP),
    detail: bool = typer.Option(False, "--detail", help=DETAIL_HELP),
    no_counter_cache: bool = typer.Option(False, "--no-counter-cache", help="Profile every "
                                          "chosen kernel in pass 2, neither reading nor "
                                          "writing the counters of PyTorch's own kernels "
                                          "kept from earlier profiles (`rooflint cache "
                                          "clear` removes them)."),
    force: bool = force_option(),
) -> None:
    """Diagnose the kernels of any CUDA program, ranked by what fixing them would save."""
    from rooflint.commands.profile import profile_command   # start-up: see the top
    profile_command(ProfileRequest(
        command=tuple(command), top=top, coverage=coverage, nvtx=nvtx, kernel=kernel,
        skip=skip, stop_after=stop_after, gpu=gpu, json_path=json_path, svg=svg, logs=logs,
        model=model, exports=Exports(csv, markdown, html), depth=depth_of(summary, detail),
        counter_cache=not no_counter_cache, force=force))


@app.command("import", cls=Command)
@one_line_errors
def import_(
    files: List[Path] = typer.Argument(..., metavar="FILE", help="An Nsight Compute report "
                                       "(REPORT.ncu-rep, or its raw page: ncu -i REPORT.ncu-rep "
                                       "--csv --page raw), a PyTorch profiler trace (chrome-"
                                       "trace JSON), or one of each."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help=f"{GPU_HELP} to judge against "
                                      "(default: the GPU the files name).", metavar="GPU"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the result document "
                                             "(the schema show, plot, compare and gate read; "
                                             "- for standard output).", metavar="FILE"),
    summary: bool = typer.Option(False, "--summary", help=SUMMARY_HELP),
    detail: bool = typer.Option(False, "--detail", help=DETAIL_HELP),
    force: bool = force_option(),
) -> None:
    """Judge the kernels of an existing Nsight Compute report or PyTorch profiler trace as a
    profile's, without running anything (no GPU needed)."""
    from rooflint.commands.import_ import import_command   # start-up: see the top
    import_command(ImportRequest(files=tuple(files), gpu=gpu, json_path=json_path,
                                 depth=depth_of(summary, detail), force=force))


@app.command(cls=Command)
@one_line_errors
def show(
    result_path: Path = typer.Argument(..., metavar="RESULT", help="A result file written by "
                                       "`rooflint run --json`."),
    variants: Optional[List[str]] = typer.Argument(None, help="Only these families or "
                                                   "variants (default: all).",
                                                   metavar="NAME"),
    csv: Optional[Path] = typer.Option(None, "--csv", help=CSV_HELP, metavar="FILE"),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help=MARKDOWN_HELP, metavar="FILE"),
    html: Optional[Path] = typer.Option(None, "--html", help=HTML_HELP, metavar="FILE"),
    summary: bool = typer.Option(False, "--summary", help=SUMMARY_HELP),
    detail: bool = typer.Option(False, "--detail", help=DETAIL_HELP),
    force: bool = force_option(),
) -> None:
    """Print a saved result as `run` printed it: tables, notes, causes, moves (no GPU needed)."""
    from rooflint.commands.show import show_command    # start-up: see the top
    show_command(ShowRequest(result_path=result_path, variants=tuple(variants or ()),
                             exports=Exports(csv, markdown, html),
                             depth=depth_of(summary, detail), force=force))


@app.command(cls=JsonFileCommand)
@one_line_errors
def explain(
    time: str = typer.Option(..., "--time", help="Kernel time: 0.713ms, 40us, 2.1e-3 (seconds).",
                             metavar="TIME"),
    flops: str = typer.Option(..., "--flops", help="Floating-point operations: 537e6, 137.4G, 0.",
                              metavar="COUNT"),
    bytes_: str = typer.Option(..., "--bytes", help="DRAM bytes moved: 128MiB, 201MB, 8GiB.",
                               metavar="BYTES"),
    gpu: str = typer.Option(..., "--gpu", help=f"{GPU_HELP}.", metavar="GPU"),
    algorithmic_bytes: Optional[str] = typer.Option(None, "--algorithmic-bytes",
                                                    help="Compulsory bytes (default: --bytes).",
                                                    metavar="BYTES"),
    precision: str = typer.Option(ExplainRequest.precision, "--precision",
                                  help=f"Compute roof: {', '.join(Precision)}.",
                                  metavar="PRECISION"),
    json_path: Optional[Path] = typer.Option(None, "--json", metavar="FILE",
                                             help="Write it as JSON here (- for standard "
                                             "output, in place of the text)."),
    datasheet: bool = typer.Option(False, "--datasheet", help="Judge against datasheet roofs "
                                   "even when a calibration of this GPU is cached."),
    force: bool = force_option(),
) -> None:
    """Place a kernel on a GPU's roofline from typed numbers (no GPU needed)."""
    from rooflint.commands.explain import explain_command   # start-up: see the top
    explain_command(ExplainRequest(
        time=time, flops=flops, dram_bytes=bytes_, gpu=gpu, algorithmic_bytes=algorithmic_bytes,
        precision=precision, json_path=json_path, datasheet=datasheet, force=force))


@app.command(cls=Command)
@one_line_errors
def gate(
    baseline_path: Path = typer.Option(..., "--baseline", help="Baseline file (written by "
                                       "--update; - for standard input, or output with "
                                       "--update).", metavar="FILE"),
    targets: Optional[List[str]] = typer.Argument(None, help="Families to measure now "
                                                  "(default: all bundled).", metavar="TARGET"),
    current: Optional[Path] = typer.Option(None, "--current", help="Judge this result file "
                                           "instead of measuring.", metavar="FILE"),
    update: bool = typer.Option(False, "--update", help="Write the baseline from this run "
                                "instead of judging."),
    max_slowdown: Optional[str] = typer.Option(None, "--max-slowdown",
                                               help="Time threshold, a percentage: "
                                               f"{as_percent(DEFAULT_MAX_SLOWDOWN)} "
                                               "(the default, or the manifest's).",
                                               metavar="PERCENT"),
    max_bytes_growth: Optional[str] = typer.Option(None, "--max-bytes-growth",
                                                   help="DRAM-bytes threshold, a percentage "
                                                   f"(default {as_percent(DEFAULT_MAX_GROWTH)}).",
                                                   metavar="PERCENT"),
    max_flops_growth: Optional[str] = typer.Option(None, "--max-flops-growth",
                                                   help="Counted-FLOPs threshold, a percentage "
                                                   f"(default {as_percent(DEFAULT_MAX_GROWTH)}).",
                                                   metavar="PERCENT"),
    gpu_mismatch: GpuMismatch = typer.Option(GateRequest.gpu_mismatch,
                                             "--gpu-mismatch", help="A baseline from another "
                                             "GPU: error or warn."),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help="Also write a Markdown "
                                            "summary here (- for standard output).",
                                            metavar="FILE"),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Also write JUnit XML here (- "
                                         "for standard output).", metavar="FILE"),
    counters: CountersMode = typer.Option(GateRequest.counters, "--counters", help="Counters "
                                          "for measured runs."),
    recheck: bool = typer.Option(False, "--recheck", help="Before failing on time, re-measure "
                                 "the suspect variants interleaved with the baseline's code (git "
                                 "revision recorded in the baseline)."),
    summary: bool = typer.Option(False, "--summary", help="Print a line for each variant that "
                                 "did not simply pass, and the verdict (the default adds the "
                                 "table of every variant)."),
    detail: bool = typer.Option(False, "--detail", help="Print the table with each time's "
                                "interval and the limits each variant was judged by."),
    force: bool = force_option(),
) -> None:
    """Fail (exit 1) when a kernel got slower, moves more bytes, or turned wrong."""
    from rooflint.commands.gate import gate_command   # start-up: see the top
    gate_command(GateRequest(
        baseline_path=baseline_path, targets=tuple(targets or ()), current=current,
        update=update, max_slowdown=max_slowdown, max_bytes_growth=max_bytes_growth,
        max_flops_growth=max_flops_growth, gpu_mismatch=gpu_mismatch, markdown=markdown,
        junit=junit, counters=counters, recheck=recheck, depth=depth_of(summary, detail),
        force=force))


@app.command(cls=CalibrateCommand)
@one_line_errors
def calibrate(
    gpu: Optional[str] = typer.Option(None, "--gpu", help=f"{GPU_HELP} (default: match the "
                                      "device).", metavar="GPU"),
    json_path: Optional[Path] = typer.Option(None, "--json", metavar="FILE",
                                             help="Also write the calibration here (- for "
                                             "standard output; the table goes to stderr)."),
    force: bool = force_option(),
) -> None:
    """Measure this GPU's ceilings (DRAM, L2, FP32, FP64, tensor) and keep them for run and
    explain."""
    from rooflint.commands.calibrate import calibrate_command   # start-up: see the top
    calibrate_command(CalibrateRequest(gpu=gpu, json_path=json_path, force=force))


@app.command(cls=Command)
@one_line_errors
def plot(
    results: List[Path] = typer.Argument(..., help="Result files written by `rooflint run --json`.",
                                         metavar="RESULT"),
    output: Path = typer.Option(PlotRequest.output, "--output", "-o",
                                help="Picture to write: .svg, .png or .pdf (- for SVG on "
                                "standard output).", metavar="FILE"),
    variant: List[str] = typer.Option([], "--variant", "-v",
                                      help="Only these variants, in this order (repeatable).",
                                      metavar="VARIANT"),
    trajectory: bool = typer.Option(False, "--trajectory", help="Arrows from each variant to "
                                    "the next, in order."),
    force: bool = force_option(),
) -> None:
    """Draw the roofline of measured results (no GPU needed)."""
    from rooflint.commands.plot import plot_command   # matplotlib: only when drawing
    plot_command(PlotRequest(results=tuple(results), output=output, variants=tuple(variant),
                             trajectory=trajectory, force=force))


@app.command(cls=Command)
@one_line_errors
def report(
    results: List[Path] = typer.Argument(..., metavar="RESULT", help="Result files written "
                                         "by `rooflint run --json` or `rooflint profile --json`."),
    output: Path = typer.Option(ReportRequest.output, "--output", "-o",
                                help="HTML file to write (- for standard output).", metavar="FILE"),
    force: bool = force_option(),
) -> None:
    """Write one self-contained HTML page of results: roofline, tables, verdicts, moves (no
    GPU needed)."""
    from rooflint.commands.report import report_command   # start-up: see the top
    report_command(ReportRequest(results=tuple(results), output=output, force=force))


@app.command(cls=JsonFileCommand)
@one_line_errors
def compare(
    a: str = typer.Argument(..., help="A: result.json, result.json:VARIANT, or TARGET:VARIANT "
                            "to measure.", metavar="A"),
    b: Optional[str] = typer.Argument(None, help="B, as A; omitted with --rev.", metavar="B"),
    rev: Optional[str] = typer.Option(None, "--rev", help="Compare A as it was at this git "
                                      "revision (A must be TARGET:VARIANT) with the working tree.",
                                      metavar="REV"),
    json_path: Optional[Path] = typer.Option(None, "--json", metavar="FILE",
                                             help="Write it as JSON here (- for standard "
                                             "output, in place of the text)."),
    allow_different_gpu: bool = typer.Option(False, "--allow-different-gpu", help="Compare "
                                             "results from different GPUs."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help=f"{GPU_HELP} for measured sides.",
                                      metavar="GPU"),
    counters: CountersMode = typer.Option(CompareRequest.counters, "--counters", help="Counters "
                                          "for measured sides."),
    max_slowdown: Optional[str] = typer.Option(None, "--max-slowdown", help="Minimum clear gap "
                                               "of the time decision, as in gate (default: B's "
                                               "manifest threshold, else "
                                               f"{as_percent(DEFAULT_MAX_SLOWDOWN)}).",
                                               metavar="PERCENT"),
    summary: bool = typer.Option(False, "--summary", help="Print each pair's sentence alone "
                                 "(the default adds where the change came from, the movement, "
                                 "the figures side by side and the prediction)."),
    detail: bool = typer.Option(False, "--detail", help="Print everything (as the default "
                                "does for compare)."),
    force: bool = force_option(),
) -> None:
    """Compare two variants: speedup with an interval, movement on the roofline, prediction."""
    from rooflint.commands.compare import compare_command   # start-up: see the top
    compare_command(CompareRequest(
        a=a, b=b, rev=rev, json_path=json_path, allow_different_gpu=allow_different_gpu, gpu=gpu,
        counters=counters, max_slowdown=max_slowdown, depth=depth_of(summary, detail),
        force=force))


cache_app = typer.Typer(cls=SubGroup, no_args_is_help=True, rich_markup_mode=None,
                        help="What rooflint keeps between runs: host references' outputs "
                             "and unchanged kernels' counters.")
app.add_typer(cache_app, name="cache")


@cache_app.command("clear", cls=Command)
@one_line_errors
def cache_clear() -> None:
    """Remove the host references' outputs and the kernels' counters kept between runs
    (builds and calibrations stay)."""
    from rooflint.common.units import counted, format_bytes
    from rooflint.formats import counter_cache, reference_cache  # start-up: see the top

    directory = reference_cache.references_directory()
    cleared = reference_cache.clear(directory)
    console.print(f"removed the outputs of {counted(cleared.entries, 'reference')} "
                  f"({format_bytes(cleared.size)}) from {directory}", markup=False)
    kept = counter_cache.counters_directory()
    console.print(f"removed the counters of {counted(counter_cache.clear(kept), 'kernel')} "
                  f"from {kept}", markup=False)


@app.command(cls=Command)
@one_line_errors
def specs(gpu: Optional[str] = typer.Argument(None, help="Show one GPU: its id, device name "
                                              "or family (h100: the board in this machine).",
                                              metavar="GPU")) -> None:
    """List the GPU datasheet specs, or show one with its ridge points."""
    from rooflint.engine.named_gpu import named_spec    # start-up: see the top
    from rooflint.formats.gpus import load_specs
    from rooflint.output.roofs import render_spec, render_specs

    if gpu:
        render_spec(console, named_spec(gpu))
    else:
        render_specs(console, load_specs())
