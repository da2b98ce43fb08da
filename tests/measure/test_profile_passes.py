"""`rooflint profile` end to end on a machine without a GPU, through the stand-in `ncu` of
fake_ncu.py (the ``fake_ncu`` fixture), which keeps every command line it was given, so the
plumbing between the passes is checked: the filters both passes share, the caches each
leaves, pass 2's selection, the port, the fall-back when the early start was not
sound, what the user is told when the program fails, and that no program is left
waiting."""

from __future__ import annotations

import csv
import io
import json
import lzma
import subprocess
import sys

import pytest

from edges import REPO, assert_one_line_error, rooflint
from fake_ncu import NCU, by_mode, calls, still_running, waiting_program_is_gone
from rooflint.formats.settings import DEFAULT_COVERAGE, DEFAULT_STOP_AFTER
from rooflint.measure import ncu

def test_a_profile_runs_both_passes_and_profiles_each_launch_shape_once(fake_ncu, tmp_path):
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    outcome = rooflint("profile", "--nvtx", "timed", "--coverage", "0.99", "--json", str(out),
                       "--", sys.executable, "-c", "print('the program ran')", env=env)
    assert outcome.code == 0, outcome.stderr
    seen = by_mode(state)
    (pass1,), (launch,), (pass2,) = seen["pass1"], seen["launch"], seen["attach"]
    assert pass1[pass1.index("--cache-control") + 1] == "none"     # timed as the program runs
    assert pass2[pass2.index("--cache-control") + 1] == "all"      # counters from cold caches
    assert launch[launch.index("--target-processes") + 1] == "application-only"
    assert launch[launch.index("--port") + 1] == pass2[pass2.index("--port") + 1]
    # a Python program waits for pass 2 with TorchDynamo imported (trace_bootstrap.py), to
    # be ended at the optimizer step pass 1's is
    assert launch[-5:] == ["--pass-two", str(DEFAULT_STOP_AFTER), "--", "-c",
                           "print('the program ran')"]
    assert launch[-6].endswith("trace_bootstrap.py")
    assert pass1[pass1.index("--nvtx-include") + 1] == "timed/"
    # an NVTX range holds only its own thread's launches (not autograd's backward): pass 2
    # selects by kernel instead, one launch of each shape of the kernels pass 1 chose
    assert "--nvtx" not in launch and "--nvtx-include" not in pass2
    selection = pass2[pass2.index("-k") + 1]
    assert selection.startswith("regex:") and "^nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA" \
        in selection and "28vectorized_layer_norm_kernel" in selection
    assert pass2[pass2.index("--kernel-name-base") + 1] == "mangled"
    doc = json.loads(out.read_text())
    assert doc["settings"]["pass2_started_early"] is True
    assert doc["settings"]["ncu_version"] == "2025.3.1.0"      # how it was measured
    assert doc["settings"]["coverage"] == 0.99 and "top" not in doc["settings"]  # and chosen
    assert doc["settings"]["stop_after"] == DEFAULT_STOP_AFTER      # the window asked
    # what ncu was asked for is kept, so the same launches can be profiled again
    kept = doc["settings"]["pass2_selection"]
    assert kept == pass2[pass2.index(kept[0]):pass2.index(kept[0]) + len(kept)]
    assert pass2[pass2.index("--filter-mode") + 1] == "per-launch-config"
    assert pass2[pass2.index("--launch-count") + 1] == "1"       # one launch of each shape
    assert "--launch-skip" not in pass2 and "--launch-skip-before-match" not in pass2
    variants = doc["families"][0]["variants"]
    assert len(variants) == 5 and all(v["counters"] for v in variants)
    assert "pass 1 (Nsight Compute): 5 kernels" in outcome.stderr
    assert "pass 2: counters on 5 of them" in outcome.stderr
    assert waiting_program_is_gone(state)


@pytest.mark.parametrize("asked, step", [(["--stop-after", "0"], "0"),
                                         (["--stop-after", "3"], "3")])
def test_the_window_asked_reaches_pass_two_and_the_result(fake_ncu, tmp_path, asked, step):
    """--stop-after N: pass 2's waiting program is ended at the step pass 1's is (0: at its
    own end), and the result says what was asked; a negative count is refused."""
    env, state = fake_ncu
    out = tmp_path / "p.json"
    outcome = rooflint("profile", *asked, "--json", str(out), "--", sys.executable, "-c",
                       "pass", env=env)
    assert outcome.code == 0, outcome.stderr
    (launch,) = by_mode(state)["launch"]
    assert launch[-5:-3] == ["--pass-two", step]
    assert json.loads(out.read_text())["settings"]["stop_after"] == int(step)
    refused = rooflint("profile", "--stop-after", "-1", "--", sys.executable, "-c", "pass",
                       env=env)
    assert refused.code == 2 and "--stop-after" in refused.stderr and not by_mode(state)[
        "launch"][1:]


def test_pass_two_asks_for_the_counters_by_the_names_of_the_gpus_chip(fake_ncu):
    """Pass 1's launches as if on an A100 (compute capability 8.0, the recorded log's one
    change): pass 2 asks for ga100's names, its FP16 tensor FLOPs by destination and no
    FP8 nor wgmma counter, which its ncu would leave "n/a" (tests/measure/test_chip_metrics)."""
    env, state = fake_ncu
    pass1 = ncu.parse_rows((state / "pass1.csv").read_text())
    assert {r["device__attribute_compute_capability_major"] for r in pass1} == {9.0}
    (state / "pass1.csv").write_text(with_column(
        (state / "pass1.csv").read_text(), "device__attribute_compute_capability_major", "8"))
    outcome = rooflint("profile", "--", sys.executable, "-c", "pass", env=env)
    assert outcome.code == 0, outcome.stderr
    (pass2,) = by_mode(state)["attach"]
    asked = pass2[pass2.index("--metrics") + 1].split(",")
    assert asked == ncu.metrics_for(None, ncu.listed_names(
        lzma.decompress((NCU / "metrics" / "ga100.txt.xz").read_bytes()).decode()))
    assert "sm__ops_path_tensor_src_fp16_dst_fp32.sum" in asked
    assert ncu.GMMA not in asked and ncu.TENSOR_FLOPS["fp8-tensor"] not in asked


def with_column(log: str, column: str, value: str) -> str:
    """An ncu CSV log with every launch's ``column`` set to ``value``."""
    lines = log.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    at = rows[0].index(column)
    for row in rows[2:]:                                      # after the units' row
        row[at] = value
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return "\n".join(lines[:start]) + "\n" + out.getvalue()


def test_a_profile_of_the_top_kernels_records_it_and_the_default_coverage(fake_ncu, tmp_path):
    """What chose pass 2's kernels is kept with the profile: --top N, beside the coverage it
    did not use (the default, written once in formats/settings.py)."""
    env, _ = fake_ncu
    out = tmp_path / "profile.json"
    outcome = rooflint("profile", "--top", "2", "--json", str(out), "--",
                       sys.executable, "-c", "pass", env=env)
    assert outcome.code == 0, outcome.stderr
    settings = json.loads(out.read_text())["settings"]
    assert (settings["top"], settings["coverage"]) == (2, DEFAULT_COVERAGE)


def test_skip_and_kernel_filters(fake_ncu, tmp_path):
    """--skip leaves out pass 1's warm-up; pass 2 needs no skip (one launch of each shape,
    from flushed caches). A --kernel filter applies to pass 1 as the user wrote it (on
    demangled names); pass 2 selects the kernels it chose by their mangled names, as
    without --kernel: by demangled name Nsight Compute counts two ``extern "C"`` kernels
    at one launch shape as one configuration and profiles only the first (H100 probe)."""
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    outcome = rooflint("profile", "--skip", "7", "--kernel", "nvjet|layer_norm", "--coverage",
                       "0.99", "--json", str(out), "--", sys.executable, "-c", "pass", env=env)
    assert outcome.code == 0, outcome.stderr
    seen = by_mode(state)
    (pass1,), (pass2,) = seen["pass1"], seen["attach"]
    assert pass1[pass1.index("--launch-skip") + 1] == "7"
    assert "--launch-skip" not in pass2
    assert pass2[pass2.index("--filter-mode") + 1] == "per-launch-config"
    assert pass1[pass1.index("-k") + 1] == "regex:nvjet|layer_norm"
    assert pass1[pass1.index("--kernel-name-base") + 1] == "demangled"   # as the user wrote it
    chosen = json.loads(out.read_text())["settings"]["pass2_kernels"]
    assert pass2[pass2.index("-k") + 1] == "regex:" + "|".join(chosen)
    assert pass2[pass2.index("--kernel-name-base") + 1] == "mangled"


def test_a_program_whose_kernels_run_in_a_child_is_timed_again_alone(fake_ncu, tmp_path):
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    outcome = rooflint("profile", "--coverage", "0.99", "--json", str(out), "--",
                       sys.executable, "-c", "pass", env={**env, "FAKE_NCU_WRAPPER": "1"})
    assert outcome.code == 0, outcome.stderr
    assert "pass 1 again, alone" in outcome.stderr
    seen = by_mode(state)
    assert sorted(seen) == ["launch", "pass1", "pass2"]       # no attach: an ordinary pass 2
    assert len(seen["pass1"]) == 2
    assert calls(state)[-1] == seen["pass2"][0]
    assert json.loads(out.read_text())["settings"]["pass2_started_early"] is False


def test_the_early_start_is_sound_only_for_one_process_that_waited(tmp_path):
    from rooflint.measure import early_start, pass_runner
    log = (NCU / "h200-transformer-block-pass1.csv").read_text()
    rows = ncu.parse_rows(log)
    assert pass_runner.processes_in(rows) == 1
    assert pass_runner.processes_in([*rows[:-1], {**rows[-1], "Process ID": 4242}]) == 2
    output = tmp_path / "output.txt"
    exited = subprocess.Popen(["true"])
    exited.wait()
    waiting = early_start.Waiting(process=exited, port=0, output=output)
    output.write_text("==PROF== Waiting for profiler to attach on ports 1-2\n")
    assert early_start.alone(waiting, pass_runner.Pass(log, 1.0, processes=1))
    assert not early_start.alone(waiting, pass_runner.Pass(log, 1.0, processes=2))
    assert not early_start.alone(waiting, pass_runner.Pass("", 1.0, timer=pass_runner.Timer.cupti,
                                                           own_process=False))
    assert not early_start.alone(waiting, pass_runner.Pass("{}", 1.0, timer=pass_runner.Timer.torch,
                                                           processes=0))
    output.write_text("")                      # never reached a CUDA call, and exited
    assert not early_start.alone(waiting, pass_runner.Pass(log, 1.0, processes=1))


def test_a_pass_one_faster_than_the_early_starts_start_waits_for_it(tmp_path):
    """A pass 1 that ends before ncu has said the early-started program waits (a short
    program, a loaded machine: seen in CI) waits for the line, instead of timing the
    program again alone."""
    import threading
    from rooflint.measure import early_start, pass_runner
    output = tmp_path / "output.txt"
    output.write_text("")
    with subprocess.Popen(["sleep", "30"]) as running:
        waiting = early_start.Waiting(process=running, port=0, output=output)
        later = threading.Timer(0.3, output.write_text,
                                ["==PROF== Waiting for profiler to attach on ports 1-2\n"])
        later.start()
        try:
            assert early_start.alone(waiting, pass_runner.Pass("", 1.0, processes=1))
        finally:
            later.join()
            running.kill()


def test_pass_two_attaches_again_until_the_waiting_program_can_be_attached(fake_ncu):
    """The early-started program can be attached only from its first CUDA call, which it
    may not have reached when pass 1 ends: ncu then finds no attachable process, and pass 2
    attaches again until it can, saying once why it waits."""
    env, state = fake_ncu
    outcome = rooflint("profile", "--coverage", "0.99", "--", sys.executable, "-c", "pass",
                       env={**env, "FAKE_NCU_NOT_YET": "3"})
    assert outcome.code == 0, outcome.stderr
    assert len(by_mode(state)["attach"]) == 4
    assert outcome.stderr.count("waiting for the program to reach its first CUDA call") == 1
    assert "not profiled in pass 2" not in outcome.stdout
    assert waiting_program_is_gone(state)


def test_a_program_that_ends_before_it_can_be_attached_says_so(fake_ncu, tmp_path):
    """Pass 2's program failing before its first CUDA call is not attached to for ever:
    pass 2 fails in the program's own words, and pass 1's times are kept."""
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    outcome = rooflint("profile", "--coverage", "0.99", "--json", str(out), "--",
                       sys.executable, "-c", "pass",
                       env={**env, "FAKE_NCU_NOT_YET": "1000", "FAKE_NCU_DIES_WAITING": "5"})
    assert "Traceback" not in outcome.stderr
    assert len(by_mode(state)["attach"]) == 1
    stopped = json.loads(out.read_text())["settings"]["pass2_stopped"]
    assert stopped.startswith("pass 2 failed: the program ended (exit 5) before ncu could "
                              "attach to it") and "no module named 'data'" in stopped
    assert waiting_program_is_gone(state)


def test_a_program_failing_in_pass_one_says_why_in_its_own_words(fake_ncu):
    env, state = fake_ncu
    outcome = rooflint("profile", "--", sys.executable, "-c",
                       "import sys; print('out of memory', file=sys.stderr); sys.exit(3)",
                       env=env)
    assert outcome.code == 2 and "Traceback" not in outcome.stderr
    last = outcome.stderr.strip().splitlines()[-1]
    assert "failed under ncu (exit 3)" in last and "out of memory" in last
    assert waiting_program_is_gone(state)


def test_a_program_failing_only_in_pass_two_says_so(fake_ncu, tmp_path):
    env, state = fake_ncu
    marker = tmp_path / "ran-once"
    second_run_fails = (f"import pathlib, sys; m = pathlib.Path({str(marker)!r}); "
                        f"sys.exit(4) if m.exists() else m.touch()")
    outcome = rooflint("profile", "--", sys.executable, "-c", second_run_fails, env=env)
    assert outcome.code == 2 and "Traceback" not in outcome.stderr
    assert "failed under ncu (exit 4)" in outcome.stderr.strip().splitlines()[-1]
    assert waiting_program_is_gone(state)


def test_a_model_file_gives_its_kernels_an_algorithmic_intensity(fake_ncu, tmp_path):
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    model = REPO / "examples" / "apps" / "transformer_block.models.yaml"
    outcome = rooflint("profile", "--coverage", "0.99", "--model", str(model), "--json",
                       str(out), "--", sys.executable, "-c", "pass", env=env)
    assert outcome.code == 0, outcome.stderr
    variants = {v["name"]: v for v in json.loads(out.read_text())["families"][0]["variants"]}
    assert variants["LayerNorm"]["point"]["algorithmic_ai"] == 2.0
    assert "model" not in variants["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT"]["flops"]


def test_a_bad_model_file_is_refused_before_the_program_runs(fake_ncu, tmp_path):
    env, state = fake_ncu
    model = tmp_path / "models.yaml"
    model.write_text("kernels:\n  - {match: norm, flops: 2 * B, bytes: 8}\n")
    outcome = rooflint("profile", "--model", str(model), "--", sys.executable, "-c", "pass",
                       env=env)
    assert_one_line_error(outcome, 2, str(model), "kernels[0].flops")
    assert not (state / "calls.jsonl").exists()


def test_profile_json_and_tables_to_standard_output(fake_ncu, tmp_path):
    """`--json -` prints the result document on standard output (the tables go to standard
    error) and writes no file called -; so does `--csv -` with a CSV table."""
    env, _ = fake_ncu
    done = rooflint("profile", "--coverage", "0.99", "--json", "-", "--markdown",
                    str(tmp_path / "t.md"), "--", sys.executable, "-c", "pass", env=env,
                    cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout)["settings"]["mode"] == "profile"
    assert not (tmp_path / "-").exists() and (tmp_path / "t.md").read_text().startswith("| family")
    piped = rooflint("profile", "--coverage", "0.99", "--csv", "-", "--", sys.executable, "-c",
                     "pass", env=env, cwd=tmp_path)
    assert piped.code == 0, piped.stderr
    assert piped.stdout.startswith("family,variant,") and "kernel" in piped.stderr
    paged = rooflint("profile", "--coverage", "0.99", "--json", str(tmp_path / "r.json"),
                     "--html", str(tmp_path / "r.html"), "--", sys.executable, "-c", "pass",
                     env=env, cwd=tmp_path)
    assert paged.code == 0, paged.stderr
    page = (tmp_path / "r.html").read_text()
    assert page.lower().startswith("<!doctype html") and "<h2>(1) r.json</h2>" in page
    assert str(tmp_path) not in page          # named by the file's name, never its folders


def test_stopping_the_early_start_waits_until_its_group_has_exited():
    """ncu's launcher is reaped at once, but the program it started may still hold the GPU's
    memory (a JAX program killed by `timeout` left the GPU full for the next command): the
    stop returns only once no process of the group runs."""
    import time
    from rooflint.measure import pass_runner
    group = subprocess.Popen(["sh", "-c", "sleep 0.6 & wait"], start_new_session=True)
    began = time.monotonic()
    pass_runner._wait_while_running(group.pid)
    assert time.monotonic() - began > 0.5
    assert group.poll() is not None or not pass_runner._running_in(group.pid)
    group.wait()


def test_stopping_the_early_start_kills_what_outlived_its_leader():
    """A program that ended may leave workers behind in its group (torch.compile's): they
    are killed, not waited for until GROUP_EXIT_S."""
    import time
    from rooflint.measure import pass_runner
    group = subprocess.Popen(["sh", "-c", "sleep 30 & exit 0"], start_new_session=True)
    group.wait()                                        # the leader is gone, its child not
    assert pass_runner._running_in(group.pid)
    began = time.monotonic()
    pass_runner.stop(group)
    assert time.monotonic() - began < 2 and not pass_runner._running_in(group.pid)


def test_stopping_a_job_kills_the_ranks_their_ncu_started_in_sessions_of_their_own(tmp_path):
    """``ncu --mode launch`` starts a session of its own, so the ranks of a torchrun job,
    each under its own ncu, are in no group of the launcher's: four FSDP2 ranks stopped at
    pass 2's limit on four H200s were left running on their GPUs after rooflint ended.
    Here a stand-in launcher starts two "ncu"s in sessions of their own, each with a
    "rank" below it; the stop leaves none of them."""
    import os
    import time
    from rooflint.measure import pass_runner
    pids = tmp_path / "pids"
    rank = ("import os, subprocess, sys, time; "
            "child = subprocess.Popen(['sleep', '60']); "
            "open(sys.argv[1], 'a').write(f'{os.getpid()} {child.pid}\\n'); time.sleep(60)")
    launcher = ("import subprocess, sys, time; "
                f"[subprocess.Popen([sys.executable, '-c', {rank!r}, sys.argv[1]], "
                "start_new_session=True) for _ in range(2)]; time.sleep(60)")
    job = subprocess.Popen([sys.executable, "-c", launcher, str(pids)], start_new_session=True)
    deadline = time.monotonic() + 20
    while len(pids.read_text().split() if pids.exists() else []) < 4:
        assert time.monotonic() < deadline and job.poll() is None
        time.sleep(0.05)
    ranks = [int(pid) for pid in pids.read_text().split()]
    assert all(os.getsid(pid) != os.getsid(job.pid) for pid in ranks[::2])
    pass_runner.stop(job)
    time.sleep(0.2)
    assert still_running(ranks) == []
