"""Bad input to `run`, `compare --rev`, `gate`, `explain` and `specs`, as a user types it.

Each case: one line on stderr naming the file or field, exit 2, no traceback, and every
file that existed before still intact. Manifest mistakes are refused before the GPU is
touched; the ones that need the device's facts (num_sms, memory) run against a stand-in
CuPy that reports an H200 and can measure nothing (tests/fixtures/fake_gpu), which proves
they are refused before any GPU work.
"""

from __future__ import annotations

import json
import subprocess
import re
import textwrap
from pathlib import Path

import pytest

from edges import TOY, REPO, assert_intact, assert_one_line_error, family, rooflint, snapshot

FAKE_H200 = {"PYTHONPATH": str(REPO / "tests" / "fixtures" / "fake_gpu")}


BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


# (what the user changed in TOY, the fragments the one line must hold)
MANIFEST_MISTAKES = [
    (("tolerance: 1e-6", "tolerance: tight"), ["'tolerance' is 'tight'", "number"]),
    (("role: in}", "role: in, range: 5}"), ["'buffers.x.range' is 5", "[low, high]"]),
    (("role: in}", "role: in, range: [1, -1]}"), ["'buffers.x.range'", "low < high"]),
    (("tolerance: 1e-6", "tolerance: 1e-6\ntolerance: 1e-3"),
     ["line 8", "duplicate key 'tolerance'"]),
    (("tolerance: 1e-6", "tolerence: 1e-6"),
     ["unknown key 'tolerence'", "did you mean 'tolerance'"]),
    (("    launches:", "    lanuches:"), ["'variants.v1.lanuches'", "'variants.v1.launches'"]),
    (("shared_mem: 0", "shared_memory: 0"), ["'variants.v1.launches[0].shared_memory'",
                                              "did you mean 'variants.v1.launches[0].shared_mem'"]),
    (("role: in}", "role: in, rnage: [0, 1]}"), ["'buffers.x.rnage'", "'buffers.x.range'"]),
    (("params: {N: 1024}", "params: {N: ((2**64)**64)**64}"), ["'params.N'", "would exceed"]),
    (("precision: fp32", "precision: fp31"), ["'precision' is 'fp31'"]),
    (("precision: fp32", "precision: fp32\ncompiler: clang"), ["'compiler' is 'clang'", "nvcc"]),
    (("float32, shape: N, role: in}", "uint32, shape: N, role: in, range: [-1, 1]}"),
     ["'buffers.x.range' is [-1, 1]", "outside what uint32 holds [0, 4294967295]"]),
    (("float32, shape: N, role: in}", "int8, shape: N, role: in, range: [0, 300]}"),
     ["'buffers.x.range'", "outside what int8 holds [-128, 127]"]),
    (("float32, shape: N, role: in}", "int32, shape: N, role: in, range: [0, 2.5]}"),
     ["'buffers.x.range' is [0, 2.5]", "whole-number bounds"]),
    (("float32, shape: N, role: in}", "float16, shape: N, role: in, range: [0, 1e6]}"),
     ["'buffers.x.range'", "outside what float16 holds"]),
    (("source: toy.cu", "source: other.cu"), ["'variants.v1.source'", "other.cu"]),
    (("    launches:\n      - {", "    launches: {"), ["'variants.v1.launches' must be a list"]),
    (("variants:\n  v1:", "variants:\n  v1: 7\n  v2:"), ["'variants.v1' must be a mapping"]),
    (("name: toy\n", "name: [toy\n"), ["not valid YAML at line 2", "flow sequence"]),
]


@pytest.mark.parametrize("change, fragments", MANIFEST_MISTAKES,
                         ids=[c[0][1].split(":")[0].strip(" -{") for c in MANIFEST_MISTAKES])
def test_manifest_mistakes_are_one_line_before_the_gpu(tmp_path, change, fragments):
    directory = family(tmp_path, TOY.replace(*change))
    before = snapshot(directory)
    outcome = rooflint("run", str(directory))
    assert_one_line_error(outcome, 2, str(directory / "kernel.yaml"), *fragments)
    assert_intact(before)


@pytest.mark.parametrize("text, fragments", [
    (BILLION_LAUGHS, ["expands to over 100000 values"]),
    ("- just\n- a list\n", ["'(top level)' must be a mapping"]),
    ("", ["'(top level)' must be a mapping"]),
    ("[" * 3000 + "]" * 3000, ["nested too deeply"]),
    ("name: toy\n" + "# padding\n" * 120_000, ["too large for a rooflint YAML file"]),
], ids=["billion-laughs", "list", "empty", "deep", "large"])
def test_hostile_yaml_costs_nothing(tmp_path, text, fragments):
    directory = family(tmp_path, text)
    outcome = rooflint("run", str(directory), timeout=20)
    assert_one_line_error(outcome, 2, str(directory / "kernel.yaml"), *fragments)


def test_a_binary_file_as_target(tmp_path):
    binary = tmp_path / "kernel.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    assert_one_line_error(rooflint("run", str(binary)), 2, str(binary), "not a text file")


@pytest.mark.parametrize("name", ["toy.cu", "toy.cuh"])
def test_a_cuda_source_as_target(tmp_path, name):
    directory = family(tmp_path)
    (directory / name).write_text("// kernels\n")
    assert_one_line_error(rooflint("run", str(directory / name)), 2, name,
                          "is a CUDA source", "kernel.yaml")


@pytest.mark.parametrize("size, fragments", [
    ("N=((2**64)**64)**64", ["--size N=((2**64)**64)**64", "would exceed"]),
    ("N=1e400", ["--size N=1e400", "finite"]),
    ("N=2**", ["--size N=2**", "cannot parse"]),
    ("N=0.5**-2000", ["--size N=0.5**-2000", "would exceed"]),
    ("N=(1/2)**-5000", ["would exceed"]),
    ("N", ["--size expects NAME=VALUE"]),
    ("Q=4", ["--size Q", "no such parameter"]),
])
def test_bad_sizes_before_the_gpu(tmp_path, size, fragments):
    outcome = rooflint("run", str(family(tmp_path)), "--size", size, timeout=30)
    assert_one_line_error(outcome, 2, *fragments)


# Refused once the device is known (its SM count and memory), before anything is allocated.
@pytest.mark.parametrize("change, size, fragments", [
    (None, "N=0", ["'buffers.x.shape' is 'N' = 0", "whole number >= 1", "N=0"]),
    (None, "N=-4", ["'buffers.x.shape' is 'N' = -4"]),
    (None, "N=1e11", ["the family needs 1.82 TiB of GPU memory",
                        "more than the 140 GiB of the NVIDIA H200"]),
    (("shape: N, role: in", "shape: 1e308*10, role: in"), None,
     ["'buffers.x.shape'", "values must be finite"]),
    (("flops: 2*N", "flops: ceil(1e400)"), None, ["'variants.v1.flops'", "finite"]),
    (("flops: 2*N", "flops: -N"), None, ["'variants.v1.flops'", "negative"]),
    (('grid: "cdiv(N, 256)"', "grid: N/3"), None, ["'variants.v1.launches[0].grid' is 'N/3'"]),
    (("block: 256", "block: 2048"), None, ["'variants.v1.launches[0].block'", "over the 1024"]),
    (('grid: "cdiv(N, 256)"', "grid: num_sms - 132"), None,
     ["'variants.v1.launches[0].grid'", "= 0", "num_sms=132"]),
])
def test_sizes_the_device_cannot_take(tmp_path, change, size, fragments):
    directory = family(tmp_path, TOY.replace(*change) if change else TOY)
    outcome = rooflint("run", str(directory), "--counters", "off",
                       *(["--size", size] if size else []), env=FAKE_H200, timeout=60)
    assert_one_line_error(outcome, 2, *fragments)


def test_the_fake_gpu_is_a_gpu(tmp_path):
    """Without the refusals above the job reaches the worker (and fails there, as the
    stand-in measures nothing): the cases above are refused by rooflint, not by chance."""
    outcome = rooflint("run", str(family(tmp_path)), "--counters", "off", env=FAKE_H200,
                       timeout=60)
    assert outcome.code == 1 and "ERROR" in outcome.stdout, outcome.stdout + outcome.stderr


# -- git revisions are resolved to a commit before anything reaches `git archive` ----------

@pytest.fixture
def repository(tmp_path):
    """A git repository holding one family, committed; and a file an attack would clobber."""
    directory = family(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", "."],
                   cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                   cwd=tmp_path, check=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    return directory, victim


@pytest.mark.parametrize("rev", ["--output={victim}", "-o{victim}", "HEAD --output={victim}",
                                 "no-such-branch"])
def test_compare_rev_cannot_inject_options(repository, rev):
    directory, victim = repository
    before = snapshot(victim)
    outcome = rooflint("compare", f"{directory}:v1", f"--rev={rev.format(victim=victim)}")
    assert_one_line_error(outcome, 2, "names no commit")
    assert_intact(before)


def test_gate_recheck_cannot_inject_through_the_baseline(repository, tmp_path):
    """A baseline's recorded git_revision reaches git only as a resolved SHA."""
    directory, victim = repository
    result = json.loads((REPO / "examples" / "h200-bundled.json").read_text())
    result["families"] = [f for f in result["families"] if f["name"] == "stream"]
    family_result = result["families"][0]
    family_result["directory"] = directory.relative_to(tmp_path).as_posix()   # as recorded
    family_result["variants"] = [dict(family_result["variants"][1], name="v1")]
    current = tmp_path / "current.json"
    current.write_text(json.dumps(result))
    baseline_path = tmp_path / "baseline.json"
    assert rooflint("gate", "--current", str(current), "--baseline", str(baseline_path),
                    "--update").code == 0
    baseline = json.loads(baseline_path.read_text())
    baseline["git_revision"] = f"--output={victim}"
    baseline["entries"][0]["samples_s"] = [s / 2 for s in baseline["entries"][0]["samples_s"]]
    baseline_path.write_text(json.dumps(baseline))
    before = snapshot(victim, baseline_path, current)
    outcome = rooflint("gate", "--current", str(current), "--baseline", str(baseline_path),
                       "--recheck", cwd=tmp_path)              # inside the clone
    assert outcome.code == 2 and "names no commit" in outcome.stderr, outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert_intact(before)


# -- thresholds and typed numbers -------------------------------------------------------

@pytest.mark.parametrize("option, value", [("--max-slowdown", "-5%"),
                                           ("--max-bytes-growth", "-0.02"),
                                           ("--max-flops-growth", "nan"),
                                           ("--max-slowdown", "fast")])
def test_gate_thresholds_must_be_fractions(tmp_path, option, value):
    outcome = rooflint("gate", "--current", str(REPO / "examples" / "h200-bundled.json"),
                       "--baseline", str(REPO / "examples" / "ci" / "h200-baseline.json"),
                       f"{option}={value}")
    assert_one_line_error(outcome, 2, repr(value))


@pytest.mark.parametrize("args, fragments", [
    (("--time", "1us", "--bytes", "1GiB"), ["--bytes", "224x the h200 datasheet DRAM"]),
    (("--time", "1ms", "--flops", "1e15", "--bytes", "1MB"),
     ["--flops", "fastest peak (fp8-tensor)"]),
    (("--bytes", "1e400"), ["byte count '1e400' is not a finite number"]),
    (("--flops", "1e999"), ["count '1e999' is not a finite number"]),
    (("--time", "0"), ["must be greater than zero"]),
    (("--time", "-1ms"), ["negative"]),
    (("--gpu", "h900"), ["unknown GPU 'h900'"]),
])
def test_explain_refuses_impossible_numbers(args, fragments):
    base = {"--gpu": "h200", "--time": "1ms", "--flops": "1e9", "--bytes": "1GB"}
    pairs = {**base, **dict(zip(args[::2], args[1::2]))}
    outcome = rooflint("explain", *[x for pair in pairs.items() for x in pair])
    assert_one_line_error(outcome, 2, *fragments)


@pytest.mark.parametrize("change, message", [
    (("l2_mib:", "l2_mb:"), "unknown key 'l2_mb'; did you mean 'l2_mib'"),
    (("source:", "sources:"), "unknown key 'sources'; did you mean 'source'"),
    (("  bandwidth_gbs:", "  bandwith_gbs:"), "unknown key 'memory.bandwith_gbs'; did you mean "
                                              "'memory.bandwidth_gbs'"),
])
def test_a_misspelt_spec_key_is_named(tmp_path, change, message):
    from rooflint.common.errors import RooflintError
    from rooflint.formats.gpus import load_spec
    spec = tmp_path / "h200.yaml"
    spec.write_text((REPO / "specs" / "h200.yaml").read_text().replace(*change))
    with pytest.raises(RooflintError, match=re.escape(message)):
        load_spec(spec)


def test_the_toy_family_itself_loads(tmp_path):
    """The cases above change one thing each in a manifest that is otherwise right."""
    from rooflint.formats.manifest import load_manifest
    assert load_manifest(family(tmp_path)).variants[0].name == "v1"
    assert textwrap.dedent(TOY) == TOY


# -- an output that cannot be written is refused before the minutes of measuring ----------

@pytest.mark.parametrize("args, fragments", [
    (("run", "stream", "--json", "{tmp}/missing/result.json"), ["no directory", "missing"]),
    (("run", "stream", "--svg", "{tmp}/missing/roofline.svg"), ["no directory"]),
    (("run", "stream", "--svg", "{tmp}/roofline.gif"), ["use .svg, .png or .pdf"]),
    (("gate", "stream", "--baseline", "{tmp}/b.json", "--junit", "{tmp}/x/j.xml"),
     ["no directory", "x"]),
    (("gate", "stream", "--baseline", "{tmp}/missing/b.json", "--update"), ["no directory"]),
    (("calibrate", "--json", "{tmp}/missing/calibration.json"), ["no directory"]),
])
def test_unwritable_outputs_are_refused_before_measuring(tmp_path, args, fragments):
    """Without a GPU the command would stop at "no GPU"; it stops earlier, at the path."""
    outcome = rooflint(*[a.format(tmp=tmp_path) for a in args])
    assert_one_line_error(outcome, 2, "cannot write", *fragments)


def test_explain_accepts_a_real_tensor_core_rate():
    """500 TFLOP/s typed with the default fp32 precision is a precision slip, not an
    impossibility: the verdict says where it sits; nothing is refused."""
    outcome = rooflint("explain", "--gpu", "h100-sxm", "--time", "1ms", "--flops", "5e11",
                       "--bytes", "1GB")
    assert outcome.code == 0, outcome.stderr


# -- result files as other tools or older versions leave them ------------------------------

FIXTURE = REPO / "tests" / "fixtures" / "results" / "h200-bundled.json"


def edited_result(tmp_path: Path, name: str, edit) -> Path:
    data = json.loads(FIXTURE.read_text())
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_show_without_settings(tmp_path):
    path = edited_result(tmp_path, "r.json", lambda d: d.update(settings={}))
    outcome = rooflint("show", str(path), "tiled")
    assert outcome.code == 0 and "tiled" in outcome.stdout, outcome.stderr


def test_compare_across_gpus_named_like_markup(tmp_path):
    a = edited_result(tmp_path, "a.json", lambda d: d["gpu"].update(name="H[/]x"))
    outcome = rooflint("compare", f"{a}:tiled", f"{FIXTURE}:blocked_2d", "--allow-different-gpu")
    assert outcome.code == 0 and "H[/]x" in outcome.stderr, outcome.stderr


def test_compare_a_side_that_moved_no_dram_bytes(tmp_path):
    def no_bytes(data):
        for measured in data["families"]:
            for v in measured["variants"]:
                if v["name"] == "tiled":
                    v["point"].update(dram_bytes=0.0, achieved_bandwidth=0.0,
                                      observed_ai=float("inf"))   # as roofline.place has it
    a = edited_result(tmp_path, "a.json", no_bytes)
    outcome = rooflint("compare", f"{a}:tiled", f"{FIXTURE}:blocked_2d")
    assert outcome.code == 0 and "faster" in outcome.stdout, outcome.stderr
    assert "where it came from" not in outcome.stdout


@pytest.mark.parametrize("exists", [False, True])
def test_the_no_driver_message_keeps_cuda_s_words(monkeypatch, exists):
    from rooflint.measure import worker
    monkeypatch.setattr(worker.Path, "exists", lambda self: exists)
    message = worker.no_gpu_message(RuntimeError("cudaErrorInsufficientDriver: CUDA driver "
                                                 "version is insufficient"))
    assert "cudaErrorInsufficientDriver" in message
    assert ("no NVIDIA GPU driver" in message) is not exists
