"""torchrun's ranks under PyTorch's profiler (measure/program.rank_trace_pass): the
launcher's command run with each rank through the bootstrap, and the ranks' traces merged
into the job's (formats/ranks.merged) as the recorder's records are, each rank's kernels
then judged as that process alone would be. The merge is checked on the H200 training
step's recorded trace taken as two ranks."""

from __future__ import annotations

import json
import lzma
import sys

import pytest

from edges import REPO
from fake_torchrun import stand_in_torchrun
from rooflint.engine.program import pass_one
from rooflint.formats.ranks import PROCESS_KEY, RANK_VARIABLES, merged, ranks_of
from rooflint.formats.trace_events import LINE_RANGE, launches
from rooflint.formats.trace_timing import program_timing
from rooflint.measure import program, trace_bootstrap
from rooflint.measure.pass_runner import Pass, Timer

STEP = REPO / "tests" / "fixtures" / "trace" / "h200-train-step-trace.json.xz"
BOOT = str(program.BOOTSTRAP)


@pytest.fixture(scope="module")
def step() -> dict:
    return json.loads(lzma.decompress(STEP.read_bytes()))


def _as_rank(trace: dict, pid: int, rank: int) -> dict:
    return {**trace, PROCESS_KEY: {"pid": pid, "rank": rank, "host": "node-a"}}


@pytest.mark.parametrize("command, expected", [
    (["torchrun", "--standalone", "--nproc_per_node=2", "train.py", "--steps", "5"],
     ["torchrun", "--standalone", "--nproc_per_node=2", "--no-python", "/opt/py/bin/python3",
      BOOT, "T", LINE_RANGE, "0", "--", "train.py", "--steps", "5"]),
    (["torchrun", "--nnodes", "1", "--nproc-per-node", "4", "-m", "pkg.train", "--lr", "3"],
     ["torchrun", "--nnodes", "1", "--nproc-per-node", "4", "--no-python",
      "/opt/py/bin/python3", BOOT, "T", LINE_RANGE, "0", "--", "-m", "pkg.train", "--lr", "3"]),
    ([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "t.py"],
     [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--no-python",
      sys.executable, BOOT, "T", LINE_RANGE, "0", "--", "t.py"]),
    (["torchrun", "--no-python", "./train.sh"], None),
    (["torchrun", "--run-path", "/abs/train.py"], None),
    (["torchrun", "--nproc_per_node=2", "train.sh"], None),
    (["torchrun", "--nproc_per_node=2"], None),
    (["mpirun", "-np", "2", "python", "train.py"], None),
    (["bash", "run.sh"], None),
])
def test_torchruns_ranks_run_through_the_bootstrap(command, expected, monkeypatch):
    """Its options kept (a value after "=" or as the next word), `--no-python` and the
    interpreter torchrun runs under put before the bootstrap, which runs the script (or
    the module) as python would; any command it cannot rewrite soundly is left to CUPTI's
    recorder."""
    monkeypatch.setattr(program, "interpreter_of", lambda _: ["/opt/py/bin/python3"])
    assert program.ranks_through_bootstrap(command, "T") == expected


def test_the_interpreter_is_torchruns_first_line(tmp_path, monkeypatch):
    script = tmp_path / "torchrun"
    script.write_text("#!/usr/bin/env python3\nimport sys\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert program.interpreter_of("torchrun") == ["/usr/bin/env", "python3"]
    script.write_text("not a script\n")
    assert program.interpreter_of("torchrun") is None
    assert program.interpreter_of("no-such-launcher") is None


def test_the_bootstrap_and_the_merge_name_a_traces_process_alike():
    """The bootstrap imports nothing of rooflint, so the key and the ranks' variables are
    written twice."""
    assert trace_bootstrap.PROCESS == PROCESS_KEY
    assert trace_bootstrap.RANK_VARIABLES == RANK_VARIABLES


def test_two_ranks_traces_merge_into_one_job_whose_ranks_are_each_the_trace_alone(step):
    """Each rank's launches keep their operators and lines (the ranks number their
    correlation ids alike, so they are moved apart), and each rank's kernels, judged
    alone, are the single trace's."""
    job = merged([_as_rank(step, 4242, 0), _as_rank(step, 4243, 1)])
    assert [(r.rank, r.process, r.host) for r in ranks_of(job)] == \
        [(0, 4242, "node-a"), (1, 4243, "node-a")]
    alone = launches(step)
    both = launches(job)
    assert len(both) == 2 * len(alone)
    assert sorted((x.line or "", x.operator or "") for x in both) == \
        sorted(2 * [(x.line or "", x.operator or "") for x in alone])
    first = Pass("", 10.0, timer=Timer.torch, processes=2, own_process=False, trace=job)
    one, _ = pass_one(Pass("", 10.0, timer=Timer.torch, trace=step), program.Filters())
    expected = sorted((k.identity, len(k.durations_s), k.tensor_precisions) for k in one.kernels)
    _, ranks = pass_one(first, program.Filters())
    assert [rank.rank for rank, _ in ranks] == [0, 1]
    for _, theirs in ranks:
        assert sorted((k.identity, len(k.durations_s), k.tensor_precisions)
                      for k in theirs.kernels) == expected


def test_a_trace_without_its_process_still_merges_apart(step):
    job = merged([step, step])
    assert len({r.process for r in ranks_of(job)}) == 2


def test_a_launchers_pass_1_is_its_ranks_traces_where_they_were_written(monkeypatch):
    traced = Pass("", 3.0, timer=Timer.torch, processes=2, own_process=False,
                  trace={"traceEvents": []})
    monkeypatch.setattr(program, "rank_trace_pass", lambda *_: traced)
    monkeypatch.setattr(program, "kernel_trace_pass", lambda *_: pytest.fail("recorder ran"))
    assert program.every_process_pass(["torchrun", "t.py"], program.Filters(), None,
                                      print) is traced
    recorded = Pass("", 3.0, timer=Timer.cupti, processes=2)
    monkeypatch.setattr(program, "rank_trace_pass", lambda *_: None)
    monkeypatch.setattr(program, "kernel_trace_pass", lambda *_: recorded)
    assert program.every_process_pass(["torchrun", "t.py"], program.Filters(), None,
                                      print) is recorded


@pytest.fixture
def fake_torchrun(tmp_path, monkeypatch):
    launcher = stand_in_torchrun(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{launcher.parent}:/usr/bin:/bin")
    return launcher


def test_a_launchers_ranks_traces_are_read_and_merged(fake_torchrun, monkeypatch):
    said = []
    found = program.rank_trace_pass(["torchrun", "t.py"], None, said.append)
    assert found.timer is Timer.torch and found.processes == 2 and not found.own_process
    assert [(r.rank, r.process, r.device) for r in ranks_of(found.trace)] == \
        [(0, 101, 0), (1, 102, 1)]
    assert len(launches(found.trace)) == 2 and all(x.traced_call for x in launches(found.trace))
    monkeypatch.setenv("FAKE_RANKS", "none")
    assert program.rank_trace_pass(["torchrun", "t.py"], None, said.append) is None
    assert said == ["pass 1: no rank wrote PyTorch's trace: timing every launch another way"]


def test_a_launchers_failing_ranks_fail_pass_1_in_their_own_words(fake_torchrun, monkeypatch):
    from rooflint.common.errors import RooflintError
    monkeypatch.setenv("FAKE_RANKS", "fail")
    with pytest.raises(RooflintError, match="the command failed"):
        program.rank_trace_pass(["torchrun", "t.py"], None, print)


# The traces of a DDP job's and an FSDP2 job's two ranks as the bootstrap wrote them
# (examples/apps/ddp_train.py --steps 10 and fsdp_train.py --steps 5 under torchrun on two
# H200s, 2026-11-29: 3 warm-up steps then those timed), each kept to its kernels, copies,
# CUDA calls and the program's and PyTorch's own ranges.
RANK_TRACES = REPO / "tests" / "fixtures" / "ranks"


def _rank_traces(job: str) -> list[dict]:
    return json.loads(lzma.decompress((RANK_TRACES / f"h200x2-{job}-rank-traces.json.xz")
                                      .read_bytes()))


@pytest.mark.parametrize("job, steps", [("ddp", 13), ("fsdp", 8)])
def test_a_merged_jobs_steps_are_its_programs_on_each_rank(job, steps):
    """A DDP step holds an `nccl:all_reduce` range for each gradient bucket (62 in the
    job), which repeats more than any range of the program's: steps are never told by a
    collective's range, and two ranks' ranges never make one rank's steps twice."""
    traces = _rank_traces(job)
    for trace in traces:
        assert program_timing(trace).steps.count == steps
    timing = program_timing(merged(traces))
    assert timing.steps.count == steps
    assert timing.communication.ranks == 2 and timing.communication.steps == steps


def test_each_rank_of_a_merged_job_is_timed_over_its_own_steps():
    """The job's communication is the mean of the ranks', each over its own steps: the
    same figures as each rank's trace gives alone."""
    traces = _rank_traces("ddp")
    alone = [program_timing(trace).communication for trace in traces]
    job = program_timing(merged(traces)).communication
    assert job.step_exposed_s == pytest.approx(
        sum(c.step_exposed_s for c in alone) / 2, rel=1e-9)
    assert job.step_least_exposed_s == pytest.approx(
        min(c.step_exposed_s for c in alone), rel=1e-9)


def test_ranks_traces_counted_from_different_base_times_merge_on_one_clock():
    """PyTorch's profiler writes each process's times from its own base time: a rank whose
    base is a second later has its events moved a second later."""
    first, second = _rank_traces("fsdp")
    later = {**second, "baseTimeNanoseconds": second["baseTimeNanoseconds"] - 10**9,
             "traceEvents": [{**e, "ts": e["ts"] + 1e6} for e in second["traceEvents"]]}
    same = merged([first, second])["traceEvents"]
    moved = merged([first, later])["traceEvents"]
    assert [e["ts"] for e in moved] == pytest.approx([e["ts"] for e in same], abs=1e-3)
