"""`rooflint profile` over a long or broken run, on a machine without a GPU (the stand-in
`ncu` of test_profile_passes.py, which writes back the H200 logs recorded from
examples/apps/transformer_block.py): a pass that runs on says how long it has run, and a
pass 2 that fails or is interrupted keeps pass 1's kernel times (the table, the JSON, a
reason in each chosen kernel's row) and exits non-zero with one line saying what
happened; an interrupted pass 1 keeps nothing. Interrupts are sent to rooflint's whole
process group, as a terminal's Ctrl-C and GNU ``timeout`` send them."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edges import NO_GPU, REPO, Outcome, rooflint
from fake_ncu import waiting_program_is_gone

TRACE = Path(__file__).parents[1] / "fixtures" / "trace" / "h100-step-trace.json"
PASS1_ANNOUNCED = "pass 1: timing every kernel launch of"


def program(tmp_path: Path, first: str = "pass", later: str = "pass") -> list[str]:
    """``python -c`` a program whose first run (pass 1) runs the statement ``first`` and
    whose later runs (pass 2) run ``later``."""
    ran = tmp_path / "ran-once"
    code = (f"import pathlib, sys, time\nif pathlib.Path({str(ran)!r}).exists():\n    {later}\n"
            f"else:\n    pathlib.Path({str(ran)!r}).touch()\n    {first}\n")
    return [sys.executable, "-c", code]


def start(*args: str, env: dict[str, str], every_s: float | None = None,
          background: bool = False) -> subprocess.Popen:
    """``rooflint ARGS`` in a process group of its own (as a shell runs a job), saying a
    long pass's progress every ``every_s`` seconds instead of every PROGRESS_EVERY_S.

    It takes Ctrl-C as a job in a terminal's foreground does, whatever pytest inherited,
    or, ``background``, ignores it as a script's ``rooflint ... &`` does: a background
    job starts with SIGINT ignored, which Python and every program it starts keep, so a
    test that sends SIGINT installs the handler it relies on (`pytest &` had failed)."""
    env = {**os.environ, **NO_GPU, **env, "PYTHONPATH": str(REPO)}
    faster = (f"import rooflint.measure.pass_runner as m; m.PROGRESS_EVERY_S = {every_s}; "
              if every_s else "")
    handler = "signal.SIG_IGN" if background else "signal.default_int_handler"
    code = (f"import signal; signal.signal(signal.SIGINT, {handler}); " + faster
            + "from rooflint.commands.cli import app; app(prog_name='rooflint')")
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)


def finish(process: subprocess.Popen) -> Outcome:
    stdout, stderr = process.communicate(timeout=120)
    return Outcome(process.returncode, stdout, stderr)


def signal_when_ready(process: subprocess.Popen, *ready: Path, sig: int) -> None:
    """``sig`` to the process group once every file in ``ready`` exists."""
    deadline = time.monotonic() + 60
    while not all(p.exists() for p in ready):
        assert process.poll() is None and time.monotonic() < deadline, finish(process)
        time.sleep(0.05)
    os.killpg(process.pid, sig)


def interrupt_once(process: subprocess.Popen, *ready: Path, sig: int = signal.SIGINT
                   ) -> Outcome:
    """``sig`` to the process group once every file in ``ready`` exists; how it ended."""
    signal_when_ready(process, *ready, sig=sig)
    return finish(process)


# Where no CUPTI recorder can be built (no nvcc here), pass 1 says it falls back to ncu; where
# a toolkit without a driver is (CI's machine), the rotation's engine is tried, said, and
# fails to link, unsaid.
FALLBACK = "timing every launch with Nsight Compute instead"
ENGINE_BUILD = "building the rotation's engine with nvcc"


def said(outcome: Outcome) -> list[str]:
    """What rooflint said, less what depends on the machine's CUDA toolkit (FALLBACK,
    ENGINE_BUILD)."""
    return [line for line in outcome.stderr.splitlines()
            if line.strip() and FALLBACK not in line and ENGINE_BUILD not in line]


def progress(outcome: Outcome, step: str) -> list[str]:
    return [line for line in said(outcome)
            if re.fullmatch(rf"rooflint: {step}: \d+ s so far", line)]


def test_a_long_pass_says_how_long_it_has_run_no_faster_than_asked(fake_ncu, tmp_path):
    env, _ = fake_ncu
    out = tmp_path / "profile.json"
    every_s = 0.4
    outcome = finish(start("profile", "--coverage", "0.99", "--json", str(out), "--",
                           *program(tmp_path, "time.sleep(1.5)", "time.sleep(1.5)"),
                           env=env, every_s=every_s))
    assert outcome.code == 0, outcome.stderr
    settings = json.loads(out.read_text())["settings"]
    for step, wall_s in (("pass 1", settings["pass1_wall_s"]),
                         ("pass 2", settings["pass2_wall_s"])):
        lines = progress(outcome, step)
        assert 2 <= len(lines) <= wall_s / every_s + 1, (step, wall_s, outcome.stderr)
    assert "so far" not in outcome.stdout                 # stderr only: the table is intact


def test_a_pass_two_waiting_to_attach_says_how_long_it_has_run(fake_ncu, tmp_path):
    """Attaching again and again to a program not yet attachable is a pass of short steps:
    its progress is said as a long pass's is."""
    env, _ = fake_ncu
    outcome = finish(start("profile", "--coverage", "0.99", "--", *program(tmp_path),
                           env={**env, "FAKE_NCU_NOT_YET": "10"}, every_s=0.4))
    assert outcome.code == 0, outcome.stderr
    assert len(progress(outcome, "pass 2")) >= 2, outcome.stderr


def test_a_short_pass_says_nothing_more(fake_ncu, tmp_path):
    env, _ = fake_ncu
    outcome = finish(start("profile", "--coverage", "0.99", "--", *program(tmp_path),
                           env=env, every_s=3.0))
    assert outcome.code == 0, outcome.stderr
    assert not progress(outcome, "pass 1") and not progress(outcome, "pass 2")
    assert len(said(outcome)) == 2                # the two announcements, nothing else


def test_pass_two_failing_keeps_pass_ones_table_and_json(fake_ncu, tmp_path):
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    fails = "print('CUDA out of memory', file=sys.stderr); sys.exit(4)"
    outcome = rooflint("profile", "--coverage", "0.99", "--json", str(out), "--detail", "--",
                       *program(tmp_path, later=fails), env=env)
    assert outcome.code == 2 and "Traceback" not in outcome.stderr, outcome.stderr
    why = "pass 2 failed: the command failed under ncu (exit 4): CUDA out of memory"
    assert said(outcome)[-1] == (f"rooflint: {why}; {out} keeps pass 1's kernel times, "
                                 f"without counters")
    doc = json.loads(out.read_text())
    variants = doc["families"][0]["variants"]
    assert len(variants) == 5                               # every chosen kernel has a row
    for v in variants:
        assert v["counters"] is None and v["message"] == f"no counters: {why}"
        assert v["share"]["total_s"] > 0 and v["share"]["launches"] > 0   # pass 1's times
    assert doc["gpu"]["name"] == "NVIDIA H200" and doc["spec_id"] == "h200"   # pass 1's rows
    assert doc["settings"]["pass2_stopped"] == why
    assert "LayerNorm" in outcome.stdout and "no counters" in outcome.stdout
    # each kernel's row in the family table: its time from pass 1 and "no counters", not
    # an "OK" that said nothing
    rows = [line for line in outcome.stdout.splitlines()
            if line.startswith("LayerNorm ") and " us " in line]
    assert rows and all(row.rstrip().endswith("no counters") for row in rows), rows
    assert not re.search(r"\sOK\s*$", outcome.stdout, re.MULTILINE)
    assert "manifests' model" not in outcome.stdout          # a profile has no manifest
    assert waiting_program_is_gone(state)
    shown = rooflint("show", str(out))
    assert shown.code == 0 and "LayerNorm" in shown.stdout, shown.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_pass_two_exits_130_and_keeps_pass_ones_json(fake_ncu, tmp_path, sig):
    """Ctrl-C, or SIGTERM from ``timeout``, while pass 2's program runs."""
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    in_pass_two = tmp_path / "in-pass-2"
    running = start("profile", "--coverage", "0.99", "--json", str(out), "--",
                    *program(tmp_path, later=f"pathlib.Path({str(in_pass_two)!r}).touch(); "
                                             f"time.sleep(60)"), env=env)
    outcome = interrupt_once(running, in_pass_two, sig=sig)
    assert outcome.code == 130 and "Traceback" not in outcome.stderr, outcome.stderr
    assert said(outcome)[-1] == (f"rooflint: pass 2 was interrupted; {out} keeps pass 1's "
                                 f"kernel times, without counters")
    variants = json.loads(out.read_text())["families"][0]["variants"]
    assert len(variants) == 5
    assert all(v["message"] == "no counters: pass 2 was interrupted" for v in variants)
    assert waiting_program_is_gone(state)                 # the program under ncu, killed


def test_a_background_profile_is_not_the_terminals_to_interrupt(fake_ncu, tmp_path):
    """`rooflint profile ... &` from a script starts with SIGINT ignored: a Ctrl-C at the
    terminal is not its to take, and it profiles on; SIGTERM still stops it as it stops
    a profile in the foreground."""
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    in_pass_two = tmp_path / "in-pass-2"
    running = start("profile", "--coverage", "0.99", "--json", str(out), "--",
                    *program(tmp_path, later=f"pathlib.Path({str(in_pass_two)!r}).touch(); "
                                             f"time.sleep(60)"), env=env, background=True)
    signal_when_ready(running, in_pass_two, sig=signal.SIGINT)
    time.sleep(1)
    assert running.poll() is None, finish(running)
    outcome = interrupt_once(running, sig=signal.SIGTERM)
    assert outcome.code == 130 and "pass 2 was interrupted" in said(outcome)[-1], outcome
    assert waiting_program_is_gone(state)


def test_pass_two_interrupted_while_it_waits_to_attach_keeps_pass_ones_json(fake_ncu,
                                                                            tmp_path):
    """Ctrl-C while pass 2 attaches again and again to a program not yet attachable: as
    any interrupted pass 2, and the waiting program killed."""
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    running = start("profile", "--coverage", "0.99", "--json", str(out), "--",
                    *program(tmp_path), env={**env, "FAKE_NCU_NOT_YET": "1000"})
    outcome = interrupt_once(running, state / "refusals")
    assert outcome.code == 130 and "Traceback" not in outcome.stderr, outcome.stderr
    assert said(outcome)[-1] == (f"rooflint: pass 2 was interrupted; {out} keeps pass 1's "
                                 f"kernel times, without counters")
    assert waiting_program_is_gone(state)


def test_an_interrupted_pass_one_keeps_nothing(fake_ncu, tmp_path):
    env, state = fake_ncu
    out = tmp_path / "profile.json"
    in_pass_one = tmp_path / "in-pass-1"
    running = start("profile", "--json", str(out), "--",
                    *program(tmp_path, first=f"pathlib.Path({str(in_pass_one)!r}).touch(); "
                                             f"time.sleep(60)"), env=env)
    outcome = interrupt_once(running, in_pass_one, state / "waiting.pid")
    assert outcome.code == 130 and "Traceback" not in outcome.stderr, outcome.stderr
    first, last = said(outcome)
    assert PASS1_ANNOUNCED in first and last == "rooflint: interrupted; nothing written"
    assert not out.exists() and outcome.stdout == ""
    assert waiting_program_is_gone(state)       # the early-started pass 2 program too


FAKE_PYTHON = '''\
#!{python}
"""A Python whose PyTorch profiler wrote the recorded H100 trace; any other use of it is
the real interpreter's."""
import os, shutil, sys
if sys.argv[1:2] and sys.argv[1].endswith("trace_bootstrap.py") and sys.argv[2] != "--pass-two":
    shutil.copyfile({trace!r}, sys.argv[2])
    sys.exit(0)
os.execv({python!r}, [{python!r}, *sys.argv[1:]])
'''


def test_a_traced_pass_one_names_the_gpu_when_pass_two_fails(fake_ncu, tmp_path):
    """With no Nsight Compute row at all, the GPU comes from the profiler trace's
    deviceProperties, and the kernels keep the operators and lines that launched them."""
    env, _ = fake_ncu
    python = Path(env["PATH"].split(os.pathsep)[0]) / "python3"
    python.write_text(FAKE_PYTHON.format(python=sys.executable, trace=str(TRACE)))
    python.chmod(0o755)
    out = tmp_path / "profile.json"
    outcome = rooflint("profile", "--json", str(out), "--", str(python), "-c",
                       "import sys; sys.exit(5)", env=env)
    assert outcome.code == 2, outcome.stderr
    assert "pass 2 failed: the command failed under ncu (exit 5)" in said(outcome)[-1]
    doc = json.loads(out.read_text())
    assert doc["settings"]["pass1_timer"] == "torch"
    assert doc["gpu"]["name"] == "NVIDIA H100 80GB HBM3" and doc["gpu"]["sms"] == 132
    assert doc["spec_id"].startswith("h100")
    variants = doc["families"][0]["variants"]
    assert variants and all(v["counters"] is None for v in variants)
    assert any(v["share"]["origins"] for v in variants)


def _piped(args: list[str], env: dict[str, str], into: str) -> tuple[int, str]:
    """``rooflint ARGS`` with its output piped ``into`` a shell command (``2>&1 | true``:
    stderr too, to a reader gone before rooflint's first line): rooflint's status and what
    the shell command printed."""
    shell = (f"{shlex.join([sys.executable, '-m', 'rooflint', *args])} {into}; "
             f"echo status ${{PIPESTATUS[0]}}")
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **NO_GPU, **env, "PYTHONPATH": str(REPO)})
    *shown, status = done.stdout.strip().splitlines()
    return int(status.split()[1]), "\n".join(shown)


def test_a_reader_that_stops_reading_the_table_loses_no_file(fake_ncu, tmp_path):
    """`rooflint profile --json r.json --csv r.csv -- CMD | head`: the profile's minutes of
    work are in r.json and r.csv, though nobody read the table; rooflint ends as a program
    that a closed pipe ended does."""
    env, state = fake_ncu
    out, table = tmp_path / "profile.json", tmp_path / "profile.csv"
    status, shown = _piped(["profile", "--coverage", "0.99", "--json", str(out), "--csv",
                            str(table), "--", sys.executable, "-c", "pass"], env, "| true")
    assert status == 141 and shown == ""
    assert len(json.loads(out.read_text())["families"][0]["variants"]) == 5
    assert table.read_text().count("\n") == 6                    # a header and five rows
    assert waiting_program_is_gone(state)


def test_progress_lines_nobody_reads_do_not_stop_the_profile(fake_ncu, tmp_path):
    """`rooflint profile --json r.json -- CMD 2>&1 | true`: with the reader gone, the lines
    on stderr (progress, what pass 2 will profile) are dropped and the profile runs to its
    end."""
    env, _ = fake_ncu
    out = tmp_path / "profile.json"
    status, shown = _piped(["profile", "--coverage", "0.99", "--json", str(out), "--",
                            sys.executable, "-c", "pass"], env, "2>&1 | true")
    assert status == 141 and shown == ""
    assert len(json.loads(out.read_text())["families"][0]["variants"]) == 5
