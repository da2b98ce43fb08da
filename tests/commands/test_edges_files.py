"""Bad input at the files rooflint reads and writes: results, baselines, calibrations and
the gate's reports (issue 10). Each case runs the real command on the recorded H200 run.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from edges import NO_GPU, REPO, Outcome, assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.formats import baseline as baselines, results
from rooflint.formats import calibration as calibrations
from rooflint.common.errors import RooflintError
from rooflint.formats.jsonfile import write_atomic

RESULT = REPO / "tests" / "fixtures" / "results" / "h200-bundled.json"
# made from RESULT
BASELINE = REPO / "tests" / "fixtures" / "baselines" / "h200-bundled-baseline.json"
CALIBRATION = REPO / "examples" / "h200-calibration.json"
READERS = {results.SCHEMA: results.read_result, baselines.SCHEMA: baselines.read,
           calibrations.SCHEMA: calibrations.load}
# figures the README quotes, no schema
NOT_DOCUMENTS = {"h100-gate-honesty.json", "h200-gate-honesty.json"}
NO_STEP_SUMMARY = {"GITHUB_STEP_SUMMARY": ""}   # a gate test run in CI leaves CI's summary alone
COMMITTED = sorted(p for p in [*REPO.glob("examples/**/*.json"),
                                *REPO.glob("tests/fixtures/**/*.json")]
                   if "trace" not in p.relative_to(REPO).parts)   # PyTorch's, not rooflint's


def edited(source: Path, target: Path, edit) -> Path:
    """``source``'s JSON with ``edit(data)`` applied, written to ``target``."""
    data = json.loads(source.read_text())
    edit(data)
    target.write_text(json.dumps(data))
    return target


def variant(data: dict, family: int, index: int) -> dict:
    return data["families"][family]["variants"][index]


# --- reading: every field declared and checked ------------------------------------------

@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_committed_document_loads_whole(path):
    data = json.loads(path.read_text())
    if path.name in NOT_DOCUMENTS:
        assert "schema" not in data
        return
    document = asdict(READERS[data["schema"]](path))
    assert carried(data, document)     # nothing dropped, nothing changed on the way in


def carried(data, document) -> bool:
    """Every key and value of the file is in the document as read (which may add the
    defaults of fields newer than the file)."""
    if isinstance(data, dict):
        return all(k in document and carried(v, document[k]) for k, v in data.items())
    if isinstance(data, list):
        return len(data) == len(document) and all(map(carried, data, document))
    return data == document and type(data) is type(document)


def _set(keys, value):
    def edit(data):
        *walk, last = keys
        for key in walk:
            data = data[key]
        data[last] = value
    return edit


def _delete(keys):
    def edit(data):
        *walk, last = keys
        for key in walk:
            data = data[key]
        del data[last]
    return edit


V2 = ["families", 0, "variants", 2]       # causes / math_pipe_bound: counters, a cause, a move


@pytest.mark.parametrize("edit, fragment", [
    (_set([*V2, "time", "median_s"], "fast"),
     "field 'families[0].variants[2].time.median_s' is a string, expected a number"),
    (_delete([*V2, "point"]), "field 'families[0].variants[2].point' is missing"),
    (_set(["gpu"], "NVIDIA H200"), "field 'gpu' is a string, expected a mapping"),
    (_delete(["gpu", "driver"]), "field 'gpu.driver' is missing"),
    (_set(["families"], {}), "field 'families' is a mapping, expected a list"),
    (_set([*V2, "time"], [1e-3]), "field 'families[0].variants[2].time' is a list, "
                                  "expected a mapping or null"),
    (_set([*V2, "samples_s", 1], None), "field 'families[0].variants[2].samples_s[1]' is null"),
    (_set([*V2, "counters", "registers_per_thread"], 32.5),
     "'families[0].variants[2].counters.registers_per_thread' is a number, expected an integer"),
    (_set([*V2, "baseline"], 0), "'families[0].variants[2].baseline' is an integer, "
                                 "expected true or false"),
    (_delete([*V2, "verdict", "moves", 0, "action"]),
     "'families[0].variants[2].verdict.moves[0].action' is missing"),
    (_set([*V2, "verdict", "causes", 0], "slow"),
     "'families[0].variants[2].verdict.causes[0]' is a string, expected a mapping"),
    (_set([*V2, "flops", "model"], "1G"), "'families[0].variants[2].flops.model' is a string"),
    (_set([*V2, "roofs", "compute"], True),
     "'families[0].variants[2].roofs.compute' is true/false, expected a number"),
    (_set(["families", 2, "variants"], [None]), "field 'families[2].variants[0]' is null"),
])
def test_a_wrong_result_field_is_named(tmp_path, edit, fragment):
    bad = edited(RESULT, tmp_path / "bad.json", edit)
    before = snapshot(tmp_path)
    outcome = rooflint("gate", "--current", str(bad), "--baseline", str(BASELINE))
    assert_one_line_error(outcome, 2, str(bad), fragment)
    assert_intact(before)


def test_unknown_result_keys_are_ignored(tmp_path):
    """A file from a newer rooflint, with fields this one does not know, still reads."""
    def newer(data):
        data["provenance"] = {"host": "gpu-07"}
        variant(data, 0, 2)["energy_j"] = 0.5
        variant(data, 0, 2)["time"]["p99_s"] = 1e-3
    current = edited(RESULT, tmp_path / "newer.json", newer)
    outcome = rooflint("gate", "--current", str(current), "--baseline", str(BASELINE),
                       env=NO_STEP_SUMMARY)
    assert outcome.code == 0 and "PASS: 34 pass" in outcome.stdout, outcome.stderr


def test_a_result_missing_fields_added_later_still_reads(tmp_path):
    """Fields with a default (the manifest's gate thresholds, the XU pipe reading) came later;
    files written before them read with the default."""
    def older(data):
        for f in data["families"]:
            for v in f["variants"]:
                del v["gate"], v["counters"]["xu_pipe_pct"]
    read = results.read_result(edited(RESULT, tmp_path / "older.json", older))
    assert all(v.gate == {} and v.counters.xu_pipe_pct == 0.0
               for f in read.families for v in f.variants)


@pytest.mark.parametrize("edit, fragment", [
    (_delete(["entries", 3, "samples_s"]), "field 'entries[3].samples_s' is missing"),
    (_set(["entries", 0, "registers"], "32"), "field 'entries[0].registers' is a string, "
                                              "expected an integer or null"),
    (_set(["entries"], None), "field 'entries' is null, expected a list"),
    (_set(["sm_clock_mhz"], "1980 MHz"), "field 'sm_clock_mhz' is a string, expected a number"),
])
def test_a_wrong_baseline_entry_is_named(tmp_path, edit, fragment):
    bad = edited(BASELINE, tmp_path / "baseline.json", edit)
    before = snapshot(tmp_path)
    outcome = rooflint("gate", "--current", str(RESULT), "--baseline", str(bad))
    assert_one_line_error(outcome, 2, str(bad), fragment)
    assert_intact(before)


@pytest.mark.parametrize("content", [b"", b"\xff\xfe binary", b"[[[[" * 100_000, b"[]"],
                         ids=["empty", "binary", "deep", "list"])
def test_an_unreadable_document_is_one_line(tmp_path, content):
    bad = tmp_path / "result.json"
    bad.write_bytes(content)
    outcome = rooflint("gate", "--current", str(bad), "--baseline", str(BASELINE))
    assert_one_line_error(outcome, 2, str(bad))


# --- the calibration cache --------------------------------------------------------------

EXPLAIN = ("explain", "--gpu", "h200", "--time", "1ms", "--flops", "1G", "--bytes", "1GB")


def cached_calibration(cache: Path) -> Path:
    path = cache / "calibration" / "h200-driver-580.159.04.json"
    path.parent.mkdir(parents=True)
    shutil.copy(CALIBRATION, path)
    return path


@pytest.mark.parametrize("damage, fragment", [
    pytest.param(lambda p: p.write_bytes(p.read_bytes()[:1000]), "not JSON", id="cut short"),
    pytest.param(lambda p: p.write_bytes(b"\0" * 4096), "not JSON", id="zeros after a crash"),
    (lambda p: edited(p, p, _set(["dram", "value"], "3.9 TB/s")), "field 'dram.value' is a string"),
    (lambda p: edited(p, p, _delete(["compute"])), "field 'compute' is missing"),
    (lambda p: edited(p, p, _set(["compute", "fp32", "value"], 0)),
     "field 'compute.fp32.value' is 0, expected a positive number"),
])
def test_a_damaged_cached_calibration_says_how_to_replace_it(tmp_path, damage, fragment):
    cache = tmp_path / "cache"
    path = cached_calibration(cache)
    damage(path)
    before = snapshot(cache)
    outcome = rooflint(*EXPLAIN, env={"ROOFLINT_CACHE_DIR": str(cache)})
    assert_one_line_error(outcome, 2, str(path), fragment, "rooflint calibrate", "--datasheet")
    assert_intact(before)


def test_the_cached_calibration_is_used_and_datasheet_passes_a_damaged_one(tmp_path):
    cache = tmp_path / "cache"
    path = cached_calibration(cache)
    env = {"ROOFLINT_CACHE_DIR": str(cache)}
    created = json.loads(CALIBRATION.read_text())["created"][:10]
    assert f"DRAM calibrated {created}" in rooflint(*EXPLAIN, env=env).stdout
    path.write_text("{")
    outcome = rooflint(*EXPLAIN, "--datasheet", env=env)
    assert outcome.code == 0 and "roofs (datasheet)" in outcome.stdout, outcome.stderr


def test_the_cache_directory_is_created_but_a_named_one_is_not(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path / "new" / "cache"))
    calibration = calibrations.load(CALIBRATION)
    cached = calibrations.default_path(calibration.spec_id, calibration.gpu.driver)
    calibrations.save(calibration, cached)
    assert calibrations.find("h200") == calibration
    named = tmp_path / "typo" / "h200.json"
    with pytest.raises(RooflintError, match=f"cannot write {named}: no directory {named.parent}$"):
        calibrations.save(calibration, named)
    assert not named.parent.exists()


# --- writing: normal permissions, one line on failure, nothing lost or left behind ------

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)], ids=oct)
def test_written_files_honour_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_atomic({"schema": "x"}, tmp_path / "doc.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "doc.json").stat().st_mode) == mode


@pytest.fixture
def read_only_directory(tmp_path):
    """A directory this process cannot create files in: a chmod 0o555 one holding a
    baseline, or, for root (who writes there anyway), /sys, which refuses new files even
    to root."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    shutil.copy(BASELINE, directory / "baseline.json")
    directory.chmod(0o555)
    yield Path("/sys") if os.access(directory, os.W_OK) else directory
    directory.chmod(0o755)


def test_update_onto_a_read_only_directory(tmp_path, read_only_directory):
    target = read_only_directory / "baseline.json"
    before = snapshot(tmp_path)
    outcome = rooflint("gate", "--update", "--current", str(RESULT), "--baseline", str(target))
    assert_one_line_error(outcome, 2, f"cannot write {target}: Permission denied")
    assert_intact(before)
    assert not list(tmp_path.rglob(".*.tmp"))


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="no /dev/full")
def test_update_onto_dev_full(tmp_path):
    """A device is written in place (renaming over it would replace it with a regular
    file); /dev/full refuses every byte with ENOSPC. Reached through a link, so that a
    regression replaces the link, not the machine's /dev/full."""
    target = tmp_path / "baseline.json"
    target.symlink_to("/dev/full")
    outcome = rooflint("gate", "--update", "--current", str(RESULT), "--baseline", str(target))
    assert_one_line_error(outcome, 2, f"cannot write {target}: No space left on device")
    assert target.is_symlink() and target.is_char_device()
    assert sorted(tmp_path.iterdir()) == [target]         # no .tmp left behind


def limited(*args: str, file_size: int) -> Outcome:
    """``rooflint ARGS`` unable to write a file past ``file_size`` bytes (RLIMIT_FSIZE):
    a full disk, as seen by the writer, without root or a small filesystem."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    done = subprocess.run([sys.executable, "-m", "rooflint", *args], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, **NO_GPU}, preexec_fn=limit)
    return Outcome(done.returncode, done.stdout, done.stderr)


def test_update_onto_a_full_disk_keeps_the_old_baseline(tmp_path):
    target = tmp_path / "baseline.json"
    shutil.copy(BASELINE, target)
    before = snapshot(tmp_path)
    outcome = limited("gate", "--update", "--current", str(RESULT), "--baseline", str(target),
                      file_size=4096)
    assert_one_line_error(outcome, 2, f"cannot write {target}: File too large")
    assert_intact(before)
    assert sorted(tmp_path.iterdir()) == [target]         # no .tmp left behind


def test_update_into_a_missing_directory(tmp_path):
    target = tmp_path / "kernels" / "baseline.json"
    outcome = rooflint("gate", "--update", "--current", str(RESULT), "--baseline", str(target))
    assert_one_line_error(outcome, 2, f"cannot write {target}: no directory {target.parent}")
    assert not target.parent.exists()


# --- the gate's reports: the verdict first, its exit code kept --------------------------

def slower(tmp_path: Path) -> Path:
    """The recorded run with gemm_fp32/tiled 50 % slower: a gate that fails."""
    def slow(data):
        tiled = variant(data, 2, 2)
        assert tiled["name"] == "tiled"
        tiled["samples_s"] = [x * 1.5 for x in tiled["samples_s"]]
    return edited(RESULT, tmp_path / "slower.json", slow)


@pytest.mark.parametrize("fails, code, verdict", [(False, 2, "PASS: 34 pass"),
                                                  (True, 1, "FAIL: 33 pass, 1 regressed")])
@pytest.mark.parametrize("report", ["--junit", "--markdown", "GITHUB_STEP_SUMMARY"])
def test_an_unwritable_report_keeps_the_verdict(tmp_path, report, fails, code, verdict):
    current = slower(tmp_path) if fails else RESULT
    missing = tmp_path / "reports" / "gate.out"
    other = tmp_path / "gate.xml"           # a report that can be written still is
    args = ["--junit", str(other)] if report != "--junit" else ["--markdown", str(other)]
    if report == "GITHUB_STEP_SUMMARY":
        env = {"GITHUB_STEP_SUMMARY": str(missing)}
    else:
        env, args = NO_STEP_SUMMARY, [*args, report, str(missing)]
    outcome = rooflint("gate", "--current", str(current), "--baseline", str(BASELINE), *args,
                       env=env)
    said = [line for line in outcome.stderr.splitlines() if line.startswith("rooflint: ")]
    assert outcome.code == code and "Traceback" not in outcome.stderr, outcome.stderr
    assert said == [f"rooflint: cannot write {missing}: no directory {missing.parent}"]
    assert verdict in outcome.stdout
    assert ("regressed" in other.read_text()) == fails
    assert f"written to {other}" in outcome.stderr           # and is said to be


def test_a_step_summary_that_is_a_directory(tmp_path):
    outcome = rooflint("gate", "--current", str(RESULT), "--baseline", str(BASELINE),
                       env={"GITHUB_STEP_SUMMARY": str(tmp_path)})
    assert_one_line_error(outcome, 2, f"cannot write {tmp_path}: Is a directory")
    assert "PASS: 34 pass" in outcome.stdout
