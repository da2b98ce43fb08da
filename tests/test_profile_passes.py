"""`rooflint profile` end to end on a machine without a GPU: a stand-in `ncu` on PATH runs
the user's command as the real one would, writes back the H200 logs recorded from
examples/apps/transformer_block.py (pass 2's when given a launch count), and keeps every
command line it was given, so the plumbing between the passes is checked: the filters
both passes share, the caches each leaves, the window pass 1 chose, and what the user
is told when the program fails in either pass."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from edges import REPO, assert_one_line_error, rooflint

NCU = Path(__file__).parent / "fixtures" / "ncu"

FAKE_NCU = textwrap.dedent('''\
    #!{python}
    import json, os, subprocess, sys
    from pathlib import Path
    args = sys.argv[1:]
    state = Path(os.environ["FAKE_NCU_STATE"])
    with (state / "calls.jsonl").open("a") as calls:
        calls.write(json.dumps(args) + "\\n")

    def option(name):
        return args[args.index(name) + 1] if name in args else None

    def program():
        """What follows ncu's options: the options this stand-in knows take one value."""
        flags = {{"--nvtx", "--csv"}}
        i = 0
        while i < len(args) and args[i].startswith("-"):
            i += 1 if args[i] in flags else 2
        return args[i:]

    code = subprocess.run(program()).returncode
    recorded = "pass2.csv" if "--launch-count" in args else "pass1.csv"
    Path(option("--log-file")).write_text((state / recorded).read_text())
    sys.exit(code)
''')


@pytest.fixture
def fake_ncu(tmp_path):
    """A directory with the stand-in ``ncu``, and the environment that puts it first."""
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    for n in (1, 2):
        (state / f"pass{n}.csv").write_text(
            (NCU / f"h200-transformer-block-pass{n}.csv").read_text())
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_NCU_STATE": str(state)}
    return env, state


def calls(state: Path) -> list[list[str]]:
    """Each ncu command line, in order."""
    return [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]


def test_a_profile_runs_both_passes_on_the_window_pass_one_chose(fake_ncu, tmp_path):
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    outcome = rooflint("profile", "--nvtx", "timed", "--coverage", "0.99", "--json", str(out),
                       "--", sys.executable, "-c", "print('the program ran')", env=env)
    assert outcome.code == 0, outcome.stderr
    pass1, pass2 = calls(state)
    assert pass1[pass1.index("--cache-control") + 1] == "none"     # timed as the program runs
    assert pass2[pass2.index("--cache-control") + 1] == "all"      # counters from cold caches
    for args in (pass1, pass2):
        assert args[args.index("--nvtx-include") + 1] == "timed/" and "--nvtx" in args
    doc = json.loads(out.read_text())
    first, last = doc["settings"]["pass2_launches"]
    assert pass2[pass2.index("--launch-skip") + 1] == str(first)
    assert pass2[pass2.index("--launch-count") + 1] == str(last - first + 1)
    variants = doc["families"][0]["variants"]
    assert len(variants) == 5 and all(v["counters"] for v in variants)
    assert "pass 2: counters on 5 of 5 kernels" in outcome.stderr


def test_a_program_failing_in_pass_one_says_why_in_its_own_words(fake_ncu):
    env, state = fake_ncu
    outcome = rooflint("profile", "--", sys.executable, "-c",
                       "import sys; print('out of memory', file=sys.stderr); sys.exit(3)",
                       env=env)
    assert outcome.code == 2 and "Traceback" not in outcome.stderr
    last = outcome.stderr.strip().splitlines()[-1]
    assert "failed under ncu (exit 3)" in last and "out of memory" in last
    assert len(calls(state)) == 1


def test_a_program_failing_only_in_pass_two_says_so(fake_ncu, tmp_path):
    env, state = fake_ncu
    marker = tmp_path / "ran-once"
    second_run_fails = (f"import pathlib, sys; m = pathlib.Path({str(marker)!r}); "
                        f"sys.exit(4) if m.exists() else m.touch()")
    outcome = rooflint("profile", "--", sys.executable, "-c", second_run_fails, env=env)
    assert outcome.code == 2 and "Traceback" not in outcome.stderr
    assert "failed under ncu (exit 4)" in outcome.stderr.strip().splitlines()[-1]
    assert len(calls(state)) == 2


def test_a_model_file_gives_its_kernels_an_algorithmic_intensity(fake_ncu, tmp_path):
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    model = REPO / "examples" / "apps" / "transformer_block.models.yaml"
    outcome = rooflint("profile", "--coverage", "0.99", "--model", str(model), "--json",
                       str(out), "--", sys.executable, "-c", "pass", env=env)
    assert outcome.code == 0, outcome.stderr
    variants = {v["name"]: v for v in json.loads(out.read_text())["families"][0]["variants"]}
    assert variants["vectorized_layer_norm_kernel"]["point"]["algorithmic_ai"] == 2.0
    assert "model" not in variants["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"]["flops"]


def test_a_bad_model_file_is_refused_before_the_program_runs(fake_ncu, tmp_path):
    env, state = fake_ncu
    model = tmp_path / "models.yaml"
    model.write_text("kernels:\n  - {match: norm, flops: 2 * B, bytes: 8}\n")
    outcome = rooflint("profile", "--model", str(model), "--", sys.executable, "-c", "pass",
                       env=env)
    assert_one_line_error(outcome, 2, str(model), "kernels[0].flops")
    assert not (state / "calls.jsonl").exists()
