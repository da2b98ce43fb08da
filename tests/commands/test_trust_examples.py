"""Issue 22: the committed examples agree with each other and with the commands, results
keep no machine's paths, and what is left of "internal error" (expressions too long or
deep, a compulsory-byte count of 0, a standard output that cannot be written) is one line.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from edges import NO_GPU, REPO, assert_one_line_error, rooflint
from rooflint.common.errors import RooflintError
from rooflint.formats.expressions import MAX_DEPTH, MAX_LENGTH, evaluate
from rooflint.common.paths import locate_family, portable_path

CI = REPO / "examples" / "ci"
RESULTS = sorted(p for p in [*REPO.glob("examples/**/*.json"),
                             *REPO.glob("tests/fixtures/**/*.json")]
                 if '"rooflint.result/' in p.read_text())


# --- the CI workflows run as written ----------------------------------------------------

def workflow_commands() -> list[str]:
    """Every rooflint command line of the two CI examples, with the matrix variable set."""
    github = yaml.safe_load((CI / "github-actions.yml").read_text())
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    lines = [step["run"] for step in github["jobs"]["gate"]["steps"] if "run" in step]
    lines += gitlab["kernel-gate"]["script"]
    commands = [" ".join(line.split()).replace("${{ matrix.gpu }}", "h100").replace("$GPU", "h100")
                for line in lines]
    return [c for c in commands if c.startswith("rooflint ")]


def test_the_workflows_have_the_gate_and_calibrate():
    assert [c.split()[1] for c in workflow_commands()] == ["calibrate", "gate"] * 2


@pytest.mark.parametrize("command", workflow_commands())
def test_every_workflow_command_parses_as_written(command, tmp_path):
    """Run as written, in an empty directory on a machine with no GPU: the command may stop
    for want of a GPU or a baseline, never on an option it does not have (`gate --devices
    all` was in the GitHub example)."""
    outcome = rooflint(*shlex.split(command)[1:], cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": ""})
    assert outcome.code == 2, outcome
    for usage_error in ("no such option", "unexpected extra argument", "invalid value",
                        "missing option", "usage:", "--help lists what it takes"):
        assert usage_error not in outcome.stderr.lower(), outcome.stderr


@pytest.mark.parametrize("model", ["h100", "h200"])
def test_each_committed_baseline_passes_against_the_result_it_was_made_from(model):
    outcome = rooflint("gate", "--baseline", str(CI / f"{model}-baseline.json"),
                       "--current", str(REPO / "examples" / f"{model}-bundled.json"),
                       env={"GITHUB_STEP_SUMMARY": ""}, timeout=60)
    assert outcome.code == 0, outcome.stderr + outcome.stdout[-2000:]
    assert "PASS" in outcome.stdout


# --- results keep no machine's paths -----------------------------------------------------

def recorded_paths(data: dict) -> list[str]:
    paths = []
    for family in data["families"]:
        paths.append(family["directory"])
        for v in family["variants"]:
            paths += [line["file"] for line in (v.get("source_lines") or {}).get("lines", [])]
    return paths


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: str(p.relative_to(REPO)))
def test_committed_results_record_paths_relative_to_the_repository(path):
    paths = recorded_paths(json.loads(path.read_text()))
    assert paths and not [p for p in paths if Path(p).is_absolute()]


def test_a_family_in_a_repository_is_recorded_relative_to_it():
    assert portable_path(REPO / "kernels" / "stream") == "kernels/stream"
    assert portable_path(REPO / "kernels" / "stream" / "stream.cu") == "kernels/stream/stream.cu"


def test_a_family_outside_any_repository_keeps_its_absolute_path(tmp_path):
    assert portable_path(tmp_path) == str(tmp_path.resolve())


@pytest.mark.parametrize("location", ["/etc", "../../etc", "kernels/../../.."])
def test_recheck_never_runs_git_outside_the_current_repository(location):
    with pytest.raises(RooflintError, match="outside this repository"):
        locate_family(location, REPO)


def test_recheck_finds_a_recorded_family_in_this_clone():
    assert locate_family("kernels/stream", REPO) == REPO / "kernels" / "stream"


def test_recheck_outside_any_repository_says_where_to_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RooflintError, match="inside the repository"):
        locate_family("kernels/stream")


# --- expressions: what the parser cannot take is refused first --------------------------

@pytest.mark.parametrize("expression, fragment", [
    ("+".join(["1"] * 5000), f"at most {MAX_LENGTH}"),         # RecursionError in ast before
    ("-" * 200_000 + "1", f"at most {MAX_LENGTH}"),             # MemoryError in ast before
    ("+".join(["1"] * (MAX_DEPTH + 10)), f"more than {MAX_DEPTH} levels"),
    ("-" * 120 + "1", f"more than {MAX_DEPTH} levels"),
    ("(" * 240 + "1" + ")" * 240, "cannot parse expression"),
])
def test_expressions_too_long_or_deep_are_one_error(expression, fragment):
    with pytest.raises(RooflintError, match=fragment):
        evaluate(expression, {})


def test_a_long_sum_within_the_bounds_still_evaluates():
    assert evaluate("+".join(["N"] * 40), {"N": 3}) == 120


def test_a_deep_size_is_one_line_before_the_gpu():
    outcome = rooflint("run", "stream", "--size", "N=" + "+".join(["1"] * 5000))
    assert_one_line_error(outcome, 2, "--size N=", f"at most {MAX_LENGTH}")


def test_a_deep_model_expression_is_one_line(tmp_path):
    model = tmp_path / "models.yaml"
    model.write_text(yaml.safe_dump({"kernels": [{"match": "x", "flops": "-" * 200_000 + "1",
                                                  "bytes": 1}]}))
    outcome = rooflint("profile", "--model", str(model), "--", sys.executable, "-c", "pass")
    assert_one_line_error(outcome, 2, str(model))


# --- explain and standard output -----------------------------------------------------------

EXPLAIN = ["explain", "--gpu", "h100-sxm", "--time", "1ms", "--flops", "1e9", "--bytes", "1MB"]


def test_explain_refuses_zero_compulsory_bytes():
    outcome = rooflint(*EXPLAIN, "--algorithmic-bytes", "0")
    assert_one_line_error(outcome, 2, "--algorithmic-bytes 0")


def run_into(args: list[str], stdout) -> subprocess.CompletedProcess:
    env = {**NO_GPU, "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "rooflint", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=60)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", [EXPLAIN + ["--json", "-"], EXPLAIN, ["specs"], ["--version"],
                                  ["show", str(REPO / "examples" / "h200-bundled.json")]])
def test_a_full_disk_on_standard_output_is_one_line(args):
    with open("/dev/full", "w") as full:
        done = run_into(args, full)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "cannot write to standard output: No space left on device" in lines[0]


def test_a_reader_that_stops_reading_ends_rooflint_quietly():
    """`rooflint show r.json | head -1`: no error text, the status of a SIGPIPE."""
    shell = (f"{shlex.quote(sys.executable)} -m rooflint show "
             f"{REPO / 'examples' / 'h200-bundled.json'} | head -c 10 >/dev/null; "
             f"echo ${{PIPESTATUS[0]}}")
    env = {**NO_GPU, "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.stdout.strip() == "141" and done.stderr == "", (done.stdout, done.stderr)


def test_a_model_of_zero_compulsory_bytes_is_no_ratio_not_a_division_by_zero():
    """A manifest's byte model can come to 0; the traffic evidence then says it cannot
    judge the traffic (explain refuses --algorithmic-bytes 0 outright)."""
    from rooflint.analysis.ceilings import roofs
    from rooflint.analysis.evidence import LaunchFacts, gather
    from rooflint.formats.gpus import find_spec, load_specs
    from rooflint.analysis.roofline import place
    h100 = roofs(find_spec("h100-sxm", load_specs()), "fp32", None)
    point = place(1e-3, 1e9, 1e6, 0.0, h100, bytes_source="ncu")
    evidence = gather(point, LaunchFacts(grid_blocks=132, threads_per_block=256, launches=1,
                                         sms=132, precision="fp32"))
    assert "compulsory bytes are 0" in evidence.flags["no_algorithmic_model"]
    assert "extra_traffic" not in evidence.flags


def test_the_workflows_install_rooflint_not_the_users_project():
    """Issue 51: `pip install ".[cuda13]"` in a user's repository installs the user's
    project; the examples install rooflint from its git repository, named once in each
    (ROOFLINT), with the extra that brings CuPy."""
    github = yaml.safe_load((CI / "github-actions.yml").read_text())
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    installs = [step["run"] for step in github["jobs"]["gate"]["steps"]
                if "pip install" in step.get("run", "")]
    installs += [line for line in gitlab["kernel-gate"]["script"] if "pip install" in line]
    assert installs == ['pip install "rooflint[cuda13] @ $ROOFLINT"'] * 2
    sources = [github["jobs"]["gate"]["env"]["ROOFLINT"],
               gitlab["kernel-gate"]["variables"]["ROOFLINT"]]
    assert all(re.fullmatch(r"git\+https://github\.com/[^/]+/rooflint", url)
               for url in sources), sources
