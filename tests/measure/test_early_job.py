"""A torchrun job's pass 2 started while its pass 1 runs (program._early_job): each rank
under its own ``ncu --mode launch`` (rank_launch.py) on ports of its own, attached once pass
1 has chosen, every rank at once, their logs joined; only where torchrun's rendezvous is on
a free port (``--standalone``) and it says how many ranks it starts. End to end through the
stand-in ``ncu`` (fake_ncu.py) and torchrun (fake_torchrun.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fake_ncu import NCU, by_mode, stand_in, still_running
from fake_torchrun import stand_in_torchrun
from rooflint.formats.ncu_log import ID, joined, parse_rows
from rooflint.measure import program
from rooflint.measure.early_start import LAUNCH, PORTS
from rooflint.measure.trace_bootstrap import PASS_TWO

BOOT, SHIM = str(program.BOOTSTRAP), str(program.RANK_LAUNCH)


@pytest.mark.parametrize("command, ranks", [
    (["torchrun", "--standalone", "--nproc_per_node=2", "t.py"], 2),
    (["torchrun", "--standalone", "--nproc-per-node", "4", "-m", "pkg.train"], 4),
    (["torchrun", "--standalone", "t.py"], 1),
    (["torchrun", "--nproc_per_node=2", "t.py"], None),     # a fixed port: 29500
    (["torchrun", "--rdzv-endpoint=localhost:0", "--nproc_per_node=2", "t.py"], None),
    (["torchrun", "--standalone", "--nproc_per_node=gpu", "t.py"], None),
    (["torchrun", "--standalone", "--nproc_per_node=0", "t.py"], None),
])
def test_a_job_starts_early_only_with_a_rendezvous_of_its_own_and_a_count_of_ranks(
        command, ranks, monkeypatch):
    monkeypatch.setattr(program, "interpreter_of", lambda _: ["/opt/py/bin/python3"])
    assert program.TorchrunCommand.of(command).ranks_here == ranks


def test_each_early_rank_runs_its_script_under_its_own_ncu_through_the_bootstrap(monkeypatch):
    monkeypatch.setattr(program, "interpreter_of", lambda _: ["/opt/py/bin/python3"])
    monkeypatch.setattr(program, "ncu_executable", lambda: "/opt/ncu")
    job = program.TorchrunCommand.of(["torchrun", "--standalone", "--nproc_per_node=2",
                                      "train.py", "--steps", "5"])
    assert program.ranks_waiting_for_ncu(job, 4000) == [
        "torchrun", "--standalone", "--nproc_per_node=2", "--no-python", "/opt/py/bin/python3",
        SHIM, "4000", str(PORTS), "/opt/ncu", *LAUNCH, "--", "/opt/py/bin/python3", BOOT,
        PASS_TWO, "0", "--", "train.py", "--steps", "5"]


def test_the_rank_launch_listens_on_its_local_ranks_ports(tmp_path):
    """rank_launch.py execs ncu with the options it was given and its port from ``BASE +
    PORTS * LOCAL_RANK``, the rank's program after its first ``--`` (the bootstrap's own
    ``--`` kept)."""
    ncu = tmp_path / "ncu"
    ncu.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    ncu.chmod(0o755)
    done = subprocess.run([sys.executable, SHIM, "5000", "2", str(ncu), *LAUNCH, "--", "py",
                           "b.py", PASS_TWO, "--", "t.py"], capture_output=True, text=True,
                          env={**os.environ, "LOCAL_RANK": "3"}, check=True)
    assert json.loads(done.stdout) == [*LAUNCH, "--port", "5006", "py", "b.py", PASS_TWO,
                                       "--", "t.py"]
    assert "application-only" in LAUNCH     # the rank's own process waits, not its children


def test_ranks_logs_join_into_one_page_numbered_on():
    page = (NCU / "h200-train-step-pass2.csv").read_text()
    one = parse_rows(page)
    both = parse_rows(joined([page, page]))
    assert len(both) == 2 * len(one)
    assert [row[ID] for row in both] == [float(i) for i in range(2 * len(one))]
    assert [{k: v for k, v in row.items() if k != ID} for row in both[len(one):]] == \
        [{k: v for k, v in row.items() if k != ID} for row in one]
    assert joined([page]) == page and joined([]) == ""


JOB = ["torchrun", "--standalone", "--nproc_per_node=2", "t.py"]


@pytest.fixture
def job(tmp_path, monkeypatch):
    """The stand-in torchrun and ncu on PATH, an empty t.py to run: the state folder."""
    env, state = stand_in(tmp_path)
    stand_in_torchrun(tmp_path / "bin")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("")
    return state


def test_a_jobs_pass_2_starts_early_and_attaches_each_rank_on_its_own_port(job):
    said = []
    first, second = program.two_passes(JOB, program.Filters(), None,
                                       lambda _: program.Choice(["k"], devices=(0,)),
                                       said.append)
    assert first.processes == 2 and second.attached and second.stopped is None
    seen = by_mode(job)
    launched = sorted(int(a[a.index("--port") + 1]) for a in seen["launch"])
    attached = sorted(int(a[a.index("--port") + 1]) for a in seen["attach"])
    assert len(launched) == 2 and launched == attached and launched[1] - launched[0] == PORTS
    assert all(a[a.index("--devices") + 1] == "0" for a in seen["attach"])
    assert "pass2" not in seen                       # no second run of the job
    recorded = parse_rows((NCU / "h200-transformer-block-pass2.csv").read_text())
    assert len(parse_rows(second.log)) == 2 * len(recorded)     # the stand-in profiles both


def test_a_job_whose_pass_1_saw_fewer_ranks_than_wait_runs_pass_2_on_its_own(job, monkeypatch):
    monkeypatch.setenv("FAKE_RANKS", "1")
    first, second = program.two_passes(JOB, program.Filters(), None,
                                       lambda _: program.Choice(["k"]), print)
    assert first.processes == 1 and not second.attached and second.log
    seen = by_mode(job)
    assert "attach" not in seen and len(seen["pass2"]) == 1    # the early job was stopped


def test_a_job_whose_ranks_find_no_free_ports_runs_pass_2_after_pass_1(job, monkeypatch):
    """`--nproc_per_node` beyond the ports free (two a rank): said, and pass 2 as before."""
    from rooflint.measure import early_start

    def none_free(count):
        raise early_start.NoFreePorts(f"no {count} free consecutive TCP ports")
    monkeypatch.setattr(early_start, "_free_ports", none_free)
    said = []
    first, second = program.two_passes(JOB, program.Filters(), None,
                                       lambda _: program.Choice(["k"]), said.append)
    assert first.processes == 2 and not second.attached and second.log
    assert "pass 2 after pass 1: no 4 free consecutive TCP ports" in said
    seen = by_mode(job)
    assert "launch" not in seen and "attach" not in seen and len(seen["pass2"]) == 1


def _hung_ranks(state) -> list[int]:
    hung = state / "hung.pids"
    return [int(p) for p in hung.read_text().split()] if hung.exists() else []


@pytest.fixture
def quick_ticks(monkeypatch):
    """Pass 2's progress ticking every 0.1 s, so that its limits are reached in a test."""
    from rooflint.measure import pass_runner
    monkeypatch.setattr(pass_runner, "PROGRESS_EVERY_S", 0.1)


def test_a_job_whose_ranks_hang_is_stopped_at_its_limit_and_none_of_them_is_left(
        job, monkeypatch, quick_ticks):
    """Four FSDP2 ranks on four H200s hung in pass 2 (every rank attached at once); stopped
    at the limit, pass 1's result was kept, but the ranks, each in the session its ncu
    started, were left running on their GPUs after rooflint ended."""
    import time
    monkeypatch.setenv("FAKE_NCU_HANGS", "every rank")
    monkeypatch.setattr(program, "SEVERAL_PROCESSES_LIMIT", 0)
    monkeypatch.setattr(program, "SEVERAL_PROCESSES_MORE_S", 1.0)
    began = time.monotonic()
    first, second = program.two_passes(JOB, program.Filters(), None,
                                       lambda _: program.Choice(["k"], devices=(0,)),
                                       lambda _: None)
    assert first.processes == 2 and second.attached
    assert second.stopped and "more than 0x pass 1's time" in second.stopped.why
    assert time.monotonic() - began < 15
    assert len(_hung_ranks(job)) == 2 and still_running(_hung_ranks(job)) == []


def test_one_ranks_failed_attach_stops_the_others_at_once(job, monkeypatch, quick_ticks):
    """Rank 1's attach fails while rank 0's goes on (its rank waiting for rank 1's
    collectives for ever): the job is stopped then, not at the limit (minutes), with the
    failure said, and no rank left running."""
    import time
    from rooflint.measure import early_start
    base = 47000
    monkeypatch.setattr(early_start, "_free_ports", lambda count: base)
    monkeypatch.setenv("FAKE_NCU_HANGS", str(base + PORTS))
    began = time.monotonic()
    first, second = program.two_passes(JOB, program.Filters(), None,
                                       lambda _: program.Choice(["k"], devices=(0,)),
                                       lambda _: None)
    assert second.stopped and second.stopped.why.startswith("pass 2 failed: ")
    assert "connection to the target process was lost" in second.stopped.why
    assert time.monotonic() - began < 15
    assert still_running(_hung_ranks(job)) == []
