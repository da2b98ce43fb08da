"""Repeated calls recorded at first (trace_bootstrap.REPEATED): a do_bench run's timed
function and a DataLoader epoch's batches are recorded for their first calls, the rest run
with the profiler's collection paused, and the analysis counts each recorded launch for the
calls it stands for. attorch's regression example (BobMcDear/attorch, unmodified; H100)
had written a 2.14 GiB trace, more than rooflint reads, from its DataLoader's CPU
operators."""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from rooflint.judge import autotuning, kernel_times
from rooflint.formats.results import read_result, write_result
from rooflint.formats.trace_events import (SAMPLED_COUNT, SAMPLED_RANGE, Unrecorded, launches,
                                           unrecorded)
from rooflint.measure import trace_bootstrap
from rooflint.measure.trace_bootstrap import (REPEATED, _QUIET, _Run,
                                              _benchmark_recorded_at_first,
                                              _iterator_recorded_at_first, _unlined)
from rooflint.output.tables import unrecorded_line

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures"


class Collection:
    """The profiler's collection as the runs see it: each pause and resume, in order."""

    def __init__(self):
        self.log, self.paused = [], 0

    def pause(self):
        self.paused += 1
        self.log.append("pause")

    def resume(self):
        self.paused -= 1
        self.log.append("resume")


def recorder(opened: list[str]):
    @contextmanager
    def record(name):
        opened.append(name)
        yield
    return record


def do_bench(fn, calls=250, rep=100):
    """do_bench's shape: the function called again and again, its answer a number."""
    for _ in range(calls):
        fn()
    return 0.5


def run_of(who, opened, collection):
    recorded, to_end = {w: (r, e) for _, _, _, w, r, e in REPEATED}[who]
    return lambda: _Run(who, recorded, recorder(opened), collection, to_end,
                        lambda: _unlined(None))


@pytest.mark.parametrize("by_keyword", [False, True])
def test_a_benchmarks_calls_past_its_first_hundred_run_paused_and_are_counted(by_keyword):
    opened, collection, quiet = [], Collection(), []
    bench = _benchmark_recorded_at_first(do_bench, run_of("Triton's do_bench", opened,
                                                          collection))

    def timed():
        quiet.append(_QUIET.depth)
    assert (bench(fn=timed, calls=250) if by_keyword else bench(timed, 250)) == 0.5
    assert len(quiet) == 250 and quiet == [0] * 100 + [1] * 150   # no line ranges, paused
    assert collection.log == ["pause", "resume"] and collection.paused == 0
    run = opened[0]                          # the benchmark's whole call, its count inside
    assert run.startswith(SAMPLED_RANGE) and len(opened) == 2
    count = SAMPLED_COUNT.match(opened[1])
    assert count["run"] == run and count["who"] == "Triton's do_bench"
    assert (int(count["calls"]), int(count["recorded"])) == (250, 100)


def test_a_benchmark_that_calls_its_function_no_more_than_it_records_is_left_as_it_was():
    opened, collection = [], Collection()
    bench = _benchmark_recorded_at_first(do_bench, run_of("Triton's do_bench", opened,
                                                          collection))
    bench(lambda: None, 100)
    assert collection.log == [] and len(opened) == 1 and not SAMPLED_COUNT.match(opened[0])


def test_a_benchmark_whose_function_fails_resumes_the_collection():
    opened, collection = [], Collection()
    bench = _benchmark_recorded_at_first(do_bench, run_of("Triton's do_bench", opened,
                                                          collection))
    calls = []

    def failing():
        calls.append(1)
        if len(calls) == 150:
            raise RuntimeError("CUDA error")
    with pytest.raises(RuntimeError):
        bench(failing)
    assert collection.log == ["pause", "resume"]
    assert SAMPLED_COUNT.match(opened[-1])["calls"] == "150"


class Batches:
    """A DataLoader iterator's shape: __next__ until the epoch's batches are done."""

    def __init__(self, batches):
        self.batches, self.served = batches, 0

    def __next__(self):
        if self.served == self.batches:
            raise StopIteration
        self.served += 1
        return self.served

    def __iter__(self):
        return self


def test_a_dataloaders_batches_past_its_first_three_are_fetched_paused_each_alone():
    """Between two fetches the program's step runs, recorded: each later fetch is paused
    by itself. Each epoch is a run of its own, the next one too where one iterator
    (persistent workers) serves both."""
    opened, collection, runs = [], Collection(), {}
    Batches.__next__ = _iterator_recorded_at_first(
        Batches.__dict__["__next__"], run_of("PyTorch's DataLoader", opened, collection), runs)
    loader = Batches(10)
    assert list(loader) == list(range(1, 11))
    loader.served = 0
    assert list(loader) == list(range(1, 11))
    assert collection.log == ["pause", "resume"] * 16 and not runs   # 7 batches, the end
    counts = [SAMPLED_COUNT.match(name) for name in opened]
    ends = [c for c in counts if c]
    assert [(c["calls"], c["recorded"]) for c in ends] == [("10", "3")] * 2
    assert ends[0]["run"] != ends[1]["run"]
    assert [name for name, c in zip(opened, counts) if not c] == \
        [ends[0]["run"]] * 3 + [ends[1]["run"]] * 3


def test_a_run_ends_once():
    opened, collection = [], Collection()
    run = run_of("PyTorch's DataLoader", opened, collection)()
    for _ in range(5):
        run.call(lambda: None)
    run.end()
    run.end()
    assert sum(bool(SAMPLED_COUNT.match(name)) for name in opened) == 1


def test_the_bootstrap_and_the_reader_name_the_repeated_calls_alike():
    assert trace_bootstrap.SAMPLED == SAMPLED_RANGE


def _trace_with_a_benchmark() -> dict:
    """A program's trace as the bootstrap writes it: a kernel launched twice by the
    program, then by a do_bench run (one range around it) that called its function 1,000
    times and recorded the first two, the run's count at its end, inside it."""
    events, correlation = [], iter(range(1, 100))
    run = SAMPLED_RANGE + "Triton's do_bench #1"

    def launch(at: float, duration: float) -> None:
        c = next(correlation)
        events.append({"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1,
                       "tid": 1, "ts": at, "dur": 2.0, "args": {"correlation": c}})
        events.append({"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7,
                       "ts": at + 5, "dur": duration,
                       "args": {"correlation": c, "grid": [4, 1, 1], "block": [128, 1, 1],
                                "stream": 7}})
    launch(0, 10.0)
    launch(100, 10.0)
    events.append({"ph": "X", "cat": "user_annotation", "name": run, "pid": 1, "tid": 1,
                   "ts": 150, "dur": 800.0})
    for at in (200, 300):
        launch(at, 4.0)
    events.append({"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 900,
                   "dur": 0.1, "name": run + ": 1000 calls, 2 recorded"})
    return {"traceEvents": events}


def test_a_recorded_launch_counts_for_the_calls_its_run_left_unrecorded():
    trace = _trace_with_a_benchmark()
    found = launches(trace)
    assert [x.weight for x in found] == [1.0, 1.0, 500.0, 500.0]
    assert all(not x.ranges for x in found)         # the run's ranges are not NVTX ranges
    kernel, = kernel_times.kernel_times_from_trace(found)
    assert kernel.launches == 1002 and len(kernel.durations_s) == 4
    assert kernel.total_s == pytest.approx(2 * 10e-6 + 1000 * 4e-6)
    assert unrecorded(trace) == [Unrecorded("Triton's do_bench", 998, 2)]


def test_what_was_not_recorded_is_said_under_the_table_and_kept_in_the_result(tmp_path):
    result = read_result(REPO / "examples" / "profile" / "h100-profile-triton.json")
    assert unrecorded_line(result) is None
    result.settings = replace(result.settings, unrecorded=[
        Unrecorded("Triton's do_bench", 19900, 100), Unrecorded("PyTorch's DataLoader", 360, 3)])
    write_result(result, tmp_path / "r.json")
    again = read_result(tmp_path / "r.json")
    assert again.settings.unrecorded == result.settings.unrecorded
    assert unrecorded_line(again) == (
        "not recorded: 19900 calls of Triton's do_bench past the first 100 of each run and "
        "360 calls of PyTorch's DataLoader past the first 3 of each run; their launches and "
        "GPU time are counted from the recorded calls")


RECORDED = json.loads((FIXTURES / "trace" / "h100-repeated-calls-trace.json").read_text())


def test_a_recorded_programs_runs_count_for_all_their_calls():
    """The recorded program (tests/fixtures/trace/repeated_calls.py, H100): three do_bench
    runs, 100 calls of each recorded (each in a range of its own, as a DataLoader's fetches
    still are: do_bench's runs came to be ranged whole after this recording); a
    DataLoader's two epochs of 40 batches, 3 of each recorded; the kernels its loop body
    launches between fetches, all recorded."""
    assert unrecorded(RECORDED) == [Unrecorded("Triton's do_bench", 437, 100),
                                    Unrecorded("PyTorch's DataLoader", 74, 3)]
    kept, tuning = autotuning.trace_without_autotuning(launches(RECORDED))
    found = kernel_times.kernel_times_from_trace(kept)
    products = [k for k in found if k.kernel.startswith("sm80_xmma_gemm")]
    assert [(len(k.durations_s), k.launches) for k in products] == [(100, 482)] * 2
    add, = [k for k in found if k.kernel == "add_kernel"]
    assert (len(add.durations_s), add.launches) == (141, 196)
    assert add.origins[0].words == "at dobench_probe.py:21 in add"
    body = [k for k in found if "reduce_kernel" in k.kernel]
    assert [(len(k.durations_s), k.launches) for k in body] == [(80, 80)]
    assert tuning.tuners == ("Triton's do_bench flushing L2",)
    assert not any(r.startswith(SAMPLED_RANGE) for x in kept for r in x.ranges)


def test_a_paused_call_runs_without_the_line_ranges_own_mode():
    """A paused batch's fetch runs its torch calls past the line ranges' handler, where it
    is the innermost mode; another mode the program pushed stays."""
    torch = pytest.importorskip("torch")
    from torch.overrides import TorchFunctionMode
    seen = []

    class Lines(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(self)
            return func(*args, **(kwargs or {}))
    with Lines() as lines:
        torch.ones(2).sum()
        assert len(seen) == 2
        with _unlined(lines):
            torch.ones(2).sum()
            assert len(seen) == 2 and _QUIET.depth == 1
        with Lines() as programs:
            with _unlined(lines):
                torch.ones(2).sum()
        assert seen[2:] == [programs, lines] * 2
        torch.ones(2).sum()
    assert len(seen) == 8 and _QUIET.depth == 0


def test_pauses_nest_and_only_the_outermost_toggles_the_profiler():
    """A do_bench inside another's timed function (an autotuner's) pauses and resumes
    within the outer pause: the profiler is toggled once each way."""
    from rooflint.measure.trace_bootstrap import _Collection
    toggled = []
    collection = _Collection(lambda enable, activities: toggled.append(enable), ["CPU"])
    collection.pause()
    collection.pause()
    collection.resume()
    assert toggled == [False]
    collection.resume()
    assert toggled == [False, True]


def test_a_profiler_that_cannot_pause_records_every_call():
    """PyTorch before 2.3 has no toggle_collection_dynamic: nothing is wrapped to pause."""
    from rooflint.measure.trace_bootstrap import _Collection, _InductorLines, _wrappers
    assert _Collection.of(object()) is None
    wrapped = _wrappers(lambda f: 0, recorder([]), recorder([]), "p", None, {},
                        lambda: _unlined(None), _InductorLines(lambda f: 0))
    assert "torch.utils.data.dataloader" not in wrapped and "triton.testing" not in wrapped


@pytest.mark.parametrize("count", [
    "5 calls, 100 recorded",            # fewer calls than recorded
    "100 calls, 0 recorded",
    "100 calls, 100 recorded",          # the bootstrap writes none for a run it recorded whole
    "9999999999999999999999999 calls, 1 recorded",   # past what a count is read as
])
def test_a_count_no_run_could_have_written_is_not_read(count):
    trace = _trace_with_a_benchmark()
    trace["traceEvents"][-1]["name"] = SAMPLED_RANGE + "Triton's do_bench #1: " + count
    assert [x.weight for x in launches(trace)] == [1.0] * 4
    assert unrecorded(trace) == []
