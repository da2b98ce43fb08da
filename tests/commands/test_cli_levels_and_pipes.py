"""Issue 51, item 8's "Done when": every command's output at each of its depths (--summary,
the default, --detail), and every command's output into a pipe: not wrapped at 80 columns
(laid out as at any width), no line padded, no escape sequence where standard output is
no terminal, even where TERM names one that colours. run is replayed from the recorded H200
run (tests/recorded.py), profile from the stand-in ncu's recorded logs (tests/fake_ncu.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from edges import REPO, cli_runner, rooflint

EXAMPLES = REPO / "examples"
BUNDLED = str(EXAMPLES / "h200-bundled.json")
H100_BUNDLED = str(EXAMPLES / "h100-bundled.json")
PROFILE = str(EXAMPLES / "profile" / "h200-profile-train-eager.json")
H100_BASELINE = str(EXAMPLES / "ci" / "h100-baseline.json")
# What a user's shell may set that changes the layout or the colour: none of it in a pipe.
LAYOUT = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE",
          "TTY_INTERACTIVE")
# run in a process of its own, its timing workers the recorded H200 run's (tests/recorded.py)
RECORDED_RUN = ("import sys; sys.path.insert(0, {tests!r}); from recorded import RecordedPool; "
                "import rooflint.engine.families as families, rooflint.measure.runner as runner; "
                "families.timing_pools = runner.timing_pools = lambda devices: [RecordedPool()]; "
                "from rooflint.commands.cli import app; app(prog_name='rooflint')")


@dataclass
class Piped:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def piped(*args: str, env: dict[str, str] | None = None, recorded_run: bool = False) -> Piped:
    """``rooflint ARGS | cat`` from a terminal that colours (TERM=xterm-256color), with no
    GPU and none of LAYOUT set: standard output and error both pipes."""
    environment = {key: value for key, value in os.environ.items() if key not in LAYOUT}
    environment.update({"TERM": "xterm-256color", "CUDA_VISIBLE_DEVICES": "",
                        "PYTHONPATH": str(REPO), **(env or {})})
    start = (["-c", RECORDED_RUN.format(tests=str(REPO / "tests"))] if recorded_run
             else ["-m", "rooflint"])
    done = subprocess.run([sys.executable, *start, *args], capture_output=True, text=True,
                          env=environment, timeout=180)
    return Piped(done.returncode, done.stdout, done.stderr)


def assert_plain(outcome: Piped) -> None:
    """No escape sequence on either stream, and no line of standard output padded."""
    assert "\x1b" not in outcome.stdout + outcome.stderr, outcome.stdout[:500]
    padded = [line for line in outcome.lines if line != line.rstrip()]
    assert not padded, padded[:3]


def widest(*args: str) -> str:
    """Standard output of ``rooflint ARGS`` laid out 100,000 columns wide (in this process)."""
    from rooflint.commands.cli import app
    return cli_runner().invoke(app, list(args), env={"COLUMNS": "100000",
                                                     "CUDA_VISIBLE_DEVICES": ""}).stdout


# --- every command into a pipe ---------------------------------------------------------------

# Each command's answer on a machine with no GPU, with its longest line's least length: a
# line past 80 columns shows that nothing was wrapped at a terminal's default width. (plot's
# and report's answers are documents: the same as their files, below.)
ANSWERS = [
    (("specs",), 0),
    (("specs", "h200"), 0),
    (("explain", "--gpu", "h100-sxm", "--time", "2.5ms", "--flops", "137.4e9", "--bytes",
      "201MB"), 81),
    (("show", BUNDLED), 81),
    (("show", PROFILE), 81),
    (("compare", f"{BUNDLED}:tiled", f"{BUNDLED}:naive"), 81),
    (("compare", H100_BUNDLED, BUNDLED, "--allow-different-gpu"), 81),
    (("gate", "--current", BUNDLED, "--baseline", H100_BASELINE, "--gpu-mismatch", "warn"), 81),
]


@pytest.mark.parametrize("args, longest", ANSWERS, ids=[" ".join(a[:2]).replace(str(REPO), "")
                                                        for a, _ in ANSWERS])
def test_a_commands_answer_in_a_pipe_is_laid_out_as_at_any_width_and_plain(args, longest):
    outcome = piped(*args)
    assert outcome.code in (0, 1), outcome.stderr               # gate: 1, a regression
    assert_plain(outcome)
    assert outcome.stdout == widest(*args)
    assert max(map(len, outcome.lines)) >= longest


@pytest.mark.parametrize("args", [("run", "stream"), ("calibrate",),
                                  ("gate", "--baseline", H100_BASELINE, "stream")])
def test_a_command_that_needs_a_gpu_answers_in_one_plain_line_without_one(args):
    """run, calibrate and a gate that measures, on a machine with no GPU (or no CuPy): one
    line on standard error, whole however long, and nothing on standard output."""
    outcome = piped(*args)
    assert outcome.code == 2 and outcome.stdout == ""
    assert_plain(outcome)
    assert len(outcome.stderr.splitlines()) == 1 and len(outcome.stderr) > 81, outcome.stderr


def test_cache_clear_in_a_pipe(tmp_path):
    outcome = piped("cache", "clear", env={"ROOFLINT_CACHE_DIR": str(tmp_path)})
    assert outcome.code == 0 and outcome.stderr == ""
    assert_plain(outcome)
    assert [line.split(" (")[0] for line in outcome.lines] == [
        "removed the outputs of 0 references", "removed the counters of 0 kernels from "
        f"{tmp_path / 'counters'}"]


# --- - for standard output, wherever a file is written -----------------------------------------

H200_BASELINE = str(EXAMPLES / "ci" / "h200-baseline.json")
EXPLAIN = ("explain", "--gpu", "h100-sxm", "--time", "2.5ms", "--flops", "137.4e9", "--bytes",
           "201MB")
# Each command with an output named FILE: written to out.EXT, or printed for -.
OUTPUTS = [
    ("show", BUNDLED, "--csv", "FILE"), ("show", BUNDLED, "--markdown", "FILE"),
    ("show", PROFILE, "--html", "FILE"), (*EXPLAIN, "--json", "FILE"),
    ("compare", f"{BUNDLED}:tiled", f"{BUNDLED}:naive", "--json", "FILE"),
    ("gate", "--current", BUNDLED, "--baseline", H200_BASELINE, "--markdown", "FILE"),
    ("gate", "--current", BUNDLED, "--baseline", H200_BASELINE, "--junit", "FILE"),
    ("gate", "--update", "--current", BUNDLED, "--baseline", "FILE"),
    ("plot", BUNDLED, "-o", "FILE"), ("report", BUNDLED, "-o", "FILE"),
]


@pytest.mark.parametrize("args", OUTPUTS, ids=[f"{a[0]} {a[-2]}" for a in OUTPUTS])
def test_dash_prints_on_standard_output_what_a_file_would_hold(args, tmp_path):
    """The document alone on standard output, as its file holds it; a status line says
    where a file was written, none is said for -."""
    file = "out.svg" if args[0] == "plot" else "out"
    no_summary = {"GITHUB_STEP_SUMMARY": ""}
    written = rooflint(*[file if word == "FILE" else word for word in args], cwd=tmp_path,
                       env=no_summary)
    printed = rooflint(*["-" if word == "FILE" else word for word in args], cwd=tmp_path,
                       env=no_summary)
    assert written.code == printed.code == 0, printed.stderr
    assert undated(printed.stdout) == undated((tmp_path / file).read_text())
    assert re.search(r"(written|drawn) to out", written.stderr), written.stderr
    assert not re.search(r"(written|drawn) to", printed.stderr), printed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [file]


def undated(text: str) -> str:
    """``text`` without its trailing newlines, nor a baseline's time of making."""
    return re.sub(r'\n "created": "[^"]*",', "", text).rstrip("\n")


def test_run_draws_its_svg_on_standard_output_and_its_tables_on_standard_error():
    outcome = piped("run", "stream", "--counters", "off", "--svg", "-", recorded_run=True)
    assert outcome.code == 0, outcome.stderr
    assert outcome.stdout.startswith("<?xml") and outcome.stdout.rstrip().endswith("</svg>")
    assert "copy_float4      OK" in outcome.stderr and "drawn to" not in outcome.stderr


def test_profile_draws_its_svg_on_standard_output_and_its_answer_on_standard_error(fake_ncu):
    env, _ = fake_ncu
    outcome = piped("profile", "--coverage", "0.99", "--svg", "-", "--", sys.executable, "-c",
                    "pass", env=env)
    assert outcome.code == 0, outcome.stderr
    assert outcome.stdout.startswith("<?xml") and outcome.stdout.rstrip().endswith("</svg>")
    assert "python: 26.8 ms of GPU time in 5 kernels" in outcome.stderr


# --- the three depths ------------------------------------------------------------------------

DEPTHS = ("run", "profile", "show", "compare", "gate")
# No depth: explain's point and specs' table are one answer each, plot and report draw
# every variant (a page is read in a browser that folds and opens it), calibrate's table is
# its few ceilings (docs/commands/report.md says why report has none).
NO_DEPTH = ("explain", "plot", "report", "calibrate", "specs")


@pytest.mark.parametrize("command", DEPTHS + NO_DEPTH)
def test_the_depths_are_offered_where_they_mean_something(command):
    text = rooflint(command, "--help", env={"COLUMNS": "200"}).stdout
    offered = {option for option in ("--summary", "--detail")
               if re.search(rf"^\s+{option}\b", text, re.M)}
    assert offered == ({"--summary", "--detail"} if command in DEPTHS else set()), text


@pytest.mark.parametrize("args", [("show", BUNDLED), ("compare", f"{BUNDLED}:tiled",
                                                      f"{BUNDLED}:naive"),
                                  ("gate", "--current", BUNDLED, "--baseline", H100_BASELINE),
                                  ("run", "stream"), ("profile", "--", "true")])
def test_summary_with_detail_is_one_line(args):
    cut = args.index("--") if "--" in args else len(args)
    outcome = rooflint(*args[:cut], "--summary", "--detail", *args[cut:])
    assert outcome.code == 2 and outcome.stdout == ""
    assert outcome.stderr.strip() == ("rooflint: --summary and --detail ask for opposite "
                                      "things: give one")


def depths(*args: str, **options) -> tuple[list[str], list[str], list[str]]:
    """The piped lines of ``rooflint ARGS`` at --summary, the default and --detail, each
    plain and laid out whole; a program's ``--`` and what follows stay last."""
    cut = args.index("--") if "--" in args else len(args)
    seen = []
    for depth in ("--summary", None, "--detail"):
        outcome = piped(*args[:cut], *([depth] if depth else []), *args[cut:], **options)
        assert outcome.code in (0, 1), outcome.stderr
        assert_plain(outcome)
        seen.append(outcome.lines)
    return seen[0], seen[1], seen[2]


@pytest.mark.parametrize("result, marks", [
    (BUNDLED, ("barrier_bound    OK       110 us ±1%", "roofs (DRAM calibrated 2026-11-24",
               "  barrier_bound:   not split-K / more SMs: the grid already fills the GPU")),
    (PROFILE, (" 1. saves ~2.34 ms (11.6%): torch.compile the chain",
               "top 10 of 46 profiled kernels by share of 20.1 ms of GPU time",
               "kernel                          what                                       "
               "launched from"))], ids=["run-result", "profile-result"])
def test_show_at_each_depth(result, marks):
    """--summary: the verdicts alone (a family's table, a profile's fixes); the default adds
    the roofs and the notes that matter (a profile's top kernels); --detail every variant's
    moves ruled out with why (a profile's every kernel)."""
    summary, default, detail = depths("show", result)
    assert len(summary) < len(default) < len(detail)
    assert all(line in default for line in summary if not line.startswith("the top kernels"))
    verdict, note, everything = marks
    assert any(line.startswith(verdict) for line in summary)
    assert not any(line.startswith(note) for line in summary)
    assert any(line.startswith(note) for line in default)
    assert not any(line.startswith(everything) for line in default)
    assert any(line.startswith(everything) for line in detail)


def test_compare_at_each_depth():
    """--summary: the count and a sentence a pair; the default and --detail: the figures."""
    summary, default, detail = depths("compare", H100_BUNDLED, BUNDLED, "--allow-different-gpu")
    assert summary[0] == default[0] == "38 pairs: 14 faster, 22 the same, 2 inconclusive"
    assert len(summary) == 39 and default == detail and len(default) > 10 * len(summary)


def test_gate_at_each_depth():
    """--summary: a line for each variant that did not simply pass, and the verdict; the
    default: the table of every variant; --detail: with each time's interval, and the limits
    every variant was judged by."""
    summary, default, detail = depths("gate", "--current", BUNDLED, "--baseline", H100_BASELINE,
                                      "--gpu-mismatch", "warn")
    verdict = "FAIL: 22 pass, 13 improved, 2 inconclusive, 1 regressed"
    assert summary[-1] == default[-1] == detail[-1] == verdict
    unpassed = summary[:-2]
    assert len(unpassed) == 13 + 2 + 1 and not any(": pass" in line for line in unpassed)
    assert "w4a16_gemv cublas_fp16: regressed -47.2% (counted FLOPs +600.0% > 2%; noisy " \
        "baseline" in "\n".join(summary)
    assert summary[-2].startswith("GPU MISMATCH") and default[-2] == summary[-2]
    rows = [line for line in default if re.match(r" \w+ +\w+ +(pass|improved|inconclusive|"
                                                 r"regressed) ", line)]
    assert len(rows) == 38
    header = next(line for line in detail if line.lstrip().startswith("family"))
    assert header.split() == ["family", "variant", "outcome", "time", "interval", "why"]
    assert any(re.search(r"barrier_bound +pass +-0\.0% +-0\.5% to \+0\.4%", line)
               for line in detail)
    assert "limits of 38 variants: time 5%, DRAM bytes 2%, counted FLOPs 2%" in detail


def test_run_at_each_depth():
    """The recorded H200 run of stream, without counters: --summary is the family's table,
    the default adds its notes, --detail each variant's moves ruled out with why."""
    summary, default, detail = depths("run", "stream", "--counters", "off", recorded_run=True)
    assert len(summary) < len(default) < len(detail)
    assert summary[0].startswith("NVIDIA H200 (spec h200)") and summary[1].startswith("stream")
    assert all(line in default for line in summary)
    assert not any("ruled out" in line for line in summary)
    assert any("ruled out" in line for line in default)


def test_profile_at_each_depth(fake_ncu):
    """The stand-in ncu's recorded H200 logs of a transformer block: --summary the fixes,
    the default adds the top kernels, --detail every kernel's row and notes."""
    env, _ = fake_ncu
    summary, default, detail = depths("profile", "--coverage", "0.99", "--", sys.executable,
                                      "-c", "pass", env=env)
    assert len(summary) < len(default) < len(detail)
    assert summary[0].startswith("python: 26.8 ms of GPU time in 5 kernels")
    assert any(line.startswith(" 1. saves ~") for line in summary)
    assert not any(line.startswith("kernel ") for line in summary)
    assert any(line.startswith("kernel ") for line in default)
    assert max(map(len, default)) > 81
