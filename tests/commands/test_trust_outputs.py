"""Issue 22, part C: nothing a user named is overwritten, thresholds say what they mean,
names from files are escaped for the terminal, and the vague messages say what to do.

Every case runs the real command on copies of the committed results and baselines, and
checks the promise of tests/edges.py: one line naming the options, exit 2, and every
file that existed before still there, byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from edges import cli_runner

import edges
from edges import NO_GPU, REPO, TOY, assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.commands.cli import app
from rooflint.common.errors import RooflintError
from rooflint.formats.manifest import load_manifest
from rooflint.common.printable import printable, printable_fields

RESULT = REPO / "examples" / "h200-bundled.json"
BASELINE = REPO / "examples" / "ci" / "h200-baseline.json"        # made from RESULT
NO_STEP_SUMMARY = {"GITHUB_STEP_SUMMARY": ""}
EVIL = "\x1b]0;title\x07\x1b[2J"          # sets the window title, clears the screen
RAW = ("\x1b", "\x07")


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    """A user's working directory: a result, its baseline, notes, a result named .svg."""
    shutil.copy(RESULT, tmp_path / "r.json")
    shutil.copy(BASELINE, tmp_path / "b.json")
    shutil.copy(RESULT, tmp_path / "r.svg")
    (tmp_path / "notes.txt").write_text("not a baseline: my notes\n")
    return {p.name: p for p in tmp_path.iterdir()}


def gate(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    return rooflint("gate", *args, env={**NO_STEP_SUMMARY, **(env or {})}, cwd=cwd)


# --- 1. nothing a user named is overwritten ------------------------------------------------

@pytest.mark.parametrize("args, env, fragments", [
    (["gate", "--current", "r.json", "--baseline", "b.json", "--markdown", "r.json"], {},
     ["--markdown r.json is --current r.json", "does not write over a file it reads"]),
    (["gate", "--current", "r.json", "--baseline", "b.json", "--junit", "b.json"], {},
     ["--junit b.json is --baseline b.json"]),
    (["gate", "--current", "r.json", "--baseline", "b.json", "--markdown", "b.json"], {},
     ["--markdown b.json is --baseline b.json"]),
    (["gate", "--current", "r.json", "--baseline", "b.json"], {"GITHUB_STEP_SUMMARY": "r.json"},
     ["GITHUB_STEP_SUMMARY r.json is --current r.json", "does not append to a file it reads"]),
    (["gate", "--current", "r.json", "--baseline", "b.json"], {"GITHUB_STEP_SUMMARY": "b.json"},
     ["GITHUB_STEP_SUMMARY b.json is --baseline b.json"]),
    (["gate", "--update", "--baseline", "r.json", "--current", "r.json"], {},
     ["--baseline r.json is --current r.json"]),
    (["gate", "--update", "--baseline", "notes.txt", "--current", "r.json"], {},
     ["--baseline notes.txt exists and is not a rooflint baseline", "or add --force"]),
    (["plot", "r.svg", "-o", "r.svg"], {}, ["--output r.svg is RESULT r.svg"]),
    (["gate", "--current", "r.json", "--baseline", "b.json", "--markdown", "x.md",
      "--junit", "x.md"], {}, ["--markdown x.md and --junit x.md are one file"]),
])
def test_an_input_is_never_an_output(files, tmp_path, args, env, fragments):
    before = snapshot(tmp_path)
    outcome = rooflint(*args, cwd=tmp_path, env={**NO_STEP_SUMMARY, **env})
    assert_one_line_error(outcome, 2, *fragments)
    assert_intact(before)
    assert sorted(tmp_path.iterdir()) == sorted(before)        # nothing new written either


@pytest.mark.parametrize("spelling", ["./r.json", "link.json", "hard.json", "sub/../r.json"])
def test_links_and_spellings_of_an_input_are_the_input(files, tmp_path, spelling):
    (tmp_path / "link.json").symlink_to("r.json")
    os.link(tmp_path / "r.json", tmp_path / "hard.json")
    (tmp_path / "sub").mkdir()
    before = snapshot(tmp_path)
    outcome = gate("--current", spelling, "--baseline", "b.json", "--markdown", "r.json",
                   cwd=tmp_path)
    assert_one_line_error(outcome, 2, "--markdown r.json is --current")
    assert_intact(before)


@pytest.mark.parametrize("option, content, kind", [
    ("--markdown", "# My project\n\nThe README the summary must not replace.\n",
     "a rooflint gate summary"),
    ("--markdown", RESULT.read_text(), "a rooflint gate summary"),
    ("--junit", "<html><body>a report</body></html>\n", "a rooflint JUnit report"),
    ("--junit", RESULT.read_text(), "a rooflint JUnit report"),
], ids=["markdown-readme", "markdown-result", "junit-html", "junit-result"])
def test_a_report_replaces_only_a_report_of_its_kind(files, tmp_path, option, content, kind):
    target = tmp_path / "existing"
    target.write_text(content)
    before = snapshot(tmp_path)
    outcome = gate("--current", "r.json", "--baseline", "b.json", option, "existing",
                   cwd=tmp_path)
    assert_one_line_error(outcome, 2, f"{option} existing exists and is not {kind}")
    assert_intact(before)


def test_reports_of_their_kind_and_empty_files_are_replaced(files, tmp_path):
    """The other side of the rule: a second gate run replaces the first run's reports, an
    empty file (mktemp) is taken, and --update replaces the baseline it is asked to."""
    (tmp_path / "empty.xml").touch()
    args = ("--current", "r.json", "--baseline", "b.json", "--markdown", "g.md", "--junit",
            "empty.xml")
    for _ in ("into the empty file", "over the first run's reports"):
        outcome = gate(*args, cwd=tmp_path)
        assert outcome.code == 0 and "PASS" in outcome.stdout, outcome.stderr
    assert "<testsuite" in (tmp_path / "empty.xml").read_text()
    assert (tmp_path / "g.md").read_text().startswith("### rooflint gate: PASS")
    outcome = gate("--update", "--current", "r.json", "--baseline", "b.json", cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    for _ in ("a new picture", "over the first"):
        outcome = rooflint("plot", "r.json", "-o", "p.svg", cwd=tmp_path)
        assert outcome.code == 0, outcome.stderr


@pytest.mark.parametrize("args, kind", [
    (["plot", "r.json", "-o", "picture.png"], "a picture rooflint drew"),
    (["plot", "r.json", "-o", "picture.svg"], "a picture rooflint drew"),
    (["calibrate", "--json", "r.json"], "a rooflint calibration"),
    (["calibrate", "--json", "picture.png"], "a rooflint calibration"),
    (["run", "stream", "--json", "notes.txt"], "a rooflint result"),
    (["run", "stream", "--json", "b.json"], "a rooflint result"),
    (["run", "stream", "--svg", "picture.png"], "a picture rooflint drew"),
    (["profile", "--json", "b.json", "--", "true"], "a rooflint result"),
])
def test_an_output_of_another_kind_is_refused_before_any_gpu_work(files, tmp_path, args,
                                                                  kind):
    """A PNG named picture.png that is really a text file, a result under a calibration's
    option: refused before the GPU (there is none here) or ncu is looked for."""
    (tmp_path / "picture.png").write_text("a text file with a picture's name\n")
    (tmp_path / "picture.svg").write_bytes(b"\x89PNG\r\n\x1a\n a PNG named .svg")
    before = snapshot(tmp_path)
    outcome = rooflint(*args, cwd=tmp_path, env=NO_GPU)
    assert_one_line_error(outcome, 2, f"exists and is not {kind}", "or add --force")
    assert_intact(before)


# --force (issue 51): a file rooflint did not write is replaced when asked, never otherwise
NOTES = "notes.txt"
FORCED = [
    (["show", "r.json", "--csv", NOTES], "family,variant,"),
    (["show", "r.json", "--markdown", NOTES], "| family | variant |"),
    (["show", "r.json", "--html", NOTES], "<!DOCTYPE html>"),
    (["explain", "--gpu", "h200", "--time", "1ms", "--flops", "1e9", "--bytes", "64MB",
      "--json", NOTES], "{"),
    (["compare", "r.json:tiled", "r.json:naive", "--json", NOTES], "{"),
    (["gate", "--current", "r.json", "--baseline", "b.json", "--markdown", NOTES],
     "### rooflint gate: PASS"),
    (["gate", "--current", "r.json", "--baseline", "b.json", "--junit", NOTES], "<?xml"),
    (["gate", "--update", "--current", "r.json", "--baseline", NOTES], "{"),
    (["plot", "r.json", "-o", "picture.png"], "\x89PNG"),
    (["report", "r.json", "-o", NOTES], "<!DOCTYPE html>"),
]


@pytest.mark.parametrize("args, written", FORCED, ids=[" ".join(a[:1] + a[-2:-1])
                                                       for a, _ in FORCED])
def test_force_replaces_a_file_rooflint_did_not_write(files, tmp_path, args, written):
    """Refused without --force, the refusal saying so (the file intact); replaced with it."""
    (tmp_path / "picture.png").write_text("a text file with a picture's name\n")
    target = tmp_path / args[-1]
    before = snapshot(tmp_path)
    refused = rooflint(*args, cwd=tmp_path, env=NO_STEP_SUMMARY)
    assert_one_line_error(refused, 2, "exists and is not", "or add --force to replace it")
    assert_intact(before)
    forced = rooflint(*args, "--force", cwd=tmp_path, env=NO_STEP_SUMMARY)
    assert forced.code == 0, forced.stderr
    assert target.read_bytes().decode("latin-1").startswith(written)


def test_force_replaces_a_runs_and_a_calibrations_file_too(monkeypatch, files, tmp_path):
    """run (its workers the recorded H200 run's) and calibrate (its steps the H200's)."""
    from recorded import RecordedPool, use_stand_in_pools
    from rooflint.commands import calibrate as calibrate_command
    from test_calibration import H200, SKIPPED, STEPS
    use_stand_in_pools(monkeypatch, lambda env=None: RecordedPool())
    monkeypatch.setattr(calibrate_command, "measure_ceilings",
                        lambda update: (H200, STEPS, SKIPPED))
    for args, schema in ((["run", "stream", "--counters", "off", "--json", NOTES], "result"),
                         (["calibrate", "--json", NOTES], "calibration")):
        (tmp_path / NOTES).write_text("not a baseline: my notes\n")
        refused = rooflint(*args, cwd=tmp_path)
        assert refused.code == 2 and "add --force" in refused.stderr, refused.stderr
        forced = rooflint(*args, "--force", cwd=tmp_path)
        assert forced.code == 0, forced.stderr
        assert json.loads((tmp_path / NOTES).read_text())["schema"].startswith(
            f"rooflint.{schema}/")


def test_force_passes_profiles_guard_to_its_next_check(files, tmp_path):
    """The guard is run's (check_outputs): with --force, profile goes on to look for ncu."""
    outcome = rooflint("profile", "--json", NOTES, "--force", "--", sys.executable, "-c", "pass",
                       cwd=tmp_path, env={"PATH": str(tmp_path)})
    assert outcome.code == 2 and "ncu" in outcome.stderr and "exists" not in outcome.stderr, \
        outcome.stderr
    assert (tmp_path / NOTES).read_text() == "not a baseline: my notes\n"


@pytest.mark.parametrize("args, env, fragment", [
    (["show", "r.json", "--csv", "r.json"], {}, "--csv r.json is RESULT r.json"),
    (["gate", "--current", "r.json", "--baseline", "b.json", "--junit", "b.json"], {},
     "--junit b.json is --baseline b.json"),
    (["gate", "--current", "r.json", "--baseline", "b.json"], {"GITHUB_STEP_SUMMARY": "r.svg"},
     "GITHUB_STEP_SUMMARY r.svg exists and is not a Markdown summary"),
])
def test_force_never_writes_over_an_input_nor_appends_to_another_kind(files, tmp_path, args,
                                                                      env, fragment):
    before = snapshot(tmp_path)
    outcome = rooflint(*args, "--force", cwd=tmp_path, env={**NO_STEP_SUMMARY, **env})
    assert_one_line_error(outcome, 2, fragment)
    assert_intact(before)


def test_an_option_taken_as_a_value_writes_no_file(files, tmp_path):
    """`--markdown --junit j.xml`: click gives --markdown the value "--junit"."""
    before = snapshot(tmp_path)
    outcome = gate("--current", "r.json", "--baseline", "b.json", "--markdown", "--junit",
                   "j.xml", cwd=tmp_path)
    assert_one_line_error(outcome, 2, "--markdown --junit", "missing its value")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)
    assert_intact(before)


def test_targets_with_current_are_refused_not_ignored(files, tmp_path):
    outcome = gate("--current", "r.json", "--baseline", "b.json", "nosuchfamily", "stream",
                   cwd=tmp_path)
    assert_one_line_error(outcome, 2, "--current r.json", "TARGET nosuchfamily stream",
                          "would be ignored")


def test_update_with_reports_is_refused_not_ignored(files, tmp_path):
    before = snapshot(tmp_path)
    outcome = gate("--update", "--current", "r.json", "--baseline", "b.json", "--junit",
                   "j.xml", cwd=tmp_path)
    assert_one_line_error(outcome, 2, "--update", "drop --junit")
    assert_intact(before)


@pytest.fixture
def read_only_directory(tmp_path):
    """A directory this process cannot create files in: a chmod 0o555 one, or, for root
    (who writes there anyway), /sys, which refuses new files even to root."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o555)
    yield Path("/sys") if os.access(directory, os.W_OK) else directory
    directory.chmod(0o755)


@pytest.mark.parametrize("where, fragment", [
    ("directory", "Is a directory"),
    ("/dev/full", "a device, not a file"),
    ("read-only", "Permission denied"),
])
def test_json_that_cannot_be_written_is_refused_before_measuring(tmp_path, read_only_directory,
                                                                 where, fragment):
    """No GPU here: the error is the path's, so it came before anything needed one."""
    path = {"directory": tmp_path, "/dev/full": Path("/dev/full"),
            "read-only": read_only_directory / "r.json"}[where]
    if where == "/dev/full" and not path.is_char_device():
        pytest.skip("no /dev/full")
    for command in (["run", "stream"], ["profile"]):
        tail = ["--", "true"] if command == ["profile"] else []
        outcome = rooflint(*command, "--json", str(path), *tail)
        assert_one_line_error(outcome, 2, f"cannot write {path}: {fragment}")
    assert not list(tmp_path.rglob(".*.tmp"))


def test_the_null_device_still_takes_a_result():
    """A device that takes bytes stays allowed: the run goes on to the GPU (absent)."""
    outcome = rooflint("run", "stream", "--json", os.devnull)
    assert "cannot write" not in outcome.stderr and outcome.code == 2, outcome.stderr


# --- the property: any committed example, given as both input and output, stays intact ---

EXAMPLES = sorted(p for p in (REPO / "examples").rglob("*")
                  if p.suffix in {".json", ".svg", ".png", ".txt", ".md", ".yml", ".html"}) + \
    [REPO / "specs" / "h200.yaml", REPO / "kernels" / "stream" / "kernel.yaml"]
runner = cli_runner()


def kind_of(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("schema")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_command_writes_over_a_committed_example_it_is_given(tmp_path, example):
    """Every command that reads a file, given it as its output too (a report, a table
    exported, a summary appended to), leaves it byte for byte; run, profile and
    calibrate (which read no such file) refuse an output that is not of their kind
    before looking for a GPU. In-process, so that ~60 files x 20 commands stay within
    seconds."""
    f = str(tmp_path / example.name)
    shutil.copy(example, f)
    base, result = str(tmp_path / "base.json"), str(tmp_path / "result.json")
    shutil.copy(BASELINE, base)
    shutil.copy(RESULT, result)
    commands = [
        (["plot", f, "-o", f], {}),
        (["gate", "--current", f, "--baseline", base, "--markdown", f], {}),
        (["gate", "--current", f, "--baseline", base, "--junit", f], {}),
        (["gate", "--current", f, "--baseline", base], {"GITHUB_STEP_SUMMARY": f}),
        (["gate", "--update", "--baseline", f, "--current", f], {}),
        (["gate", "--baseline", f, "--current", result, "--markdown", f], {}),
        (["gate", "--baseline", f, "--current", result, "--junit", f], {}),
        (["show", f, "--csv", f], {}),
        (["show", f, "--markdown", f], {}),
        (["show", f, "--html", f], {}),
        (["report", f, "-o", f], {}),
        (["report", result, f, "-o", f], {}),
        (["run", "stream", "--csv", f], {}),           # no example is a table of rooflint's
        (["profile", "--markdown", f, "--", "true"], {}),
    ]
    schema = kind_of(example)
    if schema != "rooflint.result/1":
        commands += [(["run", "stream", "--json", f], {}),
                     (["profile", "--json", f, "--", "true"], {})]
    if schema != "rooflint.calibration/1":
        commands.append((["calibrate", "--json", f], {}))
    before = snapshot(tmp_path)
    for args, env in commands:
        outcome = runner.invoke(app, args, env={**NO_GPU, **NO_STEP_SUMMARY, **env})
        assert outcome.exit_code == 2, (args, outcome.output)
        assert "rooflint: " in outcome.output and f in outcome.output, (args, outcome.output)
        assert_intact(before)


KEY = "0" * 64                      # a name the reference cache gives an entry


def laid_out_as_an_entry(directory: Path, example: Path) -> Path:
    """``directory`` holding ``example`` as an entry holds its first output, beside an
    entry.json: what the cache writes, so that only where it lies can protect it."""
    directory.mkdir(parents=True)
    shutil.copy(example, directory / "0.npy")
    (directory / "entry.json").write_text('{"outputs": []}')
    return directory


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: str(p.relative_to(REPO)))
def test_cache_clear_removes_no_committed_example_it_finds(tmp_path, example):
    """A user's files where the reference cache keeps its entries: in a directory named
    as an entry (without entry.json), in one named as a writer's temporary directory,
    behind a link named as an entry, and behind ``references`` itself being a link
    (issue 45: `cache clear` emptied the folder it led to). `cache clear` leaves every
    one byte for byte: it removes only what it wrote, and nothing through a link."""
    cache, elsewhere = tmp_path / "cache", tmp_path / "mine"
    references = cache / "references"
    (references / KEY).mkdir(parents=True)
    shutil.copy(example, references / KEY / example.name)
    (references / f".{KEY}.abc.tmp").mkdir()
    shutil.copy(example, references / f".{KEY}.abc.tmp" / example.name)
    (references / ("1" * 64)).symlink_to(laid_out_as_an_entry(elsewhere / "linked", example))
    linked_cache = tmp_path / "linked-cache"
    linked_cache.mkdir()
    (linked_cache / "references").symlink_to(elsewhere)
    laid_out_as_an_entry(elsewhere / ("2" * 64), example)
    before = snapshot(tmp_path)
    outcome = runner.invoke(app, ["cache", "clear"], env={"ROOFLINT_CACHE_DIR": str(cache)})
    assert outcome.exit_code == 0 and "outputs of 0 references" in outcome.output, \
        outcome.output
    outcome = runner.invoke(app, ["cache", "clear"],
                            env={"ROOFLINT_CACHE_DIR": str(linked_cache)})
    assert outcome.exit_code == 2 and "removes nothing through a link" in outcome.output, \
        outcome.output
    assert_intact(before)


# --- 2. thresholds say what they mean ------------------------------------------------------

def slower(tmp_path: Path, factor: float) -> Path:
    """RESULT with gemm_fp32/tiled ``factor`` times slower."""
    data = json.loads(RESULT.read_text())
    tiled = data["families"][2]["variants"][2]
    assert tiled["name"] == "tiled"
    tiled["samples_s"] = [x * factor for x in tiled["samples_s"]]
    path = tmp_path / "slower.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("command, option, value, suggestion", [
    ("gate", "--max-slowdown", "5", "5%"),
    ("gate", "--max-bytes-growth", "0.02", "2%"),
    ("gate", "--max-flops-growth", "10", "10%"),
    ("compare", "--max-slowdown", "5", "5%"),
])
def test_a_bare_number_is_not_a_threshold(tmp_path, command, option, value, suggestion):
    """`--max-slowdown 5` once meant 500 %: a kernel could get six times slower and pass."""
    current = slower(tmp_path, 5.0)
    sides = (["--current", str(current), "--baseline", str(BASELINE)] if command == "gate"
             else [f"{RESULT}:tiled", f"{current}:tiled"])
    outcome = rooflint(command, *sides, option, value, env=NO_STEP_SUMMARY)
    assert_one_line_error(outcome, 2, f"{option} is '{value}', a bare number",
                          f"write the threshold as a percentage, e.g. {suggestion}")


@pytest.mark.parametrize("threshold, code", [("5%", 1), ("60%", 0)])
def test_a_percentage_is_read_as_written(tmp_path, threshold, code):
    outcome = gate("--current", str(slower(tmp_path, 1.5)), "--baseline", str(BASELINE),
                   "--max-slowdown", threshold)
    assert outcome.code == code, outcome.stdout + outcome.stderr




def family(tmp_path: Path, gate_line: str = "", variant: str = "v1", launches: str = "launches"
           ) -> Path:
    """edges.family's toy, with a manifest gate line, another variant name, or another
    key where its launches are."""
    text = (TOY.replace("tolerance: 1e-6\n", f"tolerance: 1e-6\n{gate_line}\n")
            .replace("  v1:", f"  {variant}:").replace("    launches:", f"    {launches}:"))
    return edges.family(tmp_path, text)


@pytest.mark.parametrize("gate_line, fragments", [
    ("gate: {max_slowdown: 5}", ["'gate.max_slowdown' is 5, a bare number", "e.g. 5%"]),
    ("gate: {max_bytes_growth: 0.1}", ["'gate.max_bytes_growth' is 0.1", "e.g. 10%"]),
    ("gate: {max_flops_growth: -2%}", ["'gate.max_flops_growth' is '-2%'", "zero or more"]),
])
def test_manifest_thresholds_are_percentages_too(tmp_path, gate_line, fragments):
    directory = family(tmp_path, gate_line)
    with pytest.raises(RooflintError) as error:
        load_manifest(directory)
    assert all(f in str(error.value) for f in fragments), str(error.value)


def test_a_manifest_percentage_is_read_as_written(tmp_path):
    manifest = load_manifest(family(tmp_path, "gate: {max_slowdown: 10%, max_bytes_growth: 0%}"))
    assert manifest.variants[0].gate == {"max_slowdown": pytest.approx(0.10),
                                         "max_bytes_growth": 0.0}


# --- 3. names are escaped for the terminal -------------------------------------------------

def test_printable_escapes_controls_and_keeps_unicode():
    assert printable(f"tiled{EVIL}") == "tiled\\x1b]0;title\\x07\\x1b[2J"
    assert printable("a\x9bb\x7fc\nd\te\ud800") == "a\\x9bb\\x7fc\\nd\\te\\ud800"
    assert printable("gemm_fp32 → 2.1× Größe 行") == "gemm_fp32 → 2.1× Größe 行"
    nested = printable_fields({"k\x1b": [("v\x07", 1.5)]})
    assert nested == {"k\\x1b": [("v\\x07", 1.5)]}


@pytest.fixture
def evil(tmp_path) -> dict[str, Path]:
    """A result whose GPU, family and variant names carry EVIL, and its own baseline."""
    data = json.loads(RESULT.read_text())
    data["gpu"]["name"] += EVIL
    for f in data["families"]:
        f["name"] += EVIL
        for v in f["variants"]:
            v["name"] += EVIL
    result = tmp_path / "evil.json"
    result.write_text(json.dumps(data))
    baseline = tmp_path / "evil-baseline.json"
    assert gate("--update", "--current", str(result), "--baseline", str(baseline)).code == 0
    return {"result": result, "baseline": baseline}


def assert_shown_escaped(outcome, *outputs: str) -> None:
    for text in (outcome.stdout, outcome.stderr, *outputs):
        assert not any(c in text for c in RAW), text[:2000]
    assert "\\x1b]0;title\\x07" in outcome.stdout + outcome.stderr + "".join(outputs)


def test_show_escapes_names(evil):
    outcome = rooflint("show", str(evil["result"]))
    assert outcome.code == 0, outcome.stderr
    assert_shown_escaped(outcome)


def test_compare_escapes_names(evil):
    tiled = f"tiled{EVIL}"
    outcome = rooflint("compare", f"{evil['result']}:{tiled}", f"{evil['result']}:cublas{EVIL}")
    assert outcome.code == 0, outcome.stderr
    assert_shown_escaped(outcome)


@pytest.mark.parametrize("args", [
    lambda evil: ["compare", f"{RESULT}:tiled", f"{evil['result']}:tiled{EVIL}"],  # GPUs differ
    lambda evil: ["gate", "--current", str(evil["result"]), "--baseline", str(BASELINE)],
    lambda evil: ["show", str(evil["result"]), "nosuch"],
])
def test_errors_escape_names(evil, args):
    outcome = rooflint(*args(evil), env=NO_STEP_SUMMARY)
    assert_one_line_error(outcome, 2)
    assert_shown_escaped(outcome)


def test_gate_escapes_names_on_screen_and_in_its_reports(evil, tmp_path):
    markdown, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    outcome = gate("--current", str(evil["result"]), "--baseline", str(evil["baseline"]),
                   "--markdown", str(markdown), "--junit", str(junit))
    assert outcome.code == 0, outcome.stderr
    assert_shown_escaped(outcome, markdown.read_text(), junit.read_text())
    names = {case.get("name") for case in ET.parse(junit).getroot()}   # valid XML 1.0
    assert f"tiled{printable(EVIL)}" in names


def test_run_errors_escape_a_manifest_name(tmp_path):
    """A variant whose name carries EVIL (and a misspelt key): the name is refused first,
    before the GPU, and shown escaped."""
    variant = '"v1\\e]0;title\\a\\e[2J"'                          # YAML's spelling of EVIL
    directory = family(tmp_path, variant=variant, launches="lanuches")
    outcome = rooflint("run", str(directory))
    assert_one_line_error(outcome, 2, "'variants.v1\\x1b]0;title\\x07\\x1b[2J' is",
                          "a name is one word")
    assert_shown_escaped(outcome)


def test_the_picture_draws_names_as_written(evil, tmp_path):
    """Printable in the SVG (valid XML), and a $ pair is not read as mathematics."""
    data = json.loads(evil["result"].read_text())
    data["families"][2]["variants"][2]["name"] = "tiled $\\frac$"
    path = tmp_path / "dollars.json"
    path.write_text(json.dumps(data))
    picture = tmp_path / "p.svg"
    outcome = rooflint("plot", str(path), "-o", str(picture))
    assert outcome.code == 0, outcome.stderr
    svg = picture.read_text()
    assert_shown_escaped(outcome, svg)
    texts = "".join(ET.parse(picture).getroot().itertext())
    assert "tiled $\\frac$" in texts and f"blocked_2d{printable(EVIL)}" in texts


# --- 4. clearer messages -------------------------------------------------------------------

@pytest.mark.parametrize("text, suggestion", [
    ("h10", "did you mean h100-pcie or h100-sxm?"),
    ("H10", "did you mean h100-pcie or h100-sxm?"),
    ("hopper", "did you mean h100-pcie or h100-sxm or h20 or h200?"),
    ("blackwell", "did you mean b200 or gb200 or rtx5090?"),
    ("a100-sxm-40", "did you mean a100-sxm-40gb?"),
    ("h2", "did you mean h20 or h200?"),
])
def test_specs_suggests_the_ids_meant(text, suggestion):
    """Names that are no id, device name or family name (h100 is one: test_specs.py)."""
    outcome = rooflint("specs", text)
    assert_one_line_error(outcome, 2, f"unknown GPU {text!r}", suggestion, "known: ")


@pytest.mark.parametrize("args, option, shown", [
    (["python", "-c", "print(1)"], "-c", "rooflint profile -- python -c 'print(1)'"),
    (["--top", "3", "python", "train.py", "--steps", "20"], "--steps",
     "rooflint profile --top 3 -- python train.py --steps 20"),
])
def test_profile_without_the_separator_says_where_it_goes(args, option, shown):
    outcome = rooflint("profile", *args)
    assert_one_line_error(outcome, 2, f"no such option {option}", "put -- before the program",
                          shown)


def test_a_misspelt_profile_option_is_still_called_one():
    outcome = rooflint("profile", "--topp", "3", "--", "python", "x.py")
    assert outcome.code == 2 and "no such option: --topp" in outcome.stderr
    assert "put --" not in outcome.stderr


@pytest.mark.parametrize("args", [
    ["compare", f"{RESULT}:tiled", f"{RESULT}:cublas", "--gpu", "nosuch"],
    ["calibrate", "--gpu", "nosuch"],
])
def test_an_unknown_gpu_is_refused_not_ignored(args):
    outcome = rooflint(*args)
    assert_one_line_error(outcome, 2, "unknown GPU 'nosuch'")


def test_a_named_pipe_no_one_reads_is_one_line_not_a_wait(tmp_path):
    """Writing opens a FIFO without blocking: with no reader it is refused at once."""
    fifo = tmp_path / "baseline.json"
    os.mkfifo(fifo)
    outcome = rooflint("gate", "--update", "--baseline", str(fifo), "--current",
                       str(REPO / "examples" / "h200-bundled.json"), timeout=60)
    assert_one_line_error(outcome, 2, str(fifo), "named pipe (FIFO) that no process reads")


@pytest.mark.parametrize("log, content, model, fragment", [
    ("pass2-counters.csv", "my notes\n", False, "is not a log of rooflint profile"),
    ("pass1-trace.json", None, True, "does not write over a file it reads"),
])
def test_profile_logs_replace_only_earlier_logs_and_never_the_model(tmp_path, log, content,
                                                                     model, fragment):
    """--logs DIR gets pass1-trace.json, pass1-durations.csv and pass2-counters.csv: a
    file of the user's there, or the --model it reads, is refused before any program runs."""
    logs = tmp_path / "logs"
    logs.mkdir()
    target = logs / log
    target.write_text(content if content is not None else
                      (REPO / "examples" / "apps" / "transformer_block.models.yaml").read_text())
    before = snapshot(target)
    args = ["profile", "--logs", str(logs), *(["--model", str(target)] if model else []),
            "--", "/bin/true"]
    assert_one_line_error(rooflint(*args), 2, "--logs", fragment)
    assert_intact(before)
