"""The command line's conventions (issue 27): --help in the user's words (no Python type
names), shell completion, --quiet, and NO_COLOR dropping every escape sequence."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from edges import REPO, rooflint

COMMANDS = ("run", "profile", "show", "explain", "gate", "calibrate", "plot", "report",
            "compare", "specs", "cache")
BUNDLED = str(REPO / "examples" / "h200-bundled.json")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_names_values_not_python_types(command):
    text = rooflint(command, "--help", env={"COLUMNS": "200"}).stdout
    assert "Usage: rooflint" in text
    python_types = re.findall(r"<(?:list\[\w+\]|str|path|float|integer|int)>|list\[", text,
                              flags=re.IGNORECASE)
    assert not python_types, python_types


def test_shell_completion_is_offered():
    text = rooflint("--help").stdout
    assert "--install-completion" in text and "--show-completion" in text


def test_quiet_prints_only_what_was_asked_and_errors():
    assert rooflint("--quiet", "show", BUNDLED).stdout == ""
    piped = rooflint("-q", "show", BUNDLED, "naive", "--csv", "-")
    assert piped.stdout.startswith("family,variant,") and piped.stderr == ""
    failed = rooflint("-q", "show", str(REPO / "no-such-result.json"))
    assert failed.code == 2 and "no-such-result.json" in failed.stderr


@pytest.mark.parametrize("args", [("specs",), ("show", BUNDLED, "naive"),
                                  ("explain", "--gpu", "h100-sxm", "--time", "2.5ms", "--flops",
                                   "137.4e9", "--bytes", "201MB")])
def test_no_color_means_no_escape_sequence_at_all(args):
    """rich drops the colour for NO_COLOR but keeps bold and its number highlighting:
    with a terminal forced, the default output has escapes and NO_COLOR's has none."""
    coloured = rooflint(*args, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in coloured.stdout
    plain = rooflint(*args, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert plain.code == 0 and "\x1b" not in plain.stdout + plain.stderr


def piped(*args: str, stdin: bytes):
    """``... | rooflint ARGS``: the checkout's rooflint with ``stdin`` on standard input."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "rooflint", *args], input=stdin,
                          capture_output=True, env=env, timeout=120)


def test_a_document_can_come_from_standard_input(tmp_path):
    """`-` where a document is read: show, plot, report and gate (its baseline, or the
    result it judges) read standard input (once)."""
    document = (REPO / "examples" / "h200-bundled.json").read_bytes()
    shown = piped("show", "-", "naive", "--csv", "-", stdin=document)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.decode().splitlines()[1].startswith("gemm_fp32,naive,NVIDIA H200,ok,")
    drawn = piped("plot", "-", "-o", str(tmp_path / "r.svg"), stdin=document)
    assert drawn.returncode == 0 and (tmp_path / "r.svg").stat().st_size > 1000
    twice = piped("report", "-", "-", "-o", str(tmp_path / "r.html"), stdin=document)
    assert twice.returncode == 2 and b"standard input was read already" in twice.stderr
    assert not (tmp_path / "r.html").exists()
    empty = piped("show", "-", stdin=b"")
    assert empty.returncode == 2 and b"cannot read result -: not JSON" in empty.stderr
    baseline = (REPO / "examples" / "ci" / "h200-baseline.json").read_bytes()
    judged = piped("gate", "--baseline", "-", "--current", BUNDLED, stdin=baseline)
    assert judged.returncode == 0 and judged.stdout.decode().rstrip().endswith("PASS: 38 pass")


@pytest.mark.parametrize("args", [
    ("explain", "--gpu", "h100-sxm", "--time", "1ms", "--flops", "1e9", "--bytes", "64MB"),
    ("compare", f"{BUNDLED}:tiled", f"{BUNDLED}:naive")])
def test_json_is_a_file_in_every_command(args, tmp_path):
    """--json FILE writes the document and keeps the text; --json - prints it instead; the
    old bare --json of explain and compare still prints it, and says it is deprecated."""
    out = tmp_path / "doc.json"
    written = rooflint(*args, "--json", str(out))
    assert written.code == 0 and written.stdout.strip() and out.read_text().startswith("{")
    printed = rooflint(*args, "--json", "-")
    assert printed.code == 0 and printed.stdout.startswith("{") and not printed.stderr.strip()
    old = rooflint(*args, "--json")
    assert old.code == 0 and old.stdout == printed.stdout
    assert "--json without a file is deprecated" in old.stderr
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": 1}')
    refused = rooflint(*args, "--json", str(notes))
    assert refused.code == 2 and notes.read_text() == '{"mine": 1}'


# --- one name for one kind of output (issue 27): -o is the file a command exists to write
# (plot's picture, report's page); every other output is named by its format -----------

def test_plot_draws_svg_to_standard_output(tmp_path):
    drawn = rooflint("plot", BUNDLED, "-o", str(tmp_path / "r.svg"))
    printed = rooflint("plot", BUNDLED, "-v", "naive", "-o", "-")
    assert printed.code == 0 and printed.stderr == ""
    assert printed.stdout.startswith("<?xml") and printed.stdout.rstrip().endswith("</svg>")
    assert rooflint("plot", BUNDLED, "-o", "-").stdout == (tmp_path / "r.svg").read_text()
    assert drawn.stdout == "" and drawn.stderr.startswith("roofline drawn to ")   # a status line


@pytest.fixture
def measured_ceilings(monkeypatch):
    """calibrate's measuring stood in for by the H200 steps of test_calibration.py."""
    from rooflint.commands import calibrate as calibrate_command
    from test_calibration import H200, SKIPPED, STEPS
    monkeypatch.setattr(calibrate_command, "measure_ceilings",
                        lambda update: (H200, STEPS, SKIPPED))


def test_calibrate_writes_its_json_as_the_other_commands_do(measured_ceilings, tmp_path):
    from test_cli import invoke
    copy = tmp_path / "calibration.json"
    written = invoke("calibrate", "--json", str(copy))
    assert written.exit_code == 0, written.output
    assert json.loads(copy.read_text())["spec_id"] == "h200"
    assert f"and{copy}" in "".join(written.stderr.split())
    printed = invoke("calibrate", "--json", "-")
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout) == json.loads(copy.read_text()) | {
        "created": json.loads(printed.stdout)["created"]}
    assert "saved to " in printed.stderr


@pytest.mark.parametrize("spelling", [("-o", "{copy}"), ("--output", "{copy}"),
                                      ("--output={copy}",)])
def test_calibrates_old_output_option_still_works_and_says_so(measured_ceilings, tmp_path,
                                                              spelling):
    from test_cli import invoke
    copy = tmp_path / "calibration.json"
    old = invoke("calibrate", *[word.format(copy=copy) for word in spelling])
    assert old.exit_code == 0, old.output
    assert json.loads(copy.read_text())["spec_id"] == "h200"
    name = spelling[0].partition("=")[0]
    said = old.stderr.splitlines()
    assert said[0] == f"rooflint: {name} is deprecated: write --json FILE"
    assert [line for line in said[1:] if line.startswith("rooflint:")] == []   # the rest: status


def test_an_old_spelling_after_a_programs_double_dash_is_the_programs():
    from rooflint.commands.cli import respelled
    assert respelled(["-o", "x", "--", "prog", "-o", "y"], {"-o": "--json"}) == \
        ["--json", "x", "--", "prog", "-o", "y"]


# Each command with only what it requires typed, and the request that must reach it.
BARE_REQUESTS = [
    ("run", "run_command", (), "RunRequest", {}),
    ("profile", "profile_command", ("--", "prog"), "ProfileRequest", {"command": ("prog",)}),
    ("show", "show_command", ("r.json",), "ShowRequest", {"result_path": Path("r.json")}),
    ("explain", "explain_command", ("--time", "1ms", "--flops", "1G", "--bytes", "1GB",
                                    "--gpu", "h200"), "ExplainRequest",
     {"time": "1ms", "flops": "1G", "dram_bytes": "1GB", "gpu": "h200"}),
    ("gate", "gate_command", ("--baseline", "b.json"), "GateRequest",
     {"baseline_path": Path("b.json")}),
    ("calibrate", "calibrate_command", (), "CalibrateRequest", {}),
    ("plot", "plot_command", ("r.json",), "PlotRequest", {"results": (Path("r.json"),)}),
    ("compare", "compare_command", ("a.json",), "CompareRequest", {"a": "a.json"}),
    ("report", "report_command", ("r.json",), "ReportRequest", {"results": (Path("r.json"),)}),
]


@pytest.mark.parametrize("command, function, typed, request_class, required", BARE_REQUESTS,
                         ids=[case[0] for case in BARE_REQUESTS])
def test_an_option_left_out_is_the_requests_default(monkeypatch, command, function, typed,
                                                    request_class, required):
    """The defaults are written once, in commands/requests.py: what the command line
    hands a command for every option left out is the request's own default."""
    import importlib
    from test_cli import invoke
    from rooflint.commands import requests
    received = []
    module = importlib.import_module(f"rooflint.commands.{command}")
    monkeypatch.setattr(module, function, received.append)
    outcome = invoke(command, *typed)
    assert outcome.exit_code == 0, outcome.output
    assert received == [getattr(requests, request_class)(**required)]


def _option_calls() -> list:
    """Every ``typer.Option(...)`` call in the command line's source."""
    tree = ast.parse((REPO / "rooflint" / "commands" / "cli.py").read_text())
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and ast.unparse(node.func) == "typer.Option"]


def test_every_option_is_named_explicitly():
    """typer 0.27 (the GPU machines' version) registers an option declared with a metavar
    and no name under its metavar (--GPU, --DEVICES) and refuses --gpu: so each option
    says its own name, whatever typer would derive."""
    calls = _option_calls()
    unnamed = [call.lineno for call in calls
               if not any(isinstance(arg, ast.Constant) and str(arg.value).startswith("-")
                          for arg in call.args[1:])]
    assert len(calls) > 40 and not unnamed, f"cli.py lines {unnamed}"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_lists_options_as_they_are_typed(command):
    text = rooflint(command, "--help", env={"COLUMNS": "200"}).stdout
    options = re.findall(r"^\s+(-{1,2}[\w-]+)", text, flags=re.MULTILINE)
    assert options and all(option == option.lower() for option in options), options


def test_gpu_and_devices_are_taken_under_their_names():
    """The issue's check (issue 45): both options parse, and --help lists both."""
    text = rooflint("run", "--gpu", "h200", "--devices", "0", "--help",
                    env={"COLUMNS": "200"}).stdout
    assert re.search(r"^\s+--gpu GPU", text, re.M) and re.search(r"^\s+--devices DEVICES",
                                                                 text, re.M)


def test_no_private_module_of_typer_or_click_is_imported():
    sources = "\n".join(path.read_text() for path in (REPO / "rooflint").rglob("*.py"))
    assert not re.search(r"\b(typer|click)\._\w", sources)


def test_each_file_written_is_said_once_in_the_same_words(tmp_path):
    """A command names every file it wrote, in one wording for every command
    (output/written.py): gate's baseline with what it holds, show's tables and page."""
    result = REPO / "tests" / "fixtures" / "results" / "h200-bundled.json"
    baseline = tmp_path / "b.json"
    outcome = rooflint("gate", "--update", "--current", str(result), "--baseline", "b.json",
                       cwd=tmp_path)
    entries = len(json.loads(baseline.read_text())["entries"])
    assert outcome.code == 0, outcome.stderr
    assert outcome.stderr.count(f"baseline written to b.json: {entries} variants on "
                                f"NVIDIA H200, driver ") == 1, outcome.stderr
    outcome = rooflint("show", str(result), "--csv", "t.csv", "--markdown", "t.md",
                       "--html", "p.html", cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    said = outcome.stderr                                # status lines, all on stderr
    for line in ("csv table written to t.csv", "markdown table written to t.md",
                 "report written to p.html"):
        assert said.count(line) == 1, said


def test_every_option_is_registered_under_the_name_it_is_documented_by():
    """Issue 49: under typer 0.27.2 and click 8.5.0 (the GPU machines'), an option declared
    with a metavar and no name of its own was registered under the metavar: `run --help`
    listed `--GPU GPU` and `--devices` was "No such option". Every option of every command
    has its own lower-case names, whatever the versions installed (.ci/run runs the CLI
    tests on the GPU machines' versions too)."""
    import typer

    from rooflint.commands.cli import app

    def commands(group, path=()):       # click's own, or the copy newer typers carry
        for name, command in group.commands.items():
            yield (*path, name), command
            if hasattr(command, "commands"):
                yield from commands(command, (*path, name))

    seen = 0
    for path, command in commands(typer.main.get_command(app)):
        for option in (p for p in command.params if p.param_type_name == "option"):
            names = [*option.opts, *option.secondary_opts]
            assert all(n.startswith("-") and n == n.lower() for n in names), (path, names)
            seen += 1
    assert seen > 50
    run = typer.main.get_command(app).commands["run"]
    named = {n for p in run.params for n in getattr(p, "opts", [])}
    assert {"--gpu", "--devices", "--source", "--counters"} <= named


def test_every_command_takes_quiet_after_its_name_as_rooflint_does_before_it():
    """Issue 51: `rooflint show -q r.json` was "No such option: -q"."""
    assert rooflint("show", "-q", BUNDLED) == rooflint("--quiet", "show", BUNDLED)
    assert rooflint("show", BUNDLED, "--quiet").stdout == ""
    for command in COMMANDS:
        words = ("cache", "clear") if command == "cache" else (command,)
        assert "-q or --quiet" in rooflint(*words, "--help", env={"COLUMNS": "200"}).stdout


def test_a_programs_own_quiet_after_its_double_dash_is_the_programs():
    from rooflint.commands.cli import without_quiet
    assert without_quiet(["--top", "3", "--", "train.py", "-q"]) == ["--top", "3", "--",
                                                                     "train.py", "-q"]
    assert without_quiet(["-q", "--top", "3", "--", "prog", "--quiet"]) == [
        "--top", "3", "--", "prog", "--quiet"]


@pytest.mark.parametrize("args, said", [
    (("explain",), "rooflint: explain: missing option '--time'"),
    (("show", "--nope", BUNDLED), "rooflint: show: no such option: --nope"),
    (("gate", "--baseline", "b.json", "--gpu-mismatch", "maybe"),
     "rooflint: gate: invalid value for '--gpu-mismatch'")])
def test_a_mistake_in_a_commands_options_is_one_line_like_every_error(args, said):
    """click's usage block ("Usage: ... Try 'rooflint explain --help' for help. Error:
    Missing option") stood beside rooflint's one-line errors."""
    outcome = rooflint(*args)
    assert outcome.code == 2 and outcome.stdout == ""
    assert len(outcome.stderr.splitlines()) == 1 and outcome.stderr.startswith(said)
    assert outcome.stderr.rstrip().endswith(f"(rooflint {args[0]} --help lists what it takes)")


@pytest.mark.parametrize("args, said", [
    (("sohw", BUNDLED), "rooflint: no such command 'sohw'"),
    (("--nope", "show", BUNDLED), "rooflint: no such option: --nope"),
    (("cache", "nope"), "rooflint: cache: no such command 'nope'"),
    (("cache", "clear", "now"), "rooflint: cache clear: got unexpected extra argument"),
    (("plot",), "rooflint: plot: missing argument 'RESULT'"),
    (("profile", "--top", "0", "--", "true"), "rooflint: profile: invalid value for '--top'")])
def test_a_mistake_before_a_command_or_in_a_group_is_one_line_too(args, said):
    """An unknown command or an option rooflint does not take, a group's mistake, each as
    one line naming where --help lists what is taken, on every click the floor allows."""
    outcome = rooflint(*args)
    assert outcome.code == 2 and outcome.stdout == ""
    assert len(outcome.stderr.splitlines()) == 1 and outcome.stderr.startswith(said)
    path = " ".join(word for word in args[:2] if word in ("cache", "clear", "plot", "profile"))
    assert outcome.stderr.rstrip().endswith(f"(rooflint {path + ' ' if path else ''}--help "
                                            f"lists what it takes)"), outcome.stderr


def test_a_group_given_nothing_still_prints_its_help():
    """(on standard error with exit 2 since click 8.2, on standard output before)"""
    for words in ((), ("cache",)):
        outcome = rooflint(*words)
        shown = outcome.stdout + outcome.stderr
        assert shown.startswith(f"Usage: rooflint {' '.join(words)}".rstrip() + " "), shown
        assert "lists what it takes" not in shown and "Commands:" in shown


def test_gate_prints_its_markdown_on_standard_output_and_its_verdict_beside_it(tmp_path):
    """`gate --markdown -` was refused where `show --markdown -` worked."""
    args = ("gate", "--current", BUNDLED, "--baseline",
            str(REPO / "examples" / "ci" / "h200-baseline.json"))
    piped = rooflint(*args, "--markdown", "-")
    assert piped.code == 0, piped.stderr
    assert piped.stdout.startswith("### rooflint gate: PASS")
    assert "rooflint gate" in piped.stderr and "| family |" not in piped.stderr
    written = rooflint(*args, "--markdown", str(tmp_path / "gate.md"))
    assert (tmp_path / "gate.md").read_text().rstrip("\n") == piped.stdout.rstrip("\n")
    both = rooflint(*args, "--markdown", "-", "--junit", "-")
    assert both.code == 2 and "only one output can go" in both.stderr
    assert written.code == 0


@pytest.mark.parametrize("command", [["explain", "--time", "1ms", "--flops", "1e9", "--bytes",
                                      "1e9", "--gpu", "0"],
                                     ["run", "stream", "--gpu", "0,1"],
                                     ["profile", "--gpu", "1", "--", "python", "train.py"]])
def test_a_device_index_given_to_gpu_is_told_it_belongs_to_devices(command):
    """`explain --gpu 0` had answered with ten spec ids that looked like the index: --gpu
    takes a spec id to judge against, and the GPUs to run on are --devices' (said before
    any GPU work)."""
    from edges import assert_one_line_error
    assert_one_line_error(rooflint(*command), 2, "is a device index",
                          "--gpu takes the spec of a GPU", "--devices", "CUDA_VISIBLE_DEVICES")


def test_a_whole_file_compare_has_a_count_and_a_summary_of_one_sentence_a_pair():
    """Two results of 38 matching variants: 612 lines by default had no count; --summary
    prints the count, then one sentence a pair; the default keeps the figures."""
    a, b = (str(REPO / "examples" / f"{gpu}-bundled.json") for gpu in ("h100", "h200"))
    brief = rooflint("compare", a, b, "--allow-different-gpu", "--summary",
                     env={"COLUMNS": "2000"})
    lines = brief.stdout.splitlines()
    assert brief.code == 0 and lines[0] == "38 pairs: 14 faster, 22 the same, 2 inconclusive"
    assert len(lines) == 39 and all(" (h200-bundled.json)" in line for line in lines[1:])
    full = rooflint("compare", a, b, "--allow-different-gpu", env={"COLUMNS": "2000"}).stdout
    assert full.splitlines()[0] == lines[0] and "time (median ± IQR)" in full
    assert "time (median ± IQR)" not in brief.stdout
