"""`rooflint profile` of a job over NCCL (issue 49, item 3), from pass 1 on: the recorded
CUPTI trace of two DDP ranks on two H200s with the NCCL logs its processes would have
written (tests/fixtures/ranks, constructed), both passes stood in for; each rank's document
gets its collectives and the roofs of the host's calibration, and a program run under the
user's own NCCL_DEBUG is said to be so, once."""

from __future__ import annotations

import json
import lzma
import sys

import pytest

from edges import REPO
from rooflint.engine import program as engine
from rooflint.formats import calibration as calibrations
from rooflint.formats.gpus import find_spec
from rooflint.formats.ranks import ranks_of, trace_of
from rooflint.judge import collectives as judge
from rooflint.measure.pass_runner import Pass, Timer
from test_calibration import H200, STEPS
from test_interconnect import bus_steps_of_a_made_up_sweep

FIXTURES = REPO / "tests" / "fixtures" / "ranks"
TRACE = FIXTURES / "h200x2-ddp-nccl-pass1-trace.json.xz"
LOGS = [(FIXTURES / f"nccl.vm.{pid}.log").read_text() for pid in (890, 891)]


@pytest.fixture(scope="module")
def trace() -> dict:
    return json.loads(lzma.decompress(TRACE.read_bytes()))


def _profile(first: Pass, monkeypatch, planned: list | None = None
             ) -> tuple[engine.Profiled, list[str]]:
    """profile_program over ``first``, pass 2 profiling nothing (what it was to profile
    put into ``planned``)."""
    def two_passes(command, filters, logs, plan, say):
        (planned if planned is not None else []).append(plan(first))
        return first, Pass("", 0.0)
    monkeypatch.setattr(engine.passes, "two_passes", two_passes)
    monkeypatch.setattr(engine.passes, "driver_version", lambda: "580.159.04")
    monkeypatch.setattr(engine, "ncu_executable", lambda: "ncu")
    monkeypatch.setattr(engine, "ncu_version", lambda: "2025.3.1.0")
    monkeypatch.setattr(engine, "listed_for", lambda first: None)
    said: list[str] = []
    options = engine.ProfileOptions(command=[sys.executable, "ddp_train.py"],
                                    counter_cache=False)
    return engine.profile_program(options, said.append), said


@pytest.fixture
def calibrated(specs):
    """This host's calibration, with its interconnect, where the profile finds it."""
    calibration = calibrations.from_steps(
        H200, find_spec("h200", specs), STEPS + [vars(s) for s in bus_steps_of_a_made_up_sweep()],
        {})
    calibrations.save(calibration, calibrations.default_path("h200", H200.driver))
    return calibration


def test_each_ranks_document_holds_its_collectives_and_the_hosts_roofs(trace, calibrated,
                                                                       monkeypatch):
    first = Pass("", 20.0, timer=Timer.cupti, processes=2, own_process=False, trace=trace,
                 nccl_logs=LOGS)
    profiled, said = _profile(first, monkeypatch)
    assert profiled.result.collectives is None              # the job's is merged by `show`
    for rank in profiled.ranks:
        found = rank.collectives
        assert found.unplaced == {} and found.interconnect == calibrated.interconnect
        assert sum(len(c.calls) for c in found.calls) == 67
    assert not any("NCCL" in line for line in said)


def test_a_program_of_one_process_gets_its_own_processs_calls(trace, calibrated, monkeypatch):
    """One process's trace (``srun rooflint profile`` on each node), with every process's
    logs beside it: its own calls are matched, the other's left alone."""
    rank_0 = ranks_of(trace)[0]
    first = Pass("", 20.0, timer=Timer.cupti, processes=1, trace=trace_of(trace, rank_0),
                 nccl_logs=LOGS)
    found = _profile(first, monkeypatch)[0].result.collectives
    assert found.unplaced == {} and sum(len(c.calls) for c in found.calls) == 67


def test_the_users_own_nccl_debug_is_left_alone_and_said_once(trace, monkeypatch):
    monkeypatch.setenv("NCCL_DEBUG", "WARN")
    first = Pass("", 20.0, timer=Timer.cupti, processes=2, own_process=False, trace=trace)
    profiled, said = _profile(first, monkeypatch)
    assert [line for line in said if "NCCL" in line] == [
        "pass 1: NCCL_DEBUG is the program's own, left as it is: NCCL's log of its calls is "
        "not read, so its collectives' sizes are not known and they are not placed on the "
        "interconnect's roof"]
    assert [r.collectives.unplaced for r in profiled.ranks] == [{judge.NOT_READ: 67}] * 2


def test_a_jobs_pass_2_profiles_its_first_ranks_gpu_only(trace, calibrated, monkeypatch):
    """The ranks of a DDP job run the same kernels: pass 2 profiles them on rank 0's GPU
    (ncu --devices 0) and the other rank runs unprofiled, said before pass 2 starts; one
    process's profile names no device."""
    planned: list = []
    first = Pass("", 20.0, timer=Timer.cupti, processes=2, own_process=False, trace=trace,
                 nccl_logs=LOGS)
    profiled, said = _profile(first, monkeypatch, planned)
    selection = planned[0].selection
    assert selection[selection.index("--devices") + 1] == "0"
    assert [r.rank.device for r in profiled.ranks] == [0, 1]
    assert "on rank 0's GPU only (the other rank runs the same kernels unprofiled)" in said[1]
    assert profiled.result.settings.pass2_selection == selection

    alone: list = []
    _profile(Pass("", 20.0, timer=Timer.cupti, processes=1,
                  trace=trace_of(trace, ranks_of(trace)[0]), nccl_logs=LOGS),
             monkeypatch, alone)
    assert "--devices" not in alone[0].selection
