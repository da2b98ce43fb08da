"""Pass 1 from CUPTI's activity records, for a program PyTorch's profiler cannot enter: the
records' files read into a trace (recorded on an H200 from llm.c's dev/cuda layer-norm
benchmark, github.com/karpathy/llm.c at f1e2ace: the first 300 launches at block size 256), the
recorder's build found in a toolkit's layout, and every reason it cannot serve falling back
to Nsight Compute with that reason said."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from rooflint.judge.kernel_times import kernel_times_from_trace
from rooflint.common.errors import RooflintError
from rooflint.engine.program import device_from_trace
from rooflint.formats.kernel_records import UnreadableRecords, read_records
from rooflint.formats.ranks import ranks_of, trace_of
from rooflint.formats.trace_events import STOPPED, launches
from rooflint.measure import kernel_trace, program
from rooflint.measure.kernel_trace import KernelTraceUnavailable
from rooflint.measure.pass_runner import Pass, Timer
from stand_in_toolkit import stand_in_nvcc, stand_in_toolkit

RECORDED = Path(__file__).parents[1] / "fixtures" / "kernel-records" / "h200-layernorm-forward.tsv"
HEADER = "rooflint-kernel-trace\t1\t4242\n"


def _kernel(start: int, end: int, name: str = "scale(float*, int)", grid: str = "64\t1\t1",
            block: str = "256\t1\t1", correlation: int = 1) -> str:
    return f"K\t{start}\t{end}\t0\t7\t{grid}\t{block}\t{correlation}\t{name}\n"


def test_a_recorded_file_reads_as_the_launches_the_program_made():
    records = read_records([RECORDED.read_text()])
    assert len(records.pids) == 1 and not records.unfinished and not records.dropped
    found = launches(records.trace)
    assert found and all(x.name == "layernorm_forward_kernel3(float*, float*, float*, float "
                         "const*, float const*, float const*, int, int)" for x in found)
    kernels = kernel_times_from_trace(found)
    assert [(k.grid, k.block) for k in kernels] == [("(1024, 1, 1)", "(256, 1, 1)")]
    assert len(kernels[0].durations_s) == len(found)
    assert len(found) == 300
    assert all(5e-6 < d < 5e-5 for d in kernels[0].durations_s)   # about 13 us each
    assert kernels[0].origins == []                  # records hold kernels, not their callers
    device = records.trace["deviceProperties"][0]
    assert device["name"] == "NVIDIA H200" and device["numSms"] == 132
    assert (device["computeMajor"], device["computeMinor"]) == (9, 0)
    gpu = device_from_trace(records.trace, "580.159.04")   # where pass 2 named no GPU
    assert (gpu.name, gpu.sms, gpu.compute_capability) == ("NVIDIA H200", 132, "9.0")


def test_processes_are_counted_and_their_kernels_merged_in_time_order():
    first = HEADER + _kernel(2000, 3000, correlation=5) + "L\t0\n"
    second = "rooflint-kernel-trace\t1\t4243\n" + _kernel(1000, 1500, "other") + "L\t3\n"
    idle = "rooflint-kernel-trace\t1\t4244\nL\t0\n"       # a process that launched nothing
    records = read_records([first, second, idle])
    assert records.pids == [4242, 4243] and records.dropped == 3
    events = records.trace["traceEvents"]
    assert [e["name"] for e in events] == ["other", "scale(float*, int)"]
    assert events[1]["ts"] == 2.0 and events[1]["dur"] == 1.0          # microseconds
    assert events[1]["args"]["grid"] == [64, 1, 1] and events[1]["args"]["correlation"] == 5
    assert [e["args"]["process"] for e in events] == [4243, 4242]


def test_each_process_keeps_its_rank_and_host_and_a_file_from_before_ranks_has_none():
    ranked = "rooflint-kernel-trace\t1\t4242\t1\tnode-b\n" + _kernel(0, 10) + "L\t0\n"
    unranked = "rooflint-kernel-trace\t1\t4243\t-\tnode-a\n" + _kernel(5, 9) + "L\t0\n"
    older = HEADER.replace("4242", "4244") + _kernel(20, 30) + "L\t0\n"
    trace = read_records([ranked, unranked, older]).trace
    assert trace["processes"] == [{"pid": 4242, "rank": 1, "host": "node-b"},
                                  {"pid": 4243, "rank": None, "host": "node-a"},
                                  {"pid": 4244, "rank": None, "host": ""}]
    ranks = ranks_of(trace)
    assert [r.label for r in ranks] == ["rank 1", "process 4243", "process 4244"]
    assert [e["ts"] for e in trace_of(trace, ranks[1])["traceEvents"]] == [0.005]


def test_a_process_killed_mid_write_keeps_its_whole_lines_and_says_it_did_not_finish():
    cut = HEADER + _kernel(0, 10) + "K\t20\t30\t0\t7\t64\t1"
    records = read_records([cut])
    assert records.unfinished == 1 and len(records.trace["traceEvents"]) == 1


def test_cuptis_refusal_is_kept_as_said():
    records = read_records([HEADER + "E\tCUPTI refused the kernel activity\n"])
    assert records.refused == ["CUPTI refused the kernel activity"] and records.pids == []


@pytest.mark.parametrize("text", ["", "not a trace\n", "rooflint-kernel-trace\t2\t1\n",
                                  HEADER + _kernel(0, 10).replace("\t64\t", "\tx\t"),
                                  HEADER + "D\t0\tmany\t1\t9\t0\tGPU\n"])
def test_a_file_that_is_not_the_recorders_is_unreadable(text):
    with pytest.raises(UnreadableRecords):
        read_records([text])


def test_the_newest_kernel_record_of_cuptis_header_is_built_against(tmp_path):
    (tmp_path / "cupti_activity.h").write_text(
        "typedef struct { int a; } CUpti_ActivityKernel11;\n"
        "typedef struct { int a; } CUpti_ActivityKernel12;\n"
        "/* see CUpti_ActivityKernel4 in cupti_activity_deprecated.h */\n")
    assert kernel_trace.kernel_record(tmp_path) == "CUpti_ActivityKernel12"
    (tmp_path / "cupti_activity.h").write_text("/* no records */\n")
    with pytest.raises(KernelTraceUnavailable, match="declares no kernel record"):
        kernel_trace.kernel_record(tmp_path)


@pytest.mark.parametrize("include, lib", [("extras/CUPTI/include", "extras/CUPTI/lib64"),
                                          ("include", "lib64"),
                                          ("targets/x86_64-linux/include",
                                           "targets/x86_64-linux/lib")])
def test_cupti_is_found_in_each_layout_a_toolkit_has(tmp_path, include, lib):
    bare = tmp_path / "wrapper"            # /usr/local, where a script nvcc runs the real one
    (bare / "bin").mkdir(parents=True)
    root = stand_in_toolkit(tmp_path / "cuda", include, lib)
    assert kernel_trace.cupti_dirs([bare, root]) == (root / include, root / lib)


def test_a_toolkit_without_cupti_says_so(tmp_path):
    (tmp_path / "include").mkdir()
    with pytest.raises(KernelTraceUnavailable, match=f"has CUPTI .* looked in {tmp_path}"):
        kernel_trace.cupti_dirs([tmp_path])


def test_anothers_injection_or_no_nvcc_leaves_the_recorder_unbuilt(monkeypatch):
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/tool/libinject.so")
    with pytest.raises(KernelTraceUnavailable, match="set already"):
        kernel_trace.injection_library()
    monkeypatch.delenv("CUDA_INJECTION64_PATH")
    monkeypatch.setattr(kernel_trace, "find_nvcc", lambda: None)
    with pytest.raises(KernelTraceUnavailable, match="no nvcc"):
        kernel_trace.injection_library()


def _fake_nvcc(tmp_path: Path, script: str) -> Path:
    nvcc = stand_in_nvcc(tmp_path, script)
    (tmp_path / "cuda" / "include" / "cupti_activity.h").write_text("CUpti_ActivityKernel10")
    return nvcc


def test_a_failed_build_names_nvccs_error_and_caches_nothing(tmp_path, monkeypatch):
    # it writes the library half-way (-o's argument) before failing
    nvcc = _fake_nvcc(tmp_path, 'for a; do out=$a; done; echo partial > "$out"\n'
                                'echo "x.cpp(3): error: identifier KERNEL_RECORD" >&2; exit 1\n')
    monkeypatch.setattr(kernel_trace, "find_nvcc", lambda: nvcc)
    monkeypatch.setattr(kernel_trace, "toolkit_roots", lambda: [tmp_path / "cuda"])
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    with pytest.raises(KernelTraceUnavailable, match="error: identifier KERNEL_RECORD"):
        kernel_trace.injection_library()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]   # no half library


def test_the_recorder_is_built_once_per_toolkit_with_its_kernel_record(tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    # the stand-in nvcc writes its arguments and the library (-o's argument)
    nvcc = _fake_nvcc(tmp_path, f'echo "$@" >> {calls}\nfor a; do out=$a; done\n'
                                'touch "$out"\n')
    monkeypatch.setattr(kernel_trace, "find_nvcc", lambda: nvcc)
    monkeypatch.setattr(kernel_trace, "toolkit_roots", lambda: [tmp_path / "cuda"])
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    built = kernel_trace.injection_library()
    assert built.name == kernel_trace.LIBRARY and built.is_file()
    assert kernel_trace.injection_library() == built
    made = calls.read_text().splitlines()
    assert len(made) == 1 and "-DKERNEL_RECORD=CUpti_ActivityKernel10" in made[0]
    assert f"-rpath={tmp_path / 'cuda' / 'lib64'}" in made[0]


def test_pass_one_falls_back_to_nsight_compute_and_says_why(monkeypatch):
    said = []

    def unavailable(*_):
        raise KernelTraceUnavailable("no nvcc to build CUPTI's recorder with")
    monkeypatch.setattr(program, "kernel_trace_pass", unavailable)
    monkeypatch.setattr(program, "duration_pass", lambda *_: Pass("csv", 1.0))
    first = program.timing_pass(["./sgemm", "5"], program.Filters(), None, said.append)
    assert first.timer is Timer.ncu
    assert said == ["pass 1: no nvcc to build CUPTI's recorder with: timing every launch "
                    "with Nsight Compute instead"]


def test_an_nvtx_range_goes_to_nsight_compute_which_sees_it(monkeypatch):
    monkeypatch.setattr(program, "kernel_trace_pass", lambda *_: pytest.fail("CUPTI asked"))
    monkeypatch.setattr(program, "duration_pass", lambda *_: Pass("csv", 1.0))
    first = program.timing_pass(["./sgemm"], program.Filters(nvtx="timed"), None, print)
    assert first.timer is Timer.ncu


def test_a_c_program_is_timed_by_cuptis_records(monkeypatch):
    traced = Pass("", 1.0, timer=Timer.cupti, trace={"traceEvents": []})
    monkeypatch.setattr(program, "kernel_trace_pass", lambda *_: traced)
    monkeypatch.setattr(program, "duration_pass", lambda *_: pytest.fail("ncu asked"))
    assert program.timing_pass(["./sgemm", "5"], program.Filters(), None, print) is traced
    assert Timer.cupti.traced and not Timer.ncu.traced


def test_the_recorders_source_names_every_line_kind_the_reader_reads():
    source = kernel_trace.SOURCE.read_text()
    from rooflint.formats import kernel_records as k
    for kind in (k.KERNEL, k.DEVICE, k.LAST, k.REFUSED):
        assert f'"{kind}\\t' in source, kind
    assert f'"{k.MAGIC}\\t{k.VERSION}\\t' in source
    assert kernel_trace.RECORDS_FOLDER in source and "InitializeInjection" in source
    assert os.path.basename(kernel_trace.SOURCE) in kernel_trace.__doc__



OWN = "rooflint-kernel-trace\t1\tPID\n"      # a header naming the writing process


def _program(records: str, exit_code: int = 0) -> list[str]:
    """A stand-in program: writes ``records`` where the recorder would, as one process (PID
    in them its process id)."""
    code = (f"import os, pathlib, sys; folder = os.environ[{kernel_trace.RECORDS_FOLDER!r}]; "
            f"pathlib.Path(folder, 'kernels.1.tsv').write_text({records!r}.replace('PID', "
            f"str(os.getpid()))) if {records!r} else None; sys.exit({exit_code})")
    return [sys.executable, "-c", code]


def test_the_records_become_the_passes_trace_and_its_log(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_trace, "injection_library", lambda: tmp_path / "lib.so")
    log = tmp_path / "pass1-trace.json"
    first = kernel_trace.kernel_trace_pass(_program(OWN + _kernel(0, 5000) + "L\t0\n"),
                                           log, print)
    assert first.timer is Timer.cupti and first.processes == 1 and first.own_process
    assert [x.duration_s for x in launches(first.trace)] == [pytest.approx(5e-6)]
    assert json.loads(log.read_text()) == first.trace


def test_kernels_a_process_the_program_started_launched_are_not_its_own(tmp_path,
                                                                          monkeypatch):
    """torchrun's ranks, the program a shell script runs: their records name a process
    other than the one rooflint started, which early_start.alone must not take for the
    program's own (the early-started run's child is not held: it ran beside pass 1)."""
    monkeypatch.setattr(kernel_trace, "injection_library", lambda: tmp_path / "lib.so")
    child = kernel_trace.kernel_trace_pass(_program(HEADER + _kernel(0, 5000) + "L\t0\n"),
                                           None, print)
    assert child.processes == 1 and not child.own_process


def test_pass_one_again_records_every_process_where_the_recorder_serves(monkeypatch):
    """Timed again alone, a program whose kernels run in processes it starts is recorded
    by CUPTI in every process, not serialised under Nsight Compute (ranks waiting on each
    other's collectives never finish so); Nsight Compute where an NVTX range is asked."""
    traced = Pass("", 1.0, timer=Timer.cupti, processes=2, own_process=False)
    monkeypatch.setattr(program, "kernel_trace_pass", lambda *_: traced)
    monkeypatch.setattr(program, "duration_pass", lambda *_: Pass("csv", 1.0))
    launcher = ["torchrun", "--nproc_per_node=2", "train.py"]
    assert program.every_process_pass(launcher, program.Filters(), None, print) is traced
    assert program.every_process_pass(launcher, program.Filters(nvtx="step"), None,
                                      print).timer is Timer.ncu


def test_a_failing_program_or_one_that_never_loaded_the_recorder_says_so(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(kernel_trace, "injection_library", lambda: tmp_path / "lib.so")
    with pytest.raises(RooflintError, match="the command failed \\(exit 3\\)"):
        kernel_trace.kernel_trace_pass(_program(HEADER, exit_code=3), None, print)
    with pytest.raises(RooflintError, match="cannot start sgemm: No such file"):
        kernel_trace.kernel_trace_pass([str(tmp_path / "sgemm")], None, print)
    with pytest.raises(KernelTraceUnavailable, match="no process of the program loaded"):
        kernel_trace.kernel_trace_pass(_program(""), None, print)
    with pytest.raises(KernelTraceUnavailable, match="unreadable"):
        kernel_trace.kernel_trace_pass(_program("a table of mine\n"), None, print)


def test_a_python_programs_pass_one_is_offered_the_recorder_only_once_it_is_built(
        tmp_path, monkeypatch):
    """recorder_if_built never makes pass 1 wait for nvcc: the first time it starts the
    build in a thread of its own and offers nothing; once built, the cached recorder."""
    built = tmp_path / kernel_trace.LIBRARY
    builds = []

    def build():
        builds.append(1)
        built.write_text("a library")
    monkeypatch.setattr(kernel_trace, "_recorder", lambda: (built, build))
    assert kernel_trace.recorder_if_built() is None
    deadline = time.monotonic() + 10
    while not built.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert kernel_trace.recorder_if_built() == built and builds == [1]


def test_no_recorder_is_offered_where_none_can_be_built(monkeypatch):
    def unavailable():
        raise KernelTraceUnavailable("no nvcc to build CUPTI's recorder with")
    monkeypatch.setattr(kernel_trace, "_recorder", unavailable)
    assert kernel_trace.recorder_if_built() is None


@pytest.mark.parametrize("command", [["torchrun", "--nproc_per_node=2", "train.py"],
                                     ["bash", "run.sh"],
                                     [sys.executable, "-m", "torch.distributed.run", "t.py"]])
def test_a_launchers_program_is_not_started_early_and_every_process_is_recorded(
        monkeypatch, command):
    """A launcher's or a shell's program runs its kernels in processes it starts, which an
    early start would not hold (ncu holds the launcher alone): they ran beside pass 1, and
    pass 2 attached to the launcher found no kernel (torchrun, one rank, H200). Pass 1 is
    CUPTI's records of every process where the ranks' own traces cannot be had
    (test_rank_traces.py), pass 2 an ordinary run under Nsight Compute."""
    monkeypatch.setattr(program, "started_early", lambda *_: pytest.fail("started early"))
    monkeypatch.setattr(program, "rank_trace_pass", lambda *_: None)
    first = Pass("", 1.0, timer=Timer.cupti, processes=1, own_process=False)
    monkeypatch.setattr(program, "kernel_trace_pass", lambda *_: first)
    monkeypatch.setattr(program, "counter_pass", lambda *_: Pass("csv", 2.0))
    said = []
    one, two = program.two_passes(command, program.Filters(), None,
                                  lambda _: program.Choice(["nvjet"]), said.append)
    assert one is first and two.log == "csv" and not two.attached
    assert not any("again" in line for line in said)


def test_a_pass_2_on_the_ranks_gpu_that_profiled_nothing_runs_again_on_every_gpu(monkeypatch):
    """The ranks' device numbers are CUDA's as each process counts its GPUs; where Nsight
    Compute profiled no launch on the GPU a choice names, pass 2 runs again on every GPU,
    said once, rather than keep no counters; a pass 2 of every GPU that profiled nothing
    fails as before."""
    from rooflint.measure.pass_runner import NothingProfiled, PassProgress
    calls = []

    def run_ncu(args, command, logs, name, progress, ending=None):
        calls.append(args)
        if "--devices" in args or len(calls) > 2:
            raise NothingProfiled("torchrun launched no CUDA kernel that ncu saw")
        return Pass("csv", 3.0)
    monkeypatch.setattr(program, "run_ncu", run_ncu)
    said = []
    found = program.counter_pass(["torchrun", "t.py"], program.Choice(["nvjet"], devices=(0,)),
                                 None, PassProgress("pass 2", said.append))
    assert found.log == "csv" and len(calls) == 2
    assert calls[0][calls[0].index("--devices") + 1] == "0" and "--devices" not in calls[1]
    assert said == ["pass 2: Nsight Compute profiled no launch on GPU 0: again, on every GPU"]
    with pytest.raises(NothingProfiled):
        program.counter_pass(["torchrun", "t.py"], program.Choice(["nvjet"]), None,
                             PassProgress("pass 2", said.append))
    assert len(calls) == 3


def test_a_program_is_a_launcher_by_its_name_not_by_its_arguments():
    assert not program.starts_its_program([sys.executable, "train.py", "torchrun"])
    assert not program.starts_its_program(["./shell", "bash"])
    assert program.starts_its_program(["/usr/local/bin/torchrun", "t.py"])


def test_a_pass_past_its_limit_is_stopped_with_every_process_of_its_program(tmp_path,
                                                                           monkeypatch):
    """Ranks that wait on each other's collectives may never finish under Nsight Compute:
    pass 2 of a program of several processes stops at its limit, and the program's
    processes (the launcher's children too, which outlive a killed launcher) are killed."""
    from rooflint.measure import pass_runner
    monkeypatch.setattr(pass_runner, "PROGRESS_EVERY_S", 0.05)
    child = tmp_path / "child.pid"
    began = time.monotonic()
    with pytest.raises(pass_runner.PassTooLong, match="pass 2 stopped after 0 s: ranks wait"):
        pass_runner.output_of(["sh", "-c", f"sleep 30 & echo $! > {child}; wait"],
                              pass_runner.PassProgress("pass 2", print, limit_s=0.3,
                                                       over="ranks wait"))
    assert time.monotonic() - began < 5
    stat = Path(f"/proc/{child.read_text().strip()}/stat")
    assert not stat.exists() or stat.read_text().rsplit(") ", 1)[1].startswith("Z")  # gone


def test_pass_two_of_several_processes_has_a_limit_and_one_process_none(monkeypatch):
    """5x pass 1's time and 2 minutes more: a 2-rank step of 25 s is stopped at 245 s, where
    its user gave up at 300 s and got nothing; the limit's stop keeps pass 1 (a Stopped)."""
    nothing = program.Choice([])
    two = program.pass_two_progress(Pass("", 25.0, processes=2), nothing, print)
    assert two.limit_s == 245.0 and "2 processes may wait on each other" in two.over
    assert program.pass_two_progress(Pass("", 25.0, processes=1), nothing,
                                     print).limit_s is None


def test_pass_two_of_a_program_pass_one_ended_at_a_step_has_a_limit():
    """A training run pass 1 ended at its 20th step in 19.6 s (pytorch/examples' imagenet):
    pass 2 stopped at 5x pass 1's time and 2 minutes more, and what its launches should take
    (its plan said about 20 s), saying why; a trace that ran to its end sets none."""
    ended = program.pass_two_progress(
        Pass("", 19.6, processes=1, trace={"traceEvents": [], STOPPED: 20}),
        program.Choice(["k"], expected_s=20.0), print)
    assert ended.limit_s == pytest.approx(238.0)
    assert ended.over == ("more than 5x pass 1's time: pass 1 ended the program after 20 "
                          "optimizer steps (--stop-after), and pass 2's run has not ended")
    assert program.pass_two_progress(Pass("", 19.6, processes=1, trace={"traceEvents": []}),
                                     program.Choice(["k"]), print).limit_s is None

    def too_long():
        raise program.PassTooLong("pass 2 stopped after 245 s: ranks")
    stopped = program._second(too_long).stopped
    assert stopped.why == "pass 2 stopped after 245 s: ranks" and not stopped.interrupted


def test_a_slow_pass_two_says_once_that_it_is_slow_and_the_likeliest_why(monkeypatch):
    """imagenet's pass 2 (its DataLoader's batches pinned) had said only "220 s so far"
    after a pass 1 of 18 s and a plan of about 20 s: past 3x those, its progress says so,
    once, with why; before that, and after, only the time."""
    from rooflint.measure import pass_runner
    said: list[str] = []
    progress = program.pass_two_progress(Pass("", 18.0, processes=1),
                                         program.Choice(["k"], expected_s=20.0), said.append)
    assert progress.slow_after_s == pytest.approx(114.0) and progress.limit_s is None
    now = time.monotonic()
    for ran_s in (100.0, 120.0, 130.0):
        monkeypatch.setattr(progress, "began", now - ran_s)
        monkeypatch.setattr(progress, "said_at", now - pass_runner.PROGRESS_EVERY_S)
        progress.tick()
    assert said[0] == "pass 2: 100 s so far" and said[2] == "pass 2: 130 s so far"
    assert said[1] == ("pass 2: 120 s so far, past 3x the 38 s that pass 1's run and its "
                       "launches' estimate add up to: Nsight Compute saves and restores the "
                       "memory the program holds around each replay pass, pinned host memory "
                       "too (docs/profiling.md#what-a-profile-costs)")
    several = program.pass_two_progress(Pass("", 18.0, processes=2), program.Choice([]), print)
    assert several.slow_after_s == pytest.approx(54.0) and several.limit_s == 210.0
