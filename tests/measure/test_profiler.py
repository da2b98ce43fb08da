"""The profiler session of `rooflint run`: one ncu process for all of a GPU's families, its
log read when it ends, a new session after a worker dies; on a stand-in for ncu and the
worker (no GPU). The stand-in writes its CSV at exit, as ncu does."""

import sys
import textwrap
from dataclasses import asdict

import pytest

from recorded import RECORDED

from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest
from rooflint.measure import ncu, runner
from rooflint.formats.jobs import TimingJob

# Runs as "ncu LOG -- python -m rooflint.measure.worker": answers the worker protocol and
# logs one kernel per variant, in the NVTX range numbered as the variant's place in the
# session (counted across jobs), with DRAM bytes read = its position in its job + 1000 per job.
# The range column is named and written as ncu writes it under --nvtx (seen on an H100).
STAND_IN = textwrap.dedent('''
    import csv, json, sys
    log, rows, profiled = sys.argv[1], [], 0
    metrics = %r
    stack = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    def row(range_name, dram):
        values = {m: 1.0 for m in metrics} | {"%s": dram}
        ranges = '1  "<default domain>:%%s:none:none:none:none:none:none" ' %% range_name
        rows.append({"ID": len(rows), stack: ranges, "Kernel Name": "kernel", **values})
    def write_log():
        with open(log, "w") as f:
            print("==PROF== Disconnected from process 1", file=f)
            out = csv.DictWriter(f, ["ID", stack, "Kernel Name", *metrics],
                                 quoting=csv.QUOTE_ALL)
            out.writeheader()
            out.writerows(rows)
    open(log + ".argv", "w").write(" ".join(sys.argv[sys.argv.index("--") + 1:]))
    profiler = "--profiler" in sys.argv           # says hello with no device
    print(json.dumps({"event": "hello", "device": None if profiler else %r}), flush=True)
    for jobs, line in enumerate(sys.stdin):
        job = json.loads(line)
        for position, variant in enumerate(job["variants"]):
            print(json.dumps({"event": "start", "variant": variant["name"]}), flush=True)
            if variant["name"] == "copy_few_blocks":      # a fault: the process ends here
                write_log()
                sys.exit(3)
            row("%s/%%d" %% profiled, 1000 * jobs + position)
            profiled += 1
            print(json.dumps({"event": "measured", "measurement": {
                "variant": variant["name"], "status": "ok", "message": "profiled", "checks": [],
                "samples_s": [], "clocks": {}, "gpm": {}, "graph_samples_s": []}}), flush=True)
        print(json.dumps({"event": "done", "phases": {"profiled": 0.5}}), flush=True)
    write_log()
''') % (ncu.BASE_METRICS, ncu.DRAM_READ, asdict(RECORDED.gpu), ncu.VARIANT_RANGE)


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    starts = []

    def command(log, cache, metrics):
        starts.append(log)
        return [sys.executable, str(script), log, "--"]
    monkeypatch.setattr(runner.ncu, "command", command)
    return starts


def job(*variants):
    return resolve(load_manifest("stream"), {"N": 1024}, {"num_sms": 132}, TimingJob(),
                   list(variants)).job


def quiet(event, variant):
    pass


def test_one_session_profiles_every_family_and_keys_counters_by_ticket(stand_in):
    profiler = runner.Profiler("cold", ncu.Counting(tuple(ncu.BASE_METRICS)))
    profiler.start()
    first = profiler.profile(job("copy_scalar", "copy_float4"), 30, quiet)
    second = profiler.profile(job("triad"), 30, quiet)
    counters = profiler.close()
    assert len(stand_in) == 1                                     # one ncu for both jobs
    assert {name: c.dram_read for name, c in counters[first].items()} == \
        {"copy_scalar": 0, "copy_float4": 1}
    assert {name: c.dram_read for name, c in counters[second].items()} == {"triad": 1000}


def test_a_worker_that_dies_ends_its_session_and_the_next_job_gets_a_new_one(stand_in):
    profiler = runner.Profiler("cold", ncu.Counting(tuple(ncu.BASE_METRICS)))
    seen = []
    broken = profiler.profile(job("copy_scalar", "copy_few_blocks", "triad"), 30,
                              lambda event, variant: seen.append((event, variant)))
    after = profiler.profile(job("copy_float4"), 30, quiet)
    counters = profiler.close()
    assert len(stand_in) == 2
    assert list(counters[broken]) == ["copy_scalar"]              # triad was never run
    assert ("start", "triad") not in seen
    assert {name: c.dram_read for name, c in counters[after].items()} == {"copy_float4": 0}


def test_phases_of_each_job_go_to_its_own_stopwatch(stand_in):
    from rooflint.common.phases import Stopwatch
    profiler = runner.Profiler("cold", ncu.Counting(tuple(ncu.BASE_METRICS)))
    watches = [Stopwatch(), Stopwatch()]
    profiler.profile(job("copy_scalar"), 30, quiet, watches[0])
    profiler.profile(job("triad"), 30, quiet, watches[1])
    profiler.close()
    assert [w.seconds for w in watches] == [{"counters/profiled": 0.5}] * 2


def test_the_worker_runs_as_a_profiler_importing_ahead_what_it_will_need(stand_in):
    from pathlib import Path
    profiler = runner.Profiler("cold", ncu.Counting(tuple(ncu.BASE_METRICS)),
                               preload=("torch", "triton"))
    profiler.start()
    argv = Path(stand_in[0] + ".argv")
    profiler.profile(job("copy_scalar"), 30, quiet)
    assert argv.read_text().endswith("rooflint.measure.worker --profiler torch triton")
    profiler.close()


def test_a_profiler_given_nothing_to_profile_is_no_failure(stand_in):
    profiler = runner.Profiler("cold", ncu.Counting(tuple(ncu.BASE_METRICS)))
    profiler.start()                   # started with the run; every variant then failed
    assert profiler.close() == {}


def test_a_session_never_given_a_job_is_ended_at_once(tmp_path, monkeypatch):
    """Every family's counters came from the counter cache: the session started with the run
    is killed at close, not left to end as ncu ends one (a second of its teardown, here a
    stand-in that takes 30 s to end once its input closes)."""
    import time
    script = tmp_path / "slow_end.py"
    script.write_text(textwrap.dedent('''
        import json, sys, time
        print(json.dumps({"event": "hello", "device": None}), flush=True)
        sys.stdin.read()
        time.sleep(30)
    '''))
    monkeypatch.setattr(runner.ncu, "command",
                        lambda log, cache, metrics: [sys.executable, str(script), log, "--"])
    profiler = runner.Profiler("cold", ncu.Counting(tuple(ncu.BASE_METRICS)))
    profiler.start()
    profiler.sessions[-1].pool.start()          # its hello read: it is up and idle
    began = time.perf_counter()
    assert profiler.close() == {}
    assert time.perf_counter() - began < 5
    assert profiler.sessions[-1].pool.worker.process.poll() is not None
