"""Documents are checked for sense, not only type; a gate never passes on data it could not
judge; reads are bounded and refuse what is not a file; any two measured variants compare
(issue 22, part B). Inputs are the committed examples, edited in tmp_path.
"""

from __future__ import annotations

import io
import itertools
import random
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from edges import cli_runner

from edges import REPO, assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.formats import baseline as baselines, yamlfile
from rooflint.formats import calibration as calibrations
from rooflint.judge import comparison
from rooflint.commands.cli import app
from rooflint.common.errors import RooflintError
from rooflint.formats.gpus import load_spec
from rooflint.formats.jsonfile import MAX_DOCUMENT_BYTES, read_limited
from rooflint.output.tables import render_comparison
from rooflint.formats.results import read_result

RESULT = REPO / "examples" / "h200-bundled.json"
RESULTS = [RESULT, REPO / "examples" / "h100-bundled.json"]
CALIBRATIONS = {"h200": REPO / "examples" / "h200-calibration.json",
                "h100-sxm": REPO / "examples" / "h100-calibration.json"}
NO_STEP_SUMMARY = {"GITHUB_STEP_SUMMARY": ""}


def edited(source: Path, target: Path, edit) -> Path:
    """``source``'s JSON with ``edit(data)`` applied, written to ``target`` as Python's json
    module writes it (NaN and Infinity spelt so)."""
    data = json.loads(source.read_text())
    edit(data)
    target.write_text(json.dumps(data))
    return target


def variant_at(data: dict, family: str, name: str) -> tuple[int, int]:
    """(family index, variant index) of ``family``/``name`` in a result's data."""
    for i, f in enumerate(data["families"]):
        for j, v in enumerate(f["variants"]):
            if (f["name"], v["name"]) == (family, name):
                return i, j
    raise KeyError(name)


TILED = variant_at(json.loads(RESULT.read_text()), "gemm_fp32", "tiled")
HERE = f"families[{TILED[0]}].variants[{TILED[1]}]"


def in_tiled(*keys, value):
    """An edit setting ``keys`` inside gemm_fp32/tiled's variant to ``value``."""
    def edit(data):
        node = data["families"][TILED[0]]["variants"][TILED[1]]
        *walk, last = keys
        for key in walk:
            node = node[key]
        node[last] = value(node[last]) if callable(value) else value
    return edit


def at_top(key, value):
    """An edit setting ``key`` (a tuple of keys for a nested one) of a document."""
    def edit(data):
        *walk, last = key if isinstance(key, tuple) else (key,)
        node = data
        for k in walk:
            node = node[k]
        node[last] = value
    return edit


@pytest.fixture
def own_baseline(tmp_path) -> Path:
    """The baseline `gate --update --current RESULT` makes: RESULT passes against it."""
    path = tmp_path / "baseline.json"
    baselines.write(baselines.from_result(read_result(RESULT)), path)
    return path


# --- 1. sense checks at read time, one line naming the file and the field ---------------

NAN, INF = float("nan"), float("inf")
NONSENSE = [
    # the "nan ns ±nan%", "-0.00x slower", "regressed -909190.9%" with exit 0
    (in_tiled("time", "median_s", value=NAN), f"{HERE}.time.median_s' is NaN, expected a "
                                              f"finite number"),
    (in_tiled("time", "median_s", value=0), f"{HERE}.time.median_s' is 0, expected a time "
                                            f"from 1e-12 to 1e6 seconds"),
    (in_tiled("time", "q3_s", value=1e308), f"{HERE}.time.q3_s' is 1e+308, expected a time"),
    (in_tiled("time", "median_s", value=-1.1e-4), f"{HERE}.time.median_s' is -0.00011"),
    (in_tiled("samples_s", value=lambda s: [-x for x in s]), f"{HERE}.samples_s[0]' is -"),
    (in_tiled("samples_s", 3, value=INF), f"{HERE}.samples_s[3]' is Infinity"),
    (in_tiled("samples_s", value=lambda s: [0] * len(s)), f"{HERE}.samples_s[0]' is 0"),
    (in_tiled("time", "q1_s", value=1.0), f"{HERE}.time' is out of order"),
    (in_tiled("flops", "model", value=-1), f"{HERE}.flops.model' is -1, expected a number from "
                                           f"0 to 1e30"),
    (in_tiled("dram_bytes", "ncu", value=1e308), f"{HERE}.dram_bytes.ncu' is 1e+308"),
    (in_tiled("point", "dram_bytes", value=NAN), f"{HERE}.point.dram_bytes' is NaN"),
    (in_tiled("point", "observed_ai", value=-INF), f"{HERE}.point.observed_ai' is -Infinity"),
    (in_tiled("counters", "registers_per_thread", value=-32),
     f"{HERE}.counters.registers_per_thread' is -32"),
    (in_tiled("roofs", "compute", value=0), f"{HERE}.roofs.compute' is 0"),
    (at_top(("gpu", "sms"), 0), "'gpu.sms' is 0, expected a positive number"),
    (at_top(("gpu", "l2_bytes"), -1), "'gpu.l2_bytes' is -1, expected a number from 0 to "
                                        "1e30"),  # 0: unknown (pass 2 stopped)
    # words rooflint does not know: a KeyError at print time before
    (in_tiled("precision", value="fp128"), f"{HERE}.precision' is 'fp128', expected one of "
                                           f"fp64, fp64-tensor, fp32"),
    (in_tiled("status", value="passed"), f"{HERE}.status' is 'passed', expected one of ok, "
                                         f"fail, error, skipped"),
    (in_tiled("verdict", "bound", value="memory"), f"{HERE}.verdict.bound' is 'memory', "
                                                   f"expected one of bandwidth, compute, chain"),
    (in_tiled("point", "limiting_roof", value="l2"), f"{HERE}.point.limiting_roof' is 'l2'"),
    # a point whose rates are not its counts over its time (a ZeroDivisionError in compare)
    (in_tiled("point", "achieved_bandwidth", value=0), f"{HERE}.point' has achieved_bandwidth "
                                                      f"0, but its counts and time give "),
    (at_top("spec_id", "../../../etc/passwd"), "'spec_id' is '../../../etc/passwd', expected "
                                               "a plain id"),
    # an ok that contradicts its own checks or has nothing to judge
    (in_tiled("checks", 0, "rel_l2", value=NAN), f"{HERE}' is ok, but its output 'C' failed "
                                                 f"its check (relative error NaN"),
    (in_tiled("samples_s", value=[]), f"{HERE}' is ok, but has no timing samples"),
]


@pytest.mark.parametrize("edit, fragment", NONSENSE)
def test_a_result_that_makes_no_sense_is_named(tmp_path, edit, fragment):
    bad = edited(RESULT, tmp_path / "result.json", edit)
    with pytest.raises(RooflintError) as refused:
        read_result(bad)
    assert str(refused.value).startswith(f"{bad}: field '") and fragment in str(refused.value)


@pytest.mark.parametrize("command", [
    lambda bad: ["show", str(bad)],
    lambda bad: ["compare", f"{bad}:tiled", f"{RESULT}:blocked_2d"],
    lambda bad: ["compare", f"{RESULT}:blocked_2d", f"{bad}:tiled"],
    lambda bad: ["plot", str(bad), "-o", str(bad.with_suffix(".svg"))],
], ids=["show", "compare A", "compare B", "plot"])
@pytest.mark.parametrize("edit, fragment", [
    pytest.param(*case, id=name) for name, case in zip(["NaN median", "zero median", "huge q3"],
                                                       NONSENSE)])
def test_every_reader_refuses_nonsense_in_one_line(tmp_path, command, edit, fragment):
    """The issue's cases, as a user meets them: "nan ns ±nan%", exit 0, before."""
    bad = edited(RESULT, tmp_path / "result.json", edit)
    before = snapshot(tmp_path)
    outcome = rooflint(*command(bad))
    assert_one_line_error(outcome, 2, f"{bad}: field '", fragment)
    assert_intact(before)


PROFILE = REPO / "examples" / "profile" / "h200-profile-eager.json"


@pytest.mark.parametrize("edit, fragment", [
    (at_top(("settings", "kernels"), NAN), "field 'settings.kernels' is NaN"),   # "nan kernels"
    (at_top(("settings", "other_share"), INF), "field 'settings.other_share' is Infinity"),
    (lambda d: d["families"][0]["variants"][0]["share"].update(best_fraction=None),
     "field 'families[0].variants[0].share' has an upside_s but no best_fraction"),  # TypeError
    (lambda d: d["families"][0]["variants"][0]["share"].update(total_s=0),
     "field 'families[0].variants[0].share.total_s' is 0"),
])
def test_a_profile_that_makes_no_sense_is_one_line(tmp_path, edit, fragment):
    bad = edited(PROFILE, tmp_path / "profile.json", edit)
    assert_one_line_error(rooflint("show", str(bad)), 2, f"{bad}: {fragment}")


def test_the_sense_of_every_committed_document_holds():
    """The control: every committed result, baseline and calibration reads."""
    readers = {"rooflint.result/1": read_result, baselines.SCHEMA: baselines.read,
               calibrations.SCHEMA: calibrations.load}
    documents = [p for p in sorted(REPO.glob("examples/**/*.json"))
                 if json.loads(p.read_text()).get("schema") in readers]
    assert len(documents) >= 15
    for path in documents:
        readers[json.loads(path.read_text())["schema"]](path)


def test_an_infinite_intensity_is_what_a_kernel_without_dram_bytes_has(tmp_path):
    """roofline.place writes Infinity for the intensity of a kernel that moved no DRAM
    bytes, and the reader takes it back."""
    def no_dram_bytes(data):
        point = data["families"][TILED[0]]["variants"][TILED[1]]["point"]
        point.update(dram_bytes=0, achieved_bandwidth=0, observed_ai=INF)
    path = edited(RESULT, tmp_path / "result.json", no_dram_bytes)
    assert "Infinity" in path.read_text()
    variant = read_result(path).families[TILED[0]].variants[TILED[1]]
    assert variant.point.observed_ai == INF


# --- 2. a gate never passes on what it could not judge ---------------------------------

def entries(edit):
    def apply(data):
        edit(data["entries"])
    return apply


@pytest.mark.parametrize("edit, fragment", [
    (entries(lambda e: e[0].update(samples_s=[0.0] * len(e[0]["samples_s"]))),
     "field 'entries[0].samples_s[0]' is 0.0, expected a time from 1e-12 to 1e6 seconds"),
    (entries(lambda e: e[0]["samples_s"].__setitem__(1, NAN)),
     "field 'entries[0].samples_s[1]' is NaN"),
    (entries(lambda e: e.clear()), "field 'entries' is empty: a baseline with no variants "
                                   "judges nothing (make one with `rooflint gate --update`)"),
    (entries(lambda e: e.append(dict(e[5]))), "field 'entries' has "),
    (entries(lambda e: e[2].update(status="timeout")), "field 'entries[2].status' is 'timeout'"),
    (entries(lambda e: e[2].update(samples_s=[])), "field 'entries[2]' is ok, but has no "
                                                   "timing samples"),
    (entries(lambda e: e[2].update(bound="latency")), "field 'entries[2].bound' is 'latency'"),
    (at_top("spec_id", "h200/../../x"), "field 'spec_id' is 'h200/../../x'"),
])
def test_a_baseline_the_gate_cannot_judge_by_is_exit_2(tmp_path, own_baseline, edit, fragment):
    bad = edited(own_baseline, tmp_path / "bad-baseline.json", edit)
    before = snapshot(tmp_path)
    outcome = rooflint("gate", "--current", str(RESULT), "--baseline", str(bad),
                       env=NO_STEP_SUMMARY)
    assert_one_line_error(outcome, 2, str(bad), fragment)
    assert_intact(before)


def test_a_duplicate_entry_is_named(tmp_path, own_baseline):
    data = json.loads(own_baseline.read_text())
    twice = data["entries"][5]
    bad = edited(own_baseline, tmp_path / "bad.json", entries(lambda e: e.append(dict(twice))))
    with pytest.raises(RooflintError, match=f"has {twice['family']}/{twice['variant']} twice, "
                                            f"at \\[5\\] and \\[{len(data['entries'])}\\]"):
        baselines.read(bad)


@pytest.mark.parametrize("edit", [
    in_tiled("samples_s", value=lambda s: [NAN] * len(s)),      # "inconclusive" passed before
    in_tiled("status", value="unknown"),
    in_tiled("samples_s", value=lambda s: [-x for x in s]),      # "regressed -..%" before
])
def test_a_current_result_the_gate_cannot_judge_is_exit_2(tmp_path, own_baseline, edit):
    bad = edited(RESULT, tmp_path / "current.json", edit)
    outcome = rooflint("gate", "--current", str(bad), "--baseline", str(own_baseline),
                       env=NO_STEP_SUMMARY)
    assert_one_line_error(outcome, 2, f"{bad}: field '{HERE}")


def test_a_variant_skipped_now_fails_the_gate_as_missing(tmp_path, own_baseline):
    """Skipped (a library missing on the CI machine) is not measured: it passed before,
    with a warning, and so would every regression of that kernel after it."""
    skipped = edited(RESULT, tmp_path / "current.json",
                     in_tiled("status", value="skipped"))
    outcome = rooflint("gate", "--current", str(skipped), "--baseline", str(own_baseline),
                       env={**NO_STEP_SUMMARY, "COLUMNS": "200"})
    assert outcome.code == 1, outcome.stderr
    assert "FAIL: 37 pass, 1 missing" in outcome.stdout
    assert "skipped in this run" in outcome.stdout


def test_the_gate_on_its_own_baseline_passes(own_baseline):
    """The control for the cases above."""
    outcome = rooflint("gate", "--current", str(RESULT), "--baseline", str(own_baseline),
                       env=NO_STEP_SUMMARY)
    assert outcome.code == 0 and "PASS: 38 pass" in outcome.stdout, outcome.stderr


# --- calibrations filed under another GPU's name ---------------------------------------

def cache_with(tmp_path: Path, calibration: Path, filed_as: str) -> Path:
    cache = tmp_path / "cache"
    (cache / "calibration").mkdir(parents=True)
    shutil.copy(calibration, cache / "calibration" / filed_as)
    return cache


def test_an_h100_calibration_under_the_h200_s_name_is_refused(tmp_path):
    """The issue's case: copied over the H200's cache file, it was used silently."""
    driver = calibrations.load(CALIBRATIONS["h100-sxm"]).gpu.driver
    filed_as = calibrations.default_path("h200", driver).name
    cache = cache_with(tmp_path, CALIBRATIONS["h100-sxm"], filed_as)
    before = snapshot(cache)
    outcome = rooflint("explain", "--gpu", "h200", "--time", "1ms", "--flops", "1G",
                       "--bytes", "1GB", env={"ROOFLINT_CACHE_DIR": str(cache)})
    assert_one_line_error(outcome, 2, str(cache / "calibration" / filed_as),
                          "holds the calibration of h100-sxm (NVIDIA H100 80GB HBM3",
                          "not the one its name says", "rooflint calibrate", "--datasheet")
    assert_intact(before)


@pytest.mark.parametrize("spec, driver, inside", [
    ("h200", "575.00", "h200"),             # the H200's, under another driver's name
    ("h100-sxm", "{driver}", "h200"),       # the H200's, under the H100's name
])
def test_find_refuses_a_calibration_filed_under_another_name(tmp_path, monkeypatch, spec,
                                                             driver, inside):
    source = CALIBRATIONS[inside]
    driver = driver.format(driver=calibrations.load(source).gpu.driver)
    cache = cache_with(tmp_path, source, calibrations.default_path(spec, driver).name)
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(cache))
    for looked_up in (driver, None):        # run and compare know the driver; explain not
        with pytest.raises(RooflintError, match=f"holds the calibration of {inside} "):
            calibrations.find(spec, looked_up)


def test_a_calibration_under_its_own_name_is_found(tmp_path, monkeypatch):
    calibration = calibrations.load(CALIBRATIONS["h200"])
    name = calibrations.default_path("h200", calibration.gpu.driver).name
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(cache_with(tmp_path, CALIBRATIONS["h200"], name)))
    assert calibrations.find("h200", calibration.gpu.driver) == calibration
    assert calibrations.find("h200") == calibration


# --- GPU specs ------------------------------------------------------------------------

@pytest.mark.parametrize("change, fragment", [
    (("sms: 132", "sms: 0"), "field 'sms' must be a positive number, got 0"),
    (("sms: 132", "sms: .nan"), "field 'sms' must be a positive number, got nan"),
    (("sms: 132", "sms: 132.5"), "field 'sms' must be a whole number, got 132.5"),
    (("l2_mib: 60", "l2_mib: -1"), "field 'l2_mib' must be a positive number, got -1"),
    (("  bandwidth_gbs: 4800", "  bandwidth_gbs: .inf"), "'memory.bandwidth_gbs' must be a "
                                                         "positive number, got inf"),
    (("  fp32:", "  fp128:"), "unknown precision 'peaks.fp128'"),
    (("id: h200", "id: ../../../etc/passwd"), "field 'id' is '../../../etc/passwd', expected "
                                              "a plain id"),
])
def test_a_spec_that_makes_no_sense_is_named(tmp_path, change, fragment):
    text = (REPO / "specs" / "h200.yaml").read_text()
    assert change[0] in text
    spec = tmp_path / "h200.yaml"
    spec.write_text(text.replace(*change))
    with pytest.raises(RooflintError, match=f"^{re.escape(str(spec))}: .*{re.escape(fragment)}"):
        load_spec(spec)


# --- 3. any two measured variants compare ----------------------------------------------

def test_compare_with_a_side_that_does_no_arithmetic():
    """The issue's case: B (a copy) has no FLOPs; a ZeroDivisionError before."""
    outcome = rooflint("compare", f"{RESULT}:triad", f"{RESULT}:copy_scalar")
    assert outcome.code == 0, outcome.stderr
    assert "copy_scalar and triad take the same time" in outcome.stdout


def render(comparison_) -> str:
    console = Console(file=io.StringIO(), width=100)
    render_comparison(console, comparison_)
    return console.file.getvalue()


@pytest.fixture
def quick_bootstrap(monkeypatch):
    """Fewer bootstrap rounds: what is tested is everything after the time decision."""
    monkeypatch.setattr(comparison, "BOOTSTRAP_ROUNDS", 50)


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_every_ordered_pair_of_a_committed_result_compares(path, quick_bootstrap):
    variants = [v for f in read_result(path).families for v in f.variants]
    pairs = list(itertools.permutations(variants, 2))
    assert len(pairs) == 1406
    no_flops = 0
    for a, b in pairs:
        text = render(comparison.compare(a, b))
        assert "nan" not in text and b.name in text
        no_flops += bool(a.point.flops and not b.point.flops)
    assert no_flops == 136          # the pairs that raised ZeroDivisionError


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_every_pair_of_profiled_kernels_compares(gpu, quick_bootstrap):
    """Kernels of the committed profiles, within one program and across programs (400
    pairs drawn from the thousands, the same ones every run)."""
    kernels = [(p.stem, v) for p in sorted((REPO / "examples" / "profile").glob(f"{gpu}-*.json"))
               for f in read_result(p).families for v in f.variants]
    assert len(kernels) >= 10
    pairs = list(itertools.permutations(kernels, 2))
    for (_, a), (_, b) in random.Random(0).sample(pairs, min(len(pairs), 400)):
        if a.point and b.point:
            render(comparison.compare(a, b))
        else:                    # a kernel pass 2 could not profile: said, not a crash
            with pytest.raises(RooflintError, match="no speed to compare"):
                comparison.compare(a, b)


# --- 4. bounded reads, never of what is not a file ------------------------------------

NOT_FILES = [
    pytest.param(os.mkfifo, "is a named pipe (FIFO), not a file", id="FIFO"),
    pytest.param(lambda p: p.symlink_to("/dev/zero"), "is a device, not a file", id="/dev/zero"),
    pytest.param(lambda p: p.mkdir(), "is a directory, not a file", id="directory"),
    pytest.param(lambda p: p.symlink_to(p.name), "is a symbolic link that loops", id="loop"),
    pytest.param(lambda p: p.symlink_to("gone.json"), "is a symbolic link to gone.json, which "
                                                      "does not exist", id="dangling"),
]


@pytest.mark.parametrize("make, fragment", NOT_FILES)
@pytest.mark.parametrize("args", [
    lambda p: ["show", str(p)],
    lambda p: ["gate", "--current", str(RESULT), "--baseline", str(p)],
], ids=["show", "gate --baseline"])
def test_a_document_that_is_not_a_file_says_what_it_is(tmp_path, make, fragment, args):
    path = tmp_path / "doc.json"
    make(path)
    outcome = rooflint(*args(path), timeout=30, env=NO_STEP_SUMMARY)     # a FIFO hung forever
    assert_one_line_error(outcome, 2, "cannot read ", f"{path}: it {fragment}")


@pytest.mark.parametrize("make, fragment", NOT_FILES)
def test_a_yaml_file_that_is_not_a_file_says_what_it_is(tmp_path, make, fragment):
    path = tmp_path / "h200.yaml"
    make(path)
    with pytest.raises(RooflintError, match=re.escape(f"cannot read YAML file {path}: it "
                                                      f"{fragment}")):
        load_spec(path)


def test_a_document_past_the_limit_is_not_read(tmp_path):
    """A sparse file: past the limit by its size, read from by nobody."""
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_DOCUMENT_BYTES + 1)
    outcome = rooflint("show", str(path))
    assert_one_line_error(outcome, 2, f"cannot read result {path}: too large for a rooflint "
                                      f"result (the limit is {MAX_DOCUMENT_BYTES} bytes)")


def test_a_read_stops_at_the_limit(tmp_path):
    path = tmp_path / "doc.json"
    path.write_bytes(b"x" * 101)
    assert read_limited(path, "result", limit=101) == b"x" * 101
    with pytest.raises(RooflintError, match="too large for a rooflint result"):
        read_limited(path, "result", limit=100)


def test_a_yaml_file_past_its_limit_is_not_read(tmp_path):
    path = tmp_path / "h200.yaml"
    with path.open("wb") as handle:
        handle.truncate(yamlfile.MAX_FILE_BYTES + 1)
    with pytest.raises(RooflintError, match="too large for a rooflint YAML file"):
        load_spec(path)


# --- a reduced fuzz: every edit reads as sense, or is one line ------------------------

NUMBERS = [0, -1, float("nan"), 1e308]
EDITS = [(("time", "median_s"), NUMBERS), (("samples_s", 0), NUMBERS),
         (("flops", "model"), NUMBERS), (("dram_bytes", "ncu"), [0, 1e308]),
         (("point", "time_s"), [0, 1e308]), (("point", "flops"), [0, 1e308]),
         (("point", "achieved_bandwidth"), [0, 1e308]), (("point", "observed_ai"), [0, 1e308]),
         (("roofs", "dram_bandwidth"), [0, 1e308]), (("counters", "dram_read"), [-1, 1e308]),
         (("checks", 0, "rel_l2"), [float("nan"), 1e308]), (("status",), ["", "zz"]),
         (("precision",), ["zz"]), (("verdict", "bound"), ["zz"]),
         (("point", "bytes_source"), ["zz"])]
runner = cli_runner()


@pytest.mark.parametrize("keys, value", [(keys, value) for keys, values in EDITS
                                         for value in values],
                         ids=lambda x: ".".join(map(str, x)) if isinstance(x, tuple) else str(x))
def test_an_edited_field_is_sense_or_one_line(tmp_path, own_baseline, keys, value):
    """show, compare both ways (B with no arithmetic) and, for what they read, plot and
    gate, run in process through the CLI: exit 0 or 1 with no NaN or infinity shown, or
    exit 2 with one line naming the file and the field."""
    path = edited(RESULT, tmp_path / "result.json", in_tiled(*keys, value=value))
    commands = [["show", str(path), "tiled"],
                ["compare", f"{path}:tiled", f"{RESULT}:copy_scalar"],
                ["compare", f"{RESULT}:blocked_2d", f"{path}:tiled"]]
    if keys[0] == "point":
        commands.append(["plot", str(path), "-o", str(tmp_path / "r.svg"), "-v", "tiled",
                         "-v", "blocked_2d"])
    if keys[0] in ("samples_s", "status", "counters", "verdict"):
        commands.append(["gate", "--current", str(path), "--baseline", str(own_baseline)])
    for args in commands:
        result = runner.invoke(app, args, env={"CUDA_VISIBLE_DEVICES": "", "COLUMNS": "100",
                                               **NO_STEP_SUMMARY})
        output = result.output
        assert "internal error" not in output, (args, output)
        if result.exit_code in (0, 1):
            assert not {"nan", "inf"} & set(re.split(r"[\s%x±]+", output)), (args, output)
        else:
            lines = [line for line in output.splitlines() if line.strip()]
            assert result.exit_code == 2 and len(lines) == 1, (args, output)
            assert lines[0].startswith(f"rooflint: {path}: field "), (args, output)
