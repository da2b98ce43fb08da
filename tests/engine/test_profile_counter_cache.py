"""A profile's counter cache (issue 50): PyTorch's own kernels at the launch shapes and
inputs an earlier profile measured are served from the cache, and a profile whose chosen
kernels all are runs no pass 2. On an eager GPT-2-like training step recorded on an H200
(examples/apps/train_step.py, 2026-11-29): its pass-1 trace (PyTorch's profiler) and its
pass-2 log (Nsight Compute), played back by stand-ins for the interpreter and for ncu."""

from __future__ import annotations

import json
import lzma
import os
import sys
from pathlib import Path

from edges import rooflint
from fake_ncu import by_mode
from rooflint.formats import counter_cache
from rooflint.formats.trace_events import LIBRARIES

FIXTURES = Path(__file__).parents[1] / "fixtures"
TRACE = FIXTURES / "trace" / "h200-train-step-trace.json.xz"
PASS2 = FIXTURES / "ncu" / "h200-train-step-pass2.csv"
VERSIONS = {"torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91300}

FAKE_PYTHON = '''\
#!{python}
"""A Python whose PyTorch profiler wrote the recorded trace; any other use of it is the
real interpreter's."""
import os, shutil, sys
if sys.argv[1:2] and sys.argv[1].endswith("trace_bootstrap.py") and sys.argv[2] != "--pass-two":
    shutil.copyfile({trace!r}, sys.argv[2])
    sys.exit(0)
os.execv({python!r}, [{python!r}, *sys.argv[1:]])
'''


def stand_ins(fake_ncu, tmp_path: Path, versions: dict | None = VERSIONS) -> tuple[dict, Path, str]:
    """The stand-in ncu playing the recorded pass 2, and an interpreter playing the
    recorded trace, which names ``versions`` as the bootstrap writes them (the recording
    predates it)."""
    env, state = fake_ncu
    (state / "pass2.csv").write_text(PASS2.read_text())
    trace = json.loads(lzma.decompress(TRACE.read_bytes()))
    if versions:
        trace[LIBRARIES] = versions
    recorded = tmp_path / "trace.json"
    recorded.write_text(json.dumps(trace))
    python = Path(env["PATH"].split(os.pathsep)[0]) / "python3"
    python.write_text(FAKE_PYTHON.format(python=sys.executable, trace=str(recorded)))
    python.chmod(0o755)
    return env, state, str(python)


def profile(env: dict, python: str, out: Path, *options: str) -> dict:
    outcome = rooflint("profile", *options, "--json", str(out), "--", python, "-c", "pass",
                       env=env)
    assert outcome.code == 0, outcome.stderr
    return json.loads(out.read_text()) | {"said": outcome.stderr}


def verdicts(doc: dict) -> dict:
    return {(v["description"], v["name"]): (v["verdict"]["bound"], v["verdict"]["moves"][0]["id"],
                                            v["counters"])
            for v in doc["families"][0]["variants"]}


def test_a_second_profile_serves_every_kernel_and_runs_no_pass_two(fake_ncu, tmp_path):
    env, state, python = stand_ins(fake_ncu, tmp_path)
    first = profile(env, python, tmp_path / "first.json")
    assert len(by_mode(state)["attach"]) == 1 and "pass2_cached_kernels" not in first["settings"]
    chosen = len(first["families"][0]["variants"])
    assert chosen == 48 and all(v["counters"] for v in first["families"][0]["variants"])
    kept = list(counter_cache.counters_directory().glob("*.json"))
    assert len(kept) == chosen
    second = profile(env, python, tmp_path / "second.json")
    assert len(by_mode(state)["attach"]) == 1                     # no second pass 2
    assert "48 from the counter cache" in second["said"] and "pass 2 is not run" in second["said"]
    assert len(second["settings"]["pass2_cached_kernels"]) == chosen
    assert second["settings"]["pass2_wall_s"] == 0.0
    assert verdicts(second) == verdicts(first)


def test_no_counter_cache_and_a_trace_without_versions_profile_every_kernel(fake_ncu, tmp_path):
    env, state, python = stand_ins(fake_ncu, tmp_path)
    profile(env, python, tmp_path / "first.json", "--no-counter-cache")
    assert not counter_cache.counters_directory().exists()
    profile(env, python, tmp_path / "second.json")
    profile(env, python, tmp_path / "third.json", "--no-counter-cache")
    assert len(by_mode(state)["attach"]) == 3
    env, state, python = stand_ins(fake_ncu, tmp_path, versions=None)
    doc = profile(env, python, tmp_path / "fourth.json")
    assert len(by_mode(state)["attach"]) == 4 and "pass2_cached_kernels" not in doc["settings"]
