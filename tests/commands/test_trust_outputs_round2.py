"""Issue 45, data loss: an output is never appended to or replaced unless it is rooflint's
own document of that kind, told by parsing the whole file rather than its first bytes
($GITHUB_STEP_SUMMARY included; a picture by the mark rooflint leaves in its metadata,
profile's --logs by the formats their writers write), and the reference cache removes
only entries it wrote, never through a link.

The campaign's exact cases first, each as a user typed it, with the promise of
tests/edges.py (one line naming the file, exit 2, every file there before intact); then
the other side of each rule: what rooflint wrote itself is still replaced or appended to.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import zlib
from pathlib import Path

import matplotlib
import pytest

from edges import (NO_GPU, REPO, Outcome, assert_intact, assert_one_line_error, cli_runner,
                   rooflint, snapshot)
from rooflint.commands.cli import app
from rooflint.formats.reference_cache import ENTRY_FILE, ReferenceCache
from rooflint.output.picture_marks import DRAWN_BY, PNG_SIGNATURE
from test_trust_inputs_round2 import NO_NCU
from test_trust_outputs import BASELINE, NO_STEP_SUMMARY, RESULT, gate

matplotlib.use("Agg")
from matplotlib import pyplot  # noqa: E402

KEY = "ab" * 32                     # a name the reference cache gives an entry


@pytest.fixture
def files(tmp_path) -> Path:
    """A CI job's working directory: a result judged (cur.json), another result, and the
    baseline."""
    for name in ("cur.json", "result.json"):
        shutil.copy(RESULT, tmp_path / name)
    shutil.copy(BASELINE, tmp_path / "b.json")
    return tmp_path


def step_summary(target: str, cwd: Path):
    """`GITHUB_STEP_SUMMARY=target rooflint gate --baseline b.json --current cur.json`."""
    return gate("--baseline", "b.json", "--current", "cur.json",
                env={"GITHUB_STEP_SUMMARY": target}, cwd=cwd)


# --- $GITHUB_STEP_SUMMARY -------------------------------------------------------------------

def test_the_step_summary_is_never_appended_to_a_result(files):
    """The campaign's case: the summary had been appended to result.json, which no
    command could read after ("not JSON (Extra data)")."""
    before = snapshot(files)
    outcome = step_summary("result.json", files)
    assert_one_line_error(outcome, 2, "GITHUB_STEP_SUMMARY result.json exists and is not a "
                                      "Markdown summary, so rooflint will not append to it")
    assert_intact(before)
    assert rooflint("show", "result.json", cwd=files).code == 0


@pytest.mark.parametrize("name, written", [
    ("b2.json", BASELINE.read_bytes()),
    ("calls.json", b'[{"name": "any JSON document"}]\n'),
    ("table.csv", ["show", "result.json", "--csv", "table.csv"]),
    ("page.html", ["report", "result.json", "-o", "page.html"]),
    ("gate.xml", ["gate", "--baseline", "b.json", "--current", "cur.json", "--junit",
                  "gate.xml"]),
    ("roofline.svg", ["plot", "result.json", "-o", "roofline.svg"]),
    ("picture.png", b"\x89PNG\r\n\x1a\n\x00\x00binary"),
    ("diagram.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><text>mine</text></svg>\n'),
])
def test_the_step_summary_is_appended_to_no_other_kind(files, name, written):
    """Whatever rooflint's parsing says is another kind: JSON, a table, a page, JUnit XML,
    a picture (each as rooflint wrote it: ``written`` is its command), a file that is not
    text."""
    if isinstance(written, bytes):
        (files / name).write_bytes(written)
    else:
        assert rooflint(*written, cwd=files, env=NO_STEP_SUMMARY).code == 0
    before = snapshot(files)
    assert_one_line_error(step_summary(name, files), 2, f"GITHUB_STEP_SUMMARY {name} exists "
                                                        f"and is not a Markdown summary")
    assert_intact(before)


@pytest.mark.parametrize("earlier", [None, "", "## Build\n\nall 212 tests passed :tada:\n"])
def test_the_step_summary_takes_the_runners_file(files, earlier):
    """GitHub's runner makes an empty file for each step, which earlier commands of the
    step may have added Markdown to; a file not there yet is made. Run twice, the gate
    adds its summary after the first's."""
    summary = files / "step_summary_0c1f"
    if earlier is not None:
        summary.write_text(earlier)
    for run in (1, 2):
        outcome = step_summary(summary.name, files)
        assert outcome.code == 0 and "PASS" in outcome.stdout, outcome.stderr
        text = summary.read_text()
        assert text.startswith(earlier or "") and text.count("### rooflint gate: PASS") == run


# --- --csv and --markdown -----------------------------------------------------------------

USERS_CSV = "family,variant,note\nmine,x,keep me\n"
USERS_MARKDOWN = "| family | variant | note |\n|---|---|---|\n| mine | x | keep |\n"


@pytest.mark.parametrize("option, name, content, kind", [
    ("--csv", "notes.csv", USERS_CSV, "a rooflint CSV table"),
    ("--markdown", "notes.md", USERS_MARKDOWN, "a rooflint Markdown table"),
])
def test_show_never_replaces_a_users_table(files, option, name, content, kind):
    """The campaign's cases: a user's own table that begins with rooflint's first two
    columns, as every table of rooflint's does, had been replaced."""
    (files / name).write_text(content)
    before = snapshot(files)
    outcome = rooflint("show", "result.json", option, name, cwd=files)
    assert_one_line_error(outcome, 2, f"{option} {name} exists and is not {kind}",
                          "will not replace it")
    assert_intact(before)


def rooflints_table(files: Path, option: str) -> str:
    """The table `show result.json` writes under ``option``."""
    out = files / f"table-{option.strip('-')}"
    assert rooflint("show", "result.json", option, str(out), cwd=files).code == 0
    text = out.read_text()
    out.unlink()
    return text


@pytest.mark.parametrize("option, edit", [
    ("--csv", lambda table: table + "my own note under the table\n"),
    ("--csv", lambda table: table.replace("\n", "\n\n", 1)),
    ("--csv", lambda table: table.replace("\n", ",mine\n", 1)),
    ("--csv", lambda table: table.replace("\n", "\nx,", 1)),
    ("--markdown", lambda table: table + "\nMy notes on the table above.\n"),
    ("--markdown", lambda table: "# My kernels\n\n" + table),
    ("--markdown", lambda table: table.replace("|---|", "|:--|", 1)),
    ("--markdown", lambda table: table.rstrip("\n")),
], ids=["csv-note-under", "csv-blank-line", "csv-wider-header", "csv-wider-row",
        "md-note-under", "md-heading-over", "md-other-rule", "md-no-last-line-end"])
def test_a_table_is_rooflints_only_as_a_whole(files, option, edit):
    """rooflint's own table, with what a user adds to it, is the user's: the whole file
    is parsed, not its header alone."""
    target = files / "mine"
    target.write_text(edit(rooflints_table(files, option)))
    before = snapshot(files)
    outcome = rooflint("show", "result.json", option, "mine", cwd=files)
    assert_one_line_error(outcome, 2, f"{option} mine exists and is not")
    assert_intact(before)


def test_rooflints_tables_are_replaced_with_any_name_in_them(files):
    """The other side: a second `show` replaces the tables the first wrote, though names
    in them hold a comma, a quote, a pipe, a CR, a line break and a formula."""
    data = json.loads(RESULT.read_text())
    for variant, name in zip(data["families"][0]["variants"],
                             ['a,b "c"', "x | y", "cr\rhere", "two\nlines", "=cmd|' /C"]):
        variant["name"] = name
    (files / "names.json").write_text(json.dumps(data))
    for run in ("into new files", "over the first run's tables"):
        outcome = rooflint("show", "names.json", "--csv", "t.csv", "--markdown", "t.md",
                           cwd=files)
        assert outcome.code == 0, (run, outcome.stderr)


# --- the gate's own reports ---------------------------------------------------------------

@pytest.mark.parametrize("option, content", [
    ("--markdown", "### rooflint gate: PASS\n\nWhy the last regression was accepted.\n"),
    ("--junit", '<?xml version="1.0"?>\n<testsuites><testsuite name="pytest" tests="1">'
                '<testcase name="test_x"/></testsuite></testsuites>\n'),
    ("--junit", '<?xml version="1.0" encoding="x-mine"?>\n<testsuite/>\n'),
])
def test_the_gate_replaces_only_its_own_reports(files, option, content):
    """Notes that begin with the gate's heading; pytest's JUnit report; XML in an encoding
    the parser does not know (it had ended in an internal error)."""
    (files / "existing").write_text(content)
    before = snapshot(files)
    outcome = gate("--baseline", "b.json", "--current", "cur.json", option, "existing",
                   cwd=files)
    assert_one_line_error(outcome, 2, f"{option} existing exists and is not a rooflint")
    assert_intact(before)


def test_a_gate_summary_with_its_gpu_note_is_replaced(files):
    """A baseline from another GPU, taken with --gpu-mismatch warn: the summary's note
    under its heading still makes it the gate's own."""
    shutil.copy(REPO / "examples" / "ci" / "h100-baseline.json", files / "h100.json")
    for run in ("new", "over the first"):
        outcome = gate("--baseline", "h100.json", "--current", "cur.json", "--gpu-mismatch",
                       "warn", "--markdown", "g.md", cwd=files)
        assert outcome.code in (0, 1), (run, outcome.stderr)
        assert outcome.stderr.splitlines() == ["gate summary written to g.md"], outcome.stderr
    assert "\n> " in (files / "g.md").read_text()


# --- pictures: rooflint's own, told by the mark it leaves in each -------------------------

runner = cli_runner()
FORMATS = ["png", "svg", "pdf"]


def invoked(*args: str, env: dict[str, str] | None = None) -> Outcome:
    """``rooflint ARGS`` in-process (matplotlib imported once for every case), with no
    GPU, as edges.rooflint would give it."""
    done = runner.invoke(app, list(args), env={**NO_GPU, **NO_STEP_SUMMARY, **(env or {})})
    return Outcome(done.exit_code, done.stdout, done.stderr)


def users_diagram(format: str) -> bytes:
    """A picture a user drew with matplotlib, as rooflint draws its own but unmarked (the
    maker it names is matplotlib)."""
    fig, ax = pyplot.subplots()
    ax.plot([1, 2], [3, 4])
    picture = io.BytesIO()
    fig.savefig(picture, format=format)
    pyplot.close(fig)
    return picture.getvalue()


def rooflints_picture(format: str) -> bytes:
    """The picture `plot result.json -o roofline.FORMAT` draws (in the current directory)."""
    assert invoked("plot", "result.json", "-o", f"roofline.{format}").code == 0
    return Path(f"roofline.{format}").read_bytes()


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("command, option", [(["plot", "result.json", "-o"], "--output"),
                                             (["run", "stream", "--svg"], "--svg")],
                         ids=["plot", "run"])
def test_a_users_own_picture_is_never_replaced(files, monkeypatch, command, option, format):
    """The campaign's case, `rooflint plot r.json -o diagram.png` over the user's own
    diagram, in each format, and `run --svg`'s the same (said before the GPU is looked
    for: there is none here)."""
    monkeypatch.chdir(files)
    Path(f"diagram.{format}").write_bytes(users_diagram(format))
    before = snapshot(files)
    outcome = invoked(*command, f"diagram.{format}")
    assert_one_line_error(outcome, 2, f"{option} diagram.{format} exists and is not a "
                                      f"picture rooflint drew", "will not replace it")
    assert_intact(before)


def with_text_chunk(png: bytes, keyword: bytes, text: bytes) -> bytes:
    """``png`` with a tEXt chunk ``keyword``: ``text`` after its header chunk (IHDR)."""
    body = keyword + b"\0" + text
    chunk = (len(body).to_bytes(4, "big") + b"tEXt" + body
             + zlib.crc32(b"tEXt" + body).to_bytes(4, "big"))
    after_header = len(PNG_SIGNATURE) + 25
    return png[:after_header] + chunk + png[after_header:]


def with_broken_mark_crc(png: bytes) -> bytes:
    """``png`` with the CRC of its Software chunk (the mark, left intact) wrong."""
    crc = png.index(b"tEXtSoftware\0" + MARK) + len(b"tEXtSoftware\0" + MARK)
    return png[:crc] + bytes([png[crc] ^ 1]) + png[crc + 1:]


MARK = DRAWN_BY.encode()
# Pictures that are not rooflint's: rooflint's own with its maker rewritten by another
# tool, or with the mark elsewhere than its format keeps the maker, or in a file that is
# no longer one whole picture; each: format, how it is made from rooflint's own picture.
NEAR_MISSES = {
    "svg-other-creator": ("svg", lambda svg: svg.replace(b"<dc:title>" + MARK,
                                                         b"<dc:title>Inkscape")),
    "svg-mark-as-text": ("svg", lambda svg: b'<svg xmlns="http://www.w3.org/2000/svg"><title>'
                                            + MARK + b"</title><text>" + MARK + b"</text></svg>"),
    "svg-note-after": ("svg", lambda svg: svg + b"<!-- mine -->\n<p>my notes</p>\n"),
    "svg-unknown-encoding": ("svg", lambda svg: svg.replace(b'encoding="utf-8"',
                                                            b'encoding="x-mine"', 1)),
    "png-mark-as-comment": ("png", lambda png: with_text_chunk(users_diagram("png"),
                                                                b"Comment", MARK)),
    "png-after-its-end": ("png", lambda png: png + b"PK\x03\x04 an archive appended"),
    "png-broken-crc": ("png", lambda png: with_broken_mark_crc(png)),
    "pdf-other-creator": ("pdf", lambda pdf: pdf.replace(b"/Creator (" + MARK,
                                                         b"/Creator (inkscap")),
    "pdf-update-appended": ("pdf", lambda pdf: pdf + b"% edited\n%%EOF\n"),
}


@pytest.mark.parametrize("case", list(NEAR_MISSES))
def test_a_picture_is_rooflints_only_by_its_mark_read_as_its_format(files, monkeypatch,
                                                                     case):
    """The mark is read where the format keeps its maker (the SVG's metadata, parsed;
    the PNG's Software text, its chunks walked and their CRCs checked; the PDF's Info
    dictionary, through its cross-reference table), not found anywhere in the bytes."""
    monkeypatch.chdir(files)
    format, edit = NEAR_MISSES[case]
    target = Path(f"mine.{format}")
    target.write_bytes(edit(rooflints_picture(format)))
    before = snapshot(files)
    outcome = invoked("plot", "result.json", "-o", str(target))
    assert_one_line_error(outcome, 2, f"--output {target} exists and is not a picture "
                                      f"rooflint drew")
    assert_intact(before)


@pytest.mark.parametrize("format", FORMATS)
def test_rooflints_own_pictures_and_empty_files_are_replaced(files, monkeypatch, format):
    """The other side: an empty file (mktemp) is drawn into, then drawn over, the mark in
    it each time; `run --svg` takes a picture `plot` drew (refused there only for want of a
    GPU)."""
    monkeypatch.chdir(files)
    Path(f"p.{format}").touch()
    for run in ("into the empty file", "over the first picture"):
        outcome = invoked("plot", "result.json", "-o", f"p.{format}")
        assert outcome.code == 0, (run, outcome.stderr)
    assert MARK in Path(f"p.{format}").read_bytes()
    outcome = invoked("run", "stream", "--svg", f"p.{format}")
    assert outcome.code == 2 and "picture" not in outcome.stderr, outcome.stderr


# --- profile's --logs: its own earlier logs, as their writers write them ------------------

NCU_LOGS = REPO / "tests" / "fixtures" / "ncu"
TRACES = REPO / "tests" / "fixtures" / "trace"


def profile_with_logs(logs: Path) -> Outcome:
    """`rooflint profile --logs LOGS -- true` with no ncu: past the guard on its outputs,
    the first thing wrong is that Nsight Compute is missing."""
    return invoked("profile", "--logs", str(logs), "--", "true", env=NO_NCU)


@pytest.mark.parametrize("log, content", [
    ("pass1-durations.csv", (NCU_LOGS / "h200-transformer-block-pass1.csv").read_bytes()),
    ("pass2-counters.csv", (NCU_LOGS / "h100-train-step-pass2.csv").read_bytes()),
    ("pass2-counters.csv", b"==PROF== Finding attachable processes on host 127.0.0.1.\n"
                           b"==ERROR== No attachable process found.\n"),
    ("pass1-durations.csv", b"==WARNING== No kernels were profiled.\n"),
    ("pass1-trace.json", (TRACES / "h200-step-trace.json").read_bytes()),
    ("pass1-trace.json", b'{\n  "schemaVersion": 1,\n  "traceEvents": [\n{"name": "a\tb"}],'
                         b'\n  "traceName": "x"\n}\n'),
    ("pass1-trace.json", b'{"traceEvents": [], "deviceProperties": []}'),
], ids=["ncu-pass1", "ncu-pass2-attached", "ncu-attach-refused", "ncu-no-kernels",
        "torch-trace", "torch-trace-unescaped", "cupti-trace"])
def test_profile_replaces_its_own_earlier_logs(tmp_path, log, content):
    """Nsight Compute's logs (a table after its messages, or its messages alone), PyTorch's
    profiler's trace (its names not always escaped) and the CUPTI recorder's."""
    (tmp_path / log).write_bytes(content)
    assert_one_line_error(profile_with_logs(tmp_path), 2, "needs Nsight Compute")


@pytest.mark.parametrize("log, content, kind", [
    ("pass1-durations.csv", "==PROF== my notes\nkernel,ms\ngemm,1.5\n", "a log"),
    ("pass2-counters.csv", '"ID","note"\n"1","mine","and more"\n', "a log"),
    ("pass2-counters.csv", '{"traceEvents": []}\n', "a log"),
    ("pass1-trace.json", '{"my": "settings"}\n', "a trace"),
    ("pass1-trace.json", '==PROF== a log under the trace\'s name\n', "a trace"),
])
def test_profile_logs_replace_no_file_of_the_users(tmp_path, log, content, kind):
    """A user's file under a log's name that begins as the log does (the old check read
    only that): Nsight Compute's messages, its table's first column, a JSON object."""
    (tmp_path / log).write_text(content)
    before = snapshot(tmp_path)
    assert_one_line_error(profile_with_logs(tmp_path), 2, f"--logs {tmp_path / log} exists "
                                                          f"and is not {kind} of rooflint profile")
    assert_intact(before)


# --- the reference cache ------------------------------------------------------------------

def users_folder(root: Path) -> Path:
    """A user's folder of content-addressed data: a directory named as a cache entry is,
    holding no entry.json."""
    folder = root / "datasets"
    (folder / KEY).mkdir(parents=True)
    (folder / KEY / "weights.bin").write_bytes(b"\x00" * 1000)
    return folder


def test_cache_clear_removes_nothing_through_a_linked_references(tmp_path):
    """The campaign's case: ~/.cache/rooflint/references a link to a user's folder."""
    home = tmp_path / "home"
    (home / ".cache" / "rooflint").mkdir(parents=True)
    (home / ".cache" / "rooflint" / "references").symlink_to(users_folder(tmp_path))
    before = snapshot(tmp_path)
    outcome = rooflint("cache", "clear", env={"HOME": str(home), "ROOFLINT_CACHE_DIR": "",
                                              "XDG_CACHE_HOME": ""})
    assert_one_line_error(outcome, 2, f"{home}/.cache/rooflint/references is a symbolic link",
                          "removes nothing through a link")
    assert_intact(before)


def test_cache_clear_removes_only_the_entries_it_wrote(tmp_path):
    """In the cache's own directory: a user's folder named as an entry, and a link named
    as one to a directory laid out as one, stay; the entries written go."""
    cache = ReferenceCache(tmp_path / "cache" / "references", 2**20)
    cache.write("cd" * 32, {"y": [1.0, 2.0]})
    shutil.move(users_folder(tmp_path) / KEY, cache.directory / KEY)
    linked = tmp_path / "linked"
    shutil.copytree(cache.directory / ("cd" * 32), linked)
    (cache.directory / ("ef" * 32)).symlink_to(linked)
    (cache.directory / f".{'ef' * 32}.abc.tmp").mkdir()
    (cache.directory / f".{'ef' * 32}.abc.tmp" / "notes.txt").write_text("mine")
    kept = sorted(path.name for path in cache.directory.iterdir() if path.name != "cd" * 32)
    before = snapshot(tmp_path / "linked", cache.directory / KEY,
                      cache.directory / f".{'ef' * 32}.abc.tmp")
    outcome = rooflint("cache", "clear", env={"ROOFLINT_CACHE_DIR": str(tmp_path / "cache")})
    assert outcome.code == 0 and "outputs of 1 reference " in outcome.stdout, outcome.stderr
    assert sorted(path.name for path in cache.directory.iterdir()) == kept
    assert_intact(before)


def test_a_linked_references_is_neither_written_nor_evicted_through(tmp_path):
    """A run's cache whose directory is a link: nothing written there (it could never be
    evicted), nothing evicted nor repaired there, though laid out as entries are."""
    written = ReferenceCache(tmp_path / "written", 2**20)
    written.write(KEY, {"y": [1.0]})
    folder = tmp_path / "folder"
    shutil.copytree(written.directory, folder)                  # an entry, as laid out
    shutil.copytree(written.directory / KEY, folder / ("cd" * 32))
    (folder / ("cd" * 32) / ENTRY_FILE).unlink()                # read: a broken entry
    (tmp_path / "references").symlink_to(folder)
    before = snapshot(folder)
    assert ReferenceCache(tmp_path / "references", 2**20).read("cd" * 32) is None
    ReferenceCache(tmp_path / "references", 2**20).write("ef" * 32, {"y": [1.0]})
    ReferenceCache(tmp_path / "references", 0).evict()
    assert sorted(os.listdir(folder)) == [KEY, "cd" * 32]
    assert_intact(before)
