"""What the terminal shows for run results: `rooflint show` on the committed H200 results
at 80, 100 and 160 columns, user text printed as written, and `run`/`gate` streaming their
tables and progress (the worker replayed from the recorded run, no GPU)."""

import copy
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console
from edges import cli_runner

from edges import REPO, Outcome, assert_intact, assert_one_line_error, rooflint, snapshot
from recorded import RecordedPool, RecordedProfiler, use_stand_in_pools
from rooflint.output.depth import Depth
from rooflint.formats import baseline as baselines
from rooflint.output import live as report
from rooflint.engine import families as run_module
from rooflint.commands.cli import app
from rooflint.judge.gate import evaluate
from rooflint.output.live import RunDisplay
from rooflint.output.gate_report import gate_junit, gate_markdown, render_gate
from rooflint.output.tables import render_run
from rooflint.formats.results import read_result, write_result

EXAMPLES = sorted((REPO / "examples").glob("h*-bundled.json"))       # the latest GPU runs
EXAMPLE = REPO / "tests" / "fixtures" / "results" / "h200-bundled.json"  # a run fixed in time
RESULTS = [*EXAMPLES, *sorted((REPO / "tests" / "fixtures" / "results").glob("*.json"))]
STREAM_GEMM = REPO / "tests" / "fixtures" / "results" / "h200-stream-gemm_fp32.json"
runner = cli_runner()


def show(*args: str, width: int = 100) -> Outcome:
    return rooflint("show", *map(str, args), env={"COLUMNS": str(width)})


def rendered(result, width: int) -> str:
    console = Console(file=io.StringIO(), width=width)
    render_run(console, result, Depth.DETAIL)
    return console.file.getvalue()


def row_names(text: str) -> set[str]:
    """The first word of every line: a table row starts with its variant's whole name
    (a note starts with "name:", a clipped name with "blocked…")."""
    return {line.split()[0] for line in text.splitlines() if line.strip()}


def assert_fits(text: str, width: int, path) -> None:
    """No line over ``width``; every variant of ``path`` heads a table row, name whole."""
    assert max(len(line) for line in text.splitlines()) <= width
    names = {v.name for f in read_result(path).families for v in f.variants}
    assert names <= row_names(text), names - row_names(text)


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_show_fits_100_columns_with_every_name_whole(path):
    """The issue's check, as a user runs it: COLUMNS=100 rooflint show RESULT."""
    outcome = show(path, width=100)
    assert outcome.code == 0, outcome.stderr
    assert_fits(outcome.stdout, 100, path)


@pytest.mark.parametrize("width", [80, 100, 120, 160])
@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_every_width_fits_with_every_name_whole(path, width):
    assert_fits(rendered(read_result(path), width), width, path)


def test_show_prints_what_run_printed():
    text = show(EXAMPLE).stdout
    assert text.startswith("NVIDIA H200 (spec h200), 132 SMs, L2 60 MiB, driver 580.159.04")
    assert "gemm_fp32 (N=4096)\n" in text
    assert re.search(r"^blocked_2d +3 ms ±0% +207 GB/s 5% +45.8 T 72% +221/683 +compute *$",
                     text, re.M)
    assert "roofs (DRAM calibrated 2026-11-21, fp32 calibrated): DRAM 4.4 TB/s" in text
    assert re.search(r"^  tiled: +shared_memory_pipe: mio_throttle stalls", text, re.M)  # cause
    assert re.search(r"^  tiled: +move up: register-block; why: mio_throttle", text, re.M)
    assert not re.search(r"^  tiled: +not split-K / more SMs", text, re.M)   # ruled out: once
    unwrapped = show(EXAMPLE, width=2000).stdout
    assert re.search(r"^  ruled out \(the kernel book's traps, Part 5 \(5.14\); --detail says "
                     r"why for each variant\): .*not split-K / more SMs: \d variants?", unwrapped,
                     re.M)
    detail = show(EXAMPLE, "--detail").stdout
    assert re.search(r"^  tiled: +not split-K / more SMs", detail, re.M)    # each, with why


def test_a_wide_terminal_keeps_the_top_move_in_the_table():
    result = read_result(EXAMPLE)
    wide, narrow = rendered(result, 160), rendered(result, 100)
    assert re.search(r"^tiled +OK +15.3 ms ±0%.* +chain +up: register-block *$", wide, re.M)
    assert re.search(r"^  tiled: +why up: mio_throttle", wide, re.M)
    assert "top move" not in narrow and "move up: register-block; why" in narrow


def test_a_wrapped_note_hangs_under_its_own_text():
    lines = rendered(read_result(EXAMPLE), 100).splitlines()
    at = next(i for i, line in enumerate(lines)
              if line.startswith("  barrier_bound:") and "not cp.async" in line)
    column = lines[at].index("not cp.async")
    assert re.match(rf" {{{column}}}\S", lines[at + 1]), lines[at:at + 2]


def test_show_picks_variants():
    text = show(EXAMPLE, "tiled", "cublas").stdout
    assert row_names(text) >= {"tiled", "cublas"}
    assert "naive" not in row_names(text) and "stream (" not in text
    assert text.count("gemm_fp32 (N=4096)") == 1


@pytest.mark.parametrize("args, fragments", [
    (["tiled", "nope"], ["has no variant nope", "gemm_fp32: naive, coalesced, tiled, "
                         "blocked_1d, blocked_2d, cublas", "stream: copy_scalar"]),
], ids=["unknown variant"])
def test_show_unknown_variants_list_the_ones_there(args, fragments):
    before = snapshot(EXAMPLE)
    assert_one_line_error(show(EXAMPLE, *args), 2, *fragments)
    assert_intact(before)


@pytest.mark.parametrize("name, fragment", [
    ("missing.json", "cannot read result {path}"),
    ("h200-calibration.json", "{path} is not a rooflint result"),
], ids=["missing file", "a calibration file"])
def test_show_bad_files_are_one_line(name, fragment, tmp_path):
    path = REPO / "examples" / name
    before = snapshot(REPO / "examples")
    assert_one_line_error(show(path), 2, fragment.format(path=path))
    assert_intact(before)


@pytest.fixture
def hostile(tmp_path):
    """The stream+gemm run with user text that looks like rich markup: a variant named
    `tiled[/]`, a family `gemm[bold]fp32`, and a compile error quoting `a[i]`."""
    result = copy.deepcopy(read_result(STREAM_GEMM))
    gemm = next(f for f in result.families if f.name == "gemm_fp32")
    gemm.name = "gemm[bold]fp32"
    variants = {v.name: v for v in gemm.variants}
    variants["tiled"].name = "tiled[/]"
    naive = variants["naive"]
    naive.status, naive.message = "error", "compile error: sgemm.cu(40): a[i] is not a pointer"
    naive.samples_s, naive.time, naive.point, naive.verdict = [], None, None, None
    path = tmp_path / "hostile.json"
    write_result(result, path)
    return path


def test_show_prints_user_text_as_written(hostile):
    outcome = show(hostile)
    assert outcome.code == 0, outcome.stderr
    assert "tiled[/]" in row_names(outcome.stdout)
    assert "gemm[bold]fp32 (N=4096)" in outcome.stdout
    assert re.search(r"^  naive: +compile error: sgemm.cu\(40\): a\[i\] is not a pointer",
                     outcome.stdout, re.M)
    assert re.search(r"^naive +ERROR *$", outcome.stdout, re.M)


def test_gate_prints_and_writes_a_variant_named_like_markup(hostile, tmp_path):
    reference = baselines.from_result(read_result(STREAM_GEMM))
    gate = evaluate(reference, baselines.from_result(read_result(hostile)))
    console = Console(file=io.StringIO(), width=120)
    render_gate(console, gate)
    assert re.search(r"^ gemm\[bold\]fp32 +tiled\[/\] +new ", console.file.getvalue(), re.M)
    assert "| gemm[bold]fp32 | tiled[/] | new |" in gate_markdown(gate)
    assert "tiled[/]" in [c.get("name") for c in ET.fromstring(gate_junit(gate)).iter("testcase")]
    base, markdown, junit = tmp_path / "base.json", tmp_path / "gate.md", tmp_path / "gate.xml"
    assert runner.invoke(app, ["gate", "--baseline", str(base), "--current", str(STREAM_GEMM),
                               "--update"]).exit_code == 0
    outcome = runner.invoke(app, ["gate", "--baseline", str(base), "--current", str(hostile),
                                  "--markdown", str(markdown), "--junit", str(junit)])
    assert outcome.exit_code == 1, outcome.output          # tiled is missing: a real failure
    assert "| gemm[bold]fp32 | tiled[/] | new |" in markdown.read_text()
    assert 'name="tiled[/]"' in junit.read_text()


class RecordingProgress(report.QuietProgress):
    """rich's Progress, keeping every description it was asked to show."""

    shown: list[str] = []

    def add_task(self, description, *args, **kwargs):
        RecordingProgress.shown.append(description)
        return super().add_task(description, *args, **kwargs)

    def update(self, task_id, *args, description=None, **kwargs):
        if description:
            RecordingProgress.shown.append(description)
        return super().update(task_id, *args, description=description, **kwargs)


@pytest.fixture
def recording(monkeypatch):
    monkeypatch.setattr(RecordingProgress, "shown", [])
    monkeypatch.setattr(report, "QuietProgress", RecordingProgress)
    return RecordingProgress.shown


def test_run_prints_each_table_as_its_family_finishes(monkeypatch, recording):
    """Without counters a family is complete once timed: its table is out before the next
    family's timing starts."""
    console = Console(file=io.StringIO(), width=100)
    display = RunDisplay(console, tables=True)
    seen = {}

    def look(family, variant):
        seen[family, variant] = (console.file.getvalue(),
                                 [t.description for t in display.bar.tasks])
    pool = RecordedPool(look)
    use_stand_in_pools(monkeypatch, lambda env=None: pool)
    with display:
        run_module.run(run_module.RunOptions(targets=["stream", "gemm_fp32"], variants=[],
                                             sizes={}, counters="off"), display.listener())
    screen, tasks = seen["gemm_fp32", "naive"]
    assert screen.startswith("NVIDIA H200 (spec h200)")
    assert {"copy_float4", "strided_read"} <= row_names(screen)       # stream's table is out
    assert "gemm_fp32 (" not in screen
    assert tasks == ["gemm_fp32: timing naive 1/6"]                   # stream's tasks are gone
    assert seen["stream", "triad"][1] == ["stream: timing triad 3/5"]
    assert display.done == ["stream", "gemm_fp32"]


def test_with_counters_the_tables_come_once_the_profiler_is_done(monkeypatch, recording):
    """Nsight Compute prints its counters when its session ends: every family is timed,
    then profiled in one session, then each table is printed, judged on counters."""
    console = Console(file=io.StringIO(), width=100)
    display = RunDisplay(console, tables=True)
    seen = {}

    def look(phase):
        def at(family, variant):
            seen[phase, family, variant] = (console.file.getvalue(), list(display.timed),
                                            list(display.done))
        return at
    use_stand_in_pools(monkeypatch, lambda env=None: RecordedPool(look("timing")))
    monkeypatch.setattr(run_module, "Profiler", lambda cache, metrics, env=None, preload=():
                        RecordedProfiler(on_start=look("counters")))
    monkeypatch.setattr(run_module.ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")
    with display:
        run_module.run(run_module.RunOptions(targets=["stream", "gemm_fp32"], variants=[],
                                             sizes={}), display.listener())
    screen, timed, done = seen["timing", "gemm_fp32", "naive"]
    assert "DRAM bytes from ncu counters" in screen and "copy_float4" not in row_names(screen)
    assert (timed, done) == (["stream"], [])
    screen, timed, done = seen["counters", "stream", "strided_read"]
    assert (timed, done) == (["stream", "gemm_fp32"], [])
    assert "stream: counters strided_read 4/5" in recording
    final = console.file.getvalue()
    assert {"copy_float4", "naive"} <= row_names(final) and display.done == ["stream", "gemm_fp32"]


def invoke_run(monkeypatch, tmp_path, *args, pool=None):
    monkeypatch.chdir(tmp_path)
    use_stand_in_pools(monkeypatch, lambda env=None: pool or RecordedPool())
    outcome = runner.invoke(app, ["run", *args])
    return Outcome(outcome.exit_code, outcome.stdout, outcome.stderr)


def test_counters_off_shows_no_counters_progress(monkeypatch, tmp_path, recording):
    monkeypatch.setattr(run_module, "Profiler", lambda *args: pytest.fail("profiled"))
    outcome = invoke_run(monkeypatch, tmp_path, "stream", "--counters", "off")
    assert outcome.code == 0, outcome.stderr
    assert "stream: timing copy_few_blocks 5/5" in recording
    assert not [d for d in recording if "counters" in d]
    assert "DRAM bytes from the manifests' model" in outcome.stdout


def test_timings_say_where_the_seconds_went(monkeypatch, tmp_path):
    outcome = invoke_run(monkeypatch, tmp_path, "stream", "--counters", "off", "--timings",
                         "--json", "out.json")
    assert outcome.code == 0, outcome.stderr
    table = outcome.stdout[outcome.stdout.index("seconds per phase"):]
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]
            if line.strip() and not line.startswith("-")}
    assert rows["phase"] == ["stream", "run"]
    assert rows["compile"] == ["1.2", "1.2"] and rows["timing"] == ["5.0", "5.0"]  # as reported
    assert rows["check"] == ["2.5", "2.5"] and float(rows["total"][1]) >= 8.75
    document = json.loads((tmp_path / "out.json").read_text())
    assert document["families"][0]["timings"]["timing"] == 5.0
    assert set(document["timings"]) >= {"startup", "compile", "check", "timing", "analysis"}


def test_run_json_to_standard_output(monkeypatch, tmp_path):
    outcome = invoke_run(monkeypatch, tmp_path, "stream", "--json", "-", "--counters", "off")
    assert outcome.code == 0, outcome.stderr
    document = json.loads(outcome.stdout)
    assert document["schema"] == "rooflint.result/1"
    assert [v["name"] for v in document["families"][0]["variants"]] == \
        ["copy_scalar", "copy_float4", "triad", "strided_read", "copy_few_blocks"]
    assert "copy_float4" in row_names(outcome.stderr)                 # the table, on stderr
    assert list(tmp_path.iterdir()) == []                             # no file named "-"


def interrupt_at(family):
    def on_start(name, variant):
        if name == family:
            raise KeyboardInterrupt
    return RecordedPool(on_start)


@pytest.mark.parametrize("interrupted, args, fragment, kept", [
    ("decode_attention", ["--json", "out.json"], "interrupted; out.json keeps causes",
     ["causes"]),
    ("causes", ["--json", "out.json"],
     "interrupted before a family finished; out.json not written", None),
    ("decode_attention", [], "interrupted; nothing written", None),
], ids=["after a family", "during the first", "no --json"])
def test_ctrl_c_says_what_the_result_file_keeps(monkeypatch, tmp_path, interrupted, args,
                                                fragment, kept):
    outcome = invoke_run(monkeypatch, tmp_path, *args, "--counters", "off",
                         pool=interrupt_at(interrupted))
    assert_one_line_error(outcome, 130, fragment)
    path = tmp_path / "out.json"
    assert ([f.name for f in read_result(path).families] if path.exists() else None) == kept


def test_ctrl_c_while_profiling_keeps_the_timed_families(monkeypatch, tmp_path):
    def interrupt(family, variant):
        if variant == "triad":
            raise KeyboardInterrupt
    monkeypatch.setattr(run_module, "Profiler", lambda cache, metrics, env=None, preload=():
                        RecordedProfiler(on_start=interrupt))
    monkeypatch.setattr(run_module.ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")
    outcome = invoke_run(monkeypatch, tmp_path, "stream", "--json", "out.json")
    assert_one_line_error(outcome, 130, "interrupted; out.json keeps stream timed only "
                                        "(counters not taken)")
    kept = read_result(tmp_path / "out.json")
    assert all(v.counters is None for f in kept.families for v in f.variants)


def test_gate_shows_which_variant_it_measures(monkeypatch, tmp_path, recording):
    use_stand_in_pools(monkeypatch, lambda env=None: RecordedPool())
    outcome = runner.invoke(app, ["gate", "--baseline", str(tmp_path / "base.json"), "--update",
                                  "gemm_fp32", "--counters", "off"])
    assert outcome.exit_code == 0, outcome.output
    assert "gemm_fp32: timing blocked_2d 5/6" in recording
    assert "baseline written" in outcome.stderr and "blocked_2d" not in outcome.stdout


def _piped_show(extra_env: dict[str, str]) -> str:
    """`rooflint show` with its standard output a pipe, as `| grep` or `> file` gives it,
    COLUMNS unset (as in a script or CI) unless ``extra_env`` sets it."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    done = subprocess.run([sys.executable, "-m", "rooflint", "show", str(EXAMPLE)],
                          capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(REPO), **extra_env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_piped_output_is_neither_wrapped_nor_padded_nor_coloured():
    """Issue 51: `rooflint show r.json | grep naive` saw each line cut at 80 columns, and
    most lines ended in a table's padding."""
    shown = _piped_show({})
    lines = shown.splitlines()
    header = next(line for line in lines if line.startswith("NVIDIA H200"))
    assert header.endswith("DRAM bytes from ncu counters")        # one line, as written
    assert max(map(len, lines)) > 120
    assert not [line for line in lines if line.endswith(" ")]
    assert "\x1b" not in shown
    narrow = _piped_show({"COLUMNS": "100"}).splitlines()           # a width asked for holds
    assert max(map(len, narrow)) <= 100 and len(narrow) > len(lines)


def test_numbers_in_plain_text_are_not_coloured_in_a_terminal():
    """rich's highlighter had coloured what it took for numbers: the driver version came
    out in two colours. Styles are rooflint's own (the GPU's name in bold)."""
    shown = _piped_show({"FORCE_COLOR": "1"})
    header = next(line for line in shown.splitlines() if "driver" in line)
    assert "driver 580.159.04" in header and "\x1b[1mNVIDIA H200\x1b[0m" in header


BUNDLED_H200 = REPO / "examples" / "h200-bundled.json"


def test_a_family_of_ten_or_more_is_summarised_in_under_thirty_lines():
    """decode_attention's thirteen variants: the device line, the family's title and
    table, a verdict and top move a row, no notes, into a pipe."""
    text = show(BUNDLED_H200, "decode_attention", "--summary", width=2000).stdout
    lines = text.splitlines()
    assert len(lines) <= 30 and len([line for line in lines if " OK " in line]) == 13
    assert not any(line.startswith("  ") for line in lines)        # no notes
    assert all(line == line.rstrip() for line in lines)            # no padding


def test_show_selects_whole_families_beside_single_variants():
    text = show(BUNDLED_H200, "reduction", "triad", "--summary").stdout
    assert row_names(text) >= {"atomics", "smem_tree", "warp_shuffle", "triad"}
    assert "copy_scalar" not in row_names(text) and "naive" not in row_names(text)
    assert_one_line_error(show(BUNDLED_H200, "reductions"), 2, "has no variant reductions",
                          "reduction: atomics, smem_tree, warp_shuffle")


@pytest.mark.parametrize("command, program", [(["show", str(BUNDLED_H200)], []),
                                              (["run", "stream"], []),
                                              (["profile"], ["--", "python", "train.py"])])
def test_summary_and_detail_together_are_one_mistake_before_any_work(command, program):
    outcome = rooflint(*command, "--summary", "--detail", *program)
    assert_one_line_error(outcome, 2, "--summary and --detail ask for opposite things")


def test_each_depth_names_the_traps_as_it_should():
    """The default names each family's ruled-out moves once, with the book they come from;
    --detail gives each variant's, with why; --summary none."""
    summary, default, detail = (show(BUNDLED_H200, *depth, width=2000).stdout
                                for depth in (["--summary"], [], ["--detail"]))
    assert "ruled out" not in summary and "not split-K" not in summary
    ruling = [f for f in read_result(BUNDLED_H200).families
              if any(v.verdict and v.verdict.ruled_out for v in f.variants)]
    assert default.count("the kernel book's traps, Part 5 (5.14)") == len(ruling) == 7
    assert "INT8-KV" not in default and detail.count("INT8-KV trap") >= 10
