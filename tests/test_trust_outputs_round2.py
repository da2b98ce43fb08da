"""Issue 45, data loss: an output is never appended to or replaced unless it is rooflint's
own document of that kind, told by parsing the whole file rather than its first bytes
($GITHUB_STEP_SUMMARY included), and the reference cache removes only entries it wrote,
never through a link.

The campaign's exact cases first, each as a user typed it, with the promise of
tests/edges.py (one line naming the file, exit 2, every file there before intact); then
the other side of each rule: what rooflint wrote itself is still replaced or appended to.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from edges import REPO, assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.formats.reference_cache import ENTRY_FILE, ReferenceCache
from test_trust_outputs import BASELINE, NO_STEP_SUMMARY, RESULT, gate

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
])
def test_the_gate_replaces_only_its_own_reports(files, option, content):
    """Notes that begin with the gate's heading; pytest's JUnit report."""
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
        assert outcome.code in (0, 1) and not outcome.stderr.strip(), (run, outcome.stderr)
    assert "\n> " in (files / "g.md").read_text()


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
