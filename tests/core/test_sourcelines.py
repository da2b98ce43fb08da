"""The source pass (`run --source`): ncu's source page parsed, lines ranked by the measure
each move names, printed under the move, kept in the result; on a page recorded on an
H100 (stream's strided_read twice: stride 32, then stride 1; tests/fixtures/ncu/
probe-source.py made it, with its SASS rows cut to two per line)."""

from __future__ import annotations

import io
from pathlib import Path, PurePath

import pytest
from rich.console import Console

from rooflint.engine import families as run_module
from rooflint.commands.cli import app
from rooflint.measure import ncu, source_report
from rooflint.analysis.moves import CATALOG, rule_for
from rooflint.output.live import RunDisplay
from rooflint.formats.results import read_result, write_result
from rooflint.analysis.sourcelines import (INLINED_SHARE, MEASURES, Instruction, inlined_share,
                                           lines_of, own_file, profile_of, supporting)
from recorded import RecordedPool, RecordedProfiler, use_stand_in_pools
from test_cli import runner

PAGE = (Path(__file__).parents[1] / "fixtures" / "ncu" / "h100-source-strided-read.csv").read_text()
STRIDED = "if (i < n) out[i] = x[(i % m) * stride + i / m];"


def launches(page: str) -> list[str]:
    """The recorded page split into its two launches' pages (each starts with its file)."""
    at = page.index('"File Path"', 1)
    return [page[:at], page[at:]]


def test_the_source_page_gives_each_cuda_line_its_counts_and_text():
    first = ncu.source_page_lines(launches(PAGE)[0])
    assert [line.line for line in first] == [32, 34, 36, 37]
    load = next(line for line in first if line.line == 36)
    assert (load.stall_samples, load.excessive_sectors, load.bank_conflicts) == (46092, 14680064, 0)
    assert load.text.strip() == STRIDED and load.file == "/work/main/kernels/stream/stream.cu"
    signature = first[0].text  # ncu leaves the quotes of extern "C" unescaped
    assert signature.startswith('extern "C" __global__ void strided_read(const float*')
    assert signature.endswith("float* __restrict__ out,") and first[0].stall_samples == 38


def test_a_line_holding_the_field_separator_keeps_its_text_and_its_counts():
    header = '"Line No","Source","Address","Source","Warp Stall Sampling (All Samples)"'
    row = '"7","printf("%d","x"); y = 1;","-","-","120"'
    [line] = ncu.source_page_lines(f'"File Path","/k.cu"\n{header}\n{row}\n')
    assert (line.text, line.stall_samples) == ('printf("%d","x"); y = 1;', 120)


def test_a_variants_launches_add_up_by_line_and_each_measure_names_its_leaders():
    """Both recorded launches as one variant: line 36 leads every measure; its share of
    the excessive sectors is all of them (the stride-1 launch has none)."""
    profile = profile_of(line for page in launches(PAGE) for line in ncu.source_page_lines(page))
    samples = 38 + 1165 + 46092 + 4611 + 64 + 1466 + 6698 + 218
    assert profile.totals == {"stall_samples": samples, "excessive_sectors": 14680064,
                              "bank_conflicts": 0, "barrier_samples": 0}
    assert supporting(profile, "excessive_sectors") == [
        f"stream.cu:36  100% of excessive L2 sectors  {STRIDED}"]
    assert supporting(profile, "stall_samples")[0] == (
        f"stream.cu:36  {(46092 + 6698) / samples:.0%} of stall samples  {STRIDED}")
    assert len(supporting(profile, "stall_samples", count=9)) == 4   # lines 32, 34, 36, 37


def test_a_measure_the_kernel_has_none_of_falls_back_to_stall_samples():
    profile = profile_of(ncu.source_page_lines(launches(PAGE)[1]))
    assert supporting(profile, "bank_conflicts")[0].startswith("stream.cu:36  ")
    assert "of stall samples" in supporting(profile, "bank_conflicts")[0]
    assert supporting(profile_of([]), "stall_samples") == []


def test_every_move_names_a_measure_the_source_pass_reads():
    assert ({rule.lines for rule in CATALOG} <= set(MEASURES)
            == {m.name for m in ncu.SOURCE_MEASURES})
    assert rule_for("cut_redundant_traffic").lines == "excessive_sectors"
    assert rule_for("bank_conflicts_off").lines == "bank_conflicts"


def test_a_report_is_read_launch_by_launch_into_its_variants(monkeypatch, tmp_path):
    """The raw page maps launch IDs to variant ranges; each launch's source page is read
    with --launch-skip ID."""
    nvtx = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    raw = (f'"ID","Process ID","{nvtx}","Kernel Name"\n'
           '"0","9","9 ""<default domain>:rooflint-variant/0:none"" ","strided_read"\n'
           '"1","9","9 ""<default domain>:rooflint-variant/1:none"" ","strided_read"\n')
    asked = []

    def imported(report, *page):
        asked.append(page)
        if page[1] == "raw":
            return raw
        return launches(PAGE)[int(page[page.index("--launch-skip") + 1])]
    monkeypatch.setattr(ncu, "_imported", imported)
    by_index = ncu.read_source_csv(tmp_path / "ncu-0.ncu-rep")
    assert by_index[0].totals["excessive_sectors"] == 14680064
    assert by_index[1].totals["excessive_sectors"] == 0
    assert sorted(page[-3] for page in asked if page[1] == "source") == ["0", "1"]


class SourceProfiler(RecordedProfiler):
    """Stands in for the source pass's profiler: every variant it is given gets the
    recorded stride-32 launch's lines."""

    def close(self) -> dict:
        self.log.append(("close", ""))
        lines = profile_of(ncu.source_page_lines(launches(PAGE)[0]))
        return {ticket: {v.name: lines for v in job.variants}
                for ticket, job in enumerate(self.jobs)}


@pytest.fixture
def profilers(monkeypatch):
    made = {}

    def profiler(cache, collection, env=None, preload=()):
        counting_source = isinstance(collection, source_report.SourceCounting)
        kind = SourceProfiler if counting_source else RecordedProfiler
        made[kind] = kind()
        return made[kind]
    monkeypatch.setattr(run_module, "Profiler", profiler)
    monkeypatch.setattr(run_module.ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")
    monkeypatch.setattr(source_report, "interface", lambda: None)   # ncu -i's CSV reads it
    use_stand_in_pools(monkeypatch, lambda env=None: RecordedPool())
    return made


def test_run_source_prints_the_lines_under_the_move_and_keeps_them(profilers, tmp_path):
    """The strided read's move (cut redundant traffic; the table names it, the notes say
    why) is followed by its load line; the
    cuBLAS baseline (a Python call) is not source-profiled; the result keeps the lines."""
    console = Console(file=io.StringIO(), width=200)
    display = RunDisplay(console, tables=True)
    path = tmp_path / "run.json"
    with display:
        run_module.run(run_module.RunOptions(targets=["stream", "gemm_fp32"], variants=[],
                                             sizes={}, json_path=path, source=True),
                       display.listener())
    screen = console.file.getvalue().splitlines()
    move = next(i for i, line in enumerate(screen)
                if line.lstrip().startswith("strided_read:") and "why right" in line)
    assert screen[move + 1].split(":", 1)[1].strip() == (
        f"stream.cu:36  100% of excessive L2 sectors  {STRIDED}")
    sourced = [v.name for job in profilers[SourceProfiler].jobs for v in job.variants]
    assert "strided_read" in sourced and "cublas" not in sourced
    kept = read_result(path)
    strided = next(v for f in kept.families for v in f.variants if v.name == "strided_read")
    assert strided.source_lines.totals["excessive_sectors"] == 14680064
    assert kept.settings.source_reader == "csv"
    write_result(kept, tmp_path / "again.json")
    assert read_result(tmp_path / "again.json") == kept


def test_without_source_no_source_pass_runs(profilers):
    result = run_module.run(run_module.RunOptions(targets=["stream"], variants=[], sizes={}))
    assert SourceProfiler not in profilers
    assert all(v.source_lines is None for f in result.families for v in f.variants)
    assert result.settings.source_reader is None


def test_source_with_counters_off_is_refused_in_one_line():
    outcome = runner.invoke(app, ["run", "stream", "--source", "--counters", "off"])
    assert outcome.exit_code == 2
    assert outcome.stderr.strip().splitlines() == [
        "rooflint: --source reads Nsight Compute's source counters: it cannot run with "
        "--counters off"]


def test_the_source_pass_profiles_into_a_report_with_the_sources_clocks_untouched(monkeypatch,
                                                                                   tmp_path):
    monkeypatch.setattr(ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")
    command = source_report.SourceCounting().command(tmp_path / "ncu-0", "cold")
    joined = " ".join(command)
    assert "--clock-control none" in joined and "--cache-control all" in joined
    assert "--section SourceCounters --import-source yes" in joined
    assert command[-2:] == ["-o", str(tmp_path / "ncu-0")] and "--nvtx" in command
    # ncu wrote no report
    assert source_report.SourceCounting().read(tmp_path / "ncu-0") == ({}, "")


def test_a_report_ncu_cannot_read_is_a_one_line_reason(monkeypatch, tmp_path):
    """A report ncu fails on, or takes too long over: the run goes on without lines and
    says why (take_source_lines warns with this message)."""
    import subprocess
    monkeypatch.setattr(ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")

    def failing(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "", "==ERROR== Failed to open report\n")
    monkeypatch.setattr(ncu.subprocess, "run", failing)
    with pytest.raises(ncu.CountersUnavailable, match="could not read its report ncu-0.ncu-rep: "
                                                     "==ERROR== Failed to open report"):
        ncu.read_source_csv(tmp_path / "ncu-0.ncu-rep")

    def hanging(command, **kwargs):
        raise subprocess.TimeoutExpired(command, kwargs["timeout"])
    monkeypatch.setattr(ncu.subprocess, "run", hanging)
    with pytest.raises(ncu.CountersUnavailable, match="took over 300 s"):
        ncu.read_source_csv(tmp_path / "ncu-0.ncu-rep")


def test_a_source_pass_that_fails_warns_and_keeps_the_run(profilers, monkeypatch):
    def refuse(self):
        raise ncu.CountersUnavailable("ncu could not read its report ncu-0.ncu-rep: boom")
    monkeypatch.setattr(SourceProfiler, "close", refuse)
    warnings = []
    result = run_module.run(run_module.RunOptions(targets=["stream"], variants=[], sizes={},
                                                  source=True),
                            run_module.Listener(warn=warnings.append))
    assert warnings == ["source lines unavailable: ncu could not read its report "
                        "ncu-0.ncu-rep: boom"]
    strided = next(v for v in result.families[0].variants if v.name == "strided_read")
    assert strided.counters is not None and strided.source_lines is None


def test_a_result_naming_a_move_this_version_lacks_still_shows_its_lines(tmp_path):
    """A result file from another rooflint names a move the catalog no longer has: its
    lines are shown by stall samples."""
    from rooflint.output.family_table import _notes
    from rooflint.analysis.diagnose import Move, Verdict
    profile = profile_of(ncu.source_page_lines(launches(PAGE)[0]))
    result = read_result(Path(__file__).parents[1] / "fixtures" / "results" / "h200-bundled.json")
    strided = next(v for f in result.families for v in f.variants if v.name == "strided_read")
    strided.verdict = Verdict("bandwidth", "", moves=[Move("tile_for_l1", "up", "old", "", "")])
    strided.source_lines = profile
    texts = [note.plain for note in _notes(strided, True, None, traps=True)]
    assert f"  stream.cu:36  89% of stall samples  {STRIDED}" in texts   # 46092 of 51906


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_committed_source_example_shows_the_strided_reads_load_line(gpu):
    """examples/<gpu>-source-stream.json, as the README quotes it, read back by `show`."""
    path = Path(__file__).parents[2] / "examples" / f"{gpu}-source-stream.json"
    outcome = runner.invoke(app, ["show", str(path), "strided_read"], env={"COLUMNS": "200"})
    assert outcome.exit_code == 0, outcome.output
    assert f"stream.cu:36  100% of excessive L2 sectors  {STRIDED}" in outcome.stdout


def test_source_without_ncu_says_there_will_be_no_lines(monkeypatch):
    """ncu missing: the run goes on with model bytes, and says --source gave nothing."""
    def missing():
        raise ncu.CountersUnavailable("ncu (Nsight Compute) is not on PATH")
    monkeypatch.setattr(run_module.ncu, "ncu_path", missing)
    monkeypatch.setattr(run_module, "Profiler", lambda *args: pytest.fail("profiled"))
    use_stand_in_pools(monkeypatch, lambda env=None: RecordedPool())
    warnings = []
    result = run_module.run(run_module.RunOptions(targets=["stream"], variants=[], sizes={},
                                                  source=True),
                            run_module.Listener(warn=warnings.append))
    assert warnings[-1] == run_module.NO_SOURCE_LINES and len(warnings) == 2
    assert all(v.source_lines is None for v in result.families[0].variants)


def test_counters_lost_at_the_end_skip_the_source_pass_and_say_so(profilers, monkeypatch):
    def refuse(self):
        raise ncu.CountersUnavailable("ERR_NVGPUCTRPERM")
    monkeypatch.setattr(RecordedProfiler, "close", refuse)
    warnings = []
    run_module.run(run_module.RunOptions(targets=["stream"], variants=[], sizes={}, source=True),
                   run_module.Listener(warn=warnings.append))
    assert warnings[-1] == run_module.NO_SOURCE_LINES
    assert SourceProfiler in profilers and not profilers[SourceProfiler].jobs


# -- inlined header code lands at the user's calling line (issue 24) ----------------------

INLINED = (Path(__file__).parents[1] / "fixtures" / "ncu"
           / "h100-source-inlined-pipeline.csv").read_text()
# probe-inlined-pipeline.py beside it, H100: a loop of __pipeline_memcpy_async (cp.async)
# at line 10 of the kernel's file, the prologue's copy at line 7; ncu's page lists the
# copies' instructions under cuda_pipeline_helpers.h:190, and under line 10 only those
# whose inline chain it knows (2398 samples at the header line, 789 at line 10).


def test_inlined_header_code_counts_at_the_line_that_called_it_once():
    lines = ncu.source_page_lines(INLINED)
    assert {PurePath(line.file).suffix for line in lines} == {".cu"}       # the kernel's file
    by_number = {line.line: line for line in lines}
    assert by_number[10].stall_samples == 789 + 1917      # its own and the header's loop copy
    assert by_number[10].inlined == "cuda_pipeline_helpers.h:190"
    assert by_number[7].inlined == "cuda_pipeline_helpers.h:190"           # the prologue's copy
    assert by_number[9].stall_samples == 1955 and not by_number[9].inlined  # the loop test
    rows, instructions = ncu.parse_source_page(INLINED)
    each_once = sum(i.measures["stall_samples"] for i in instructions)
    assert sum(line.stall_samples for line in lines) == each_once == 30986
    assert sum(row.stall_samples for row in rows) == 35016   # the page's rows count some twice


def test_the_calling_line_is_printed_with_the_header_line_as_its_detail():
    shown = supporting(profile_of(ncu.source_page_lines(INLINED)), "stall_samples", 3)
    assert shown[2].endswith("(inlined from cuda_pipeline_helpers.h:190)")
    assert shown[2].startswith("ce23efdd12ec527ab060b2ca64138c621c896c75.cubin.cu:10  9%")


def test_a_kernel_in_one_file_keeps_its_page_as_it_was():
    """No instruction outside the kernel's file: the rows as ncu sums them."""
    rows, instructions = ncu.parse_source_page(launches(PAGE)[0])
    assert inlined_share(instructions) == 0.0
    assert ncu.source_page_lines(launches(PAGE)[0]) == rows


def test_instructions_placed_one_line_each_say_when_the_page_is_needed():
    """ncu_report places each instruction at one line, no chain: the header-only ones
    are 6-10 % of this launch's samples, past the share at which its page is read."""
    _, instructions = ncu.parse_source_page(INLINED)
    own = own_file(instructions)
    outermost = [Instruction(i.address, (next((p for p in i.places if p[0] == own), i.places[0]),),
                             i.measures) for i in instructions]
    assert INLINED_SHARE <= inlined_share(outermost) < 0.1
    guessed = {line.line: line.stall_samples for line in lines_of(outermost, {})}
    assert guessed[10] < 2706 and guessed[9] > 1955   # without chains, neighbours mislead


def test_a_barrier_move_points_at_the_lines_its_warps_wait_at():
    """Issue 48: a kernel whose stalls are barriers got "take the barrier off the path"
    without the barrier named. The recorded pipeline page's stall_barrier column: its
    warps waited at two lines, and the move's lines are those, not the loop's copy, which
    leads the stall samples."""
    profile = profile_of(ncu.source_page_lines(INLINED))
    assert profile.totals["barrier_samples"] == 5197
    barrier = supporting(profile, rule_for("sync_off_the_path").lines)
    assert [line.split("  ")[:2] for line in barrier] == [
        ["ce23efdd12ec527ab060b2ca64138c621c896c75.cubin.cu:14", "77% of barrier stall samples"],
        ["ce23efdd12ec527ab060b2ca64138c621c896c75.cubin.cu:9", "23% of barrier stall samples"]]
    assert supporting(profile, "stall_samples")[0] != barrier[0]
    assert rule_for("hoist_loads").lines == "barrier_samples"
