"""Pass 2 by rotation without a GPU: the engine's build (a stand-in nvcc), and the rows it
gives for the probe's recorded step (one H200, 2026-11-30) against Nsight Compute's log of
the same step."""

from __future__ import annotations

import gzip
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from rooflint.analysis.occupancy import SmLimits
from rooflint.formats.ncu_log import BLOCK, GRID, raw_page
from rooflint.formats.rotation_records import read_rotation
from rooflint.formats.trace_events import launches, optimizer_steps, shape_text
from rooflint.judge.kernel_times import name_key
from rooflint.measure import ncu, program, rotation
from rooflint.measure.pass_runner import Pass, PassProgress, Timer
from rooflint.measure.rotation import KernelResources, RotationUnavailable, rows_of
from stand_in_toolkit import stand_in_nvcc

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200" / "rotation"
H200 = SmLimits(registers=65536, threads=2048, blocks=32, shared_bytes=233472,
                reserved_shared_bytes=1024)
# Nsight Compute's launch statistics the rows compute alike; its shared-memory limit is at
# the carveout the driver chose, the rows' at the largest (analysis/occupancy.py).
STATISTICS = [ncu.THEORETICAL_OCCUPANCY, ncu.WAVES, ncu.REGISTERS, ncu.GRID_SIZE,
              ncu.BLOCK_SIZE, *(ncu.OCCUPANCY_LIMITS[k] for k in ("registers", "warps",
                                                                    "blocks"))]


def _text(name: str) -> str:
    return gzip.decompress((RECORDED / name).read_bytes()).decode()


@pytest.fixture(scope="module")
def step():
    """The recorded rotation (with the H200's SM and each launch's duration, which its engine
    did not yet write: ncu's) and ncu's log of the same step, and each launch's resources as
    pass 1's trace gives them (here ncu's: the two agree, tests/core/test_occupancy.py)."""
    records = read_rotation(_text("rotate-sized.tsv.gz"), _text("rotate-sized.tsv.launches.gz"))
    full = ncu.parse_rows(_text("ncu-cold-1.csv.gz"))
    records = replace(records, sm=H200, sms=132, counters={
        place: {**counters, ncu.DURATION: row[ncu.DURATION]}
        for (place, counters), row in zip(sorted(records.counters.items()), full)})
    resources = {}
    for launch, row in zip(records.launches, full):
        key = (name_key(launch.name), row[GRID], row[BLOCK])
        resources[key] = KernelResources(
            int(row[ncu.REGISTERS]), int(row["launch__shared_mem_per_block_static"]
                                         + row["launch__shared_mem_per_block_dynamic"]))
    return records, full, resources


def test_every_launch_gets_a_row_with_ncus_shape_and_launch_statistics(step):
    records, full, resources = step
    rows = rows_of(records, resources)
    assert len(rows) == 282
    for row, theirs in zip(rows, full):
        assert (row[GRID], row[BLOCK]) == (theirs[GRID], theirs[BLOCK])
        for metric in STATISTICS:
            assert row[metric] == pytest.approx(theirs[metric], rel=0.005, abs=0.0051), metric


def test_each_row_holds_the_rotations_counters_its_duration_among_them(step):
    records, _, resources = step
    rows = rows_of(records, resources)
    for row, (_, counters) in zip(rows, sorted(records.counters.items())):
        assert {m: row[m] for m in counters} == counters
        assert row[ncu.DURATION] == counters[ncu.DURATION]


def test_the_rows_read_as_counters_like_ncus_own(step):
    """ncu.summarize, which pass 2's rows go through, finds the same occupancy in both, and
    the same limiter but on one launch at full occupancy, which the calculator says shared
    memory limits and Nsight Compute the block limit (a tie: tests/core/test_occupancy)."""
    records, full, resources = step
    limiters = []
    for row, theirs in zip(rows_of(records, resources), full):
        mine, ours = ncu.summarize([row]), ncu.summarize([theirs])
        assert (mine.blocks_per_sm, mine.registers_per_thread, mine.grid_size) == \
            (ours.blocks_per_sm, ours.registers_per_thread, ours.grid_size)
        assert mine.dram_read == pytest.approx(records.counters[int(row[ncu.ID])][ncu.DRAM_READ])
        limiters.append((mine.occupancy_limiter, ours.occupancy_limiter))
    assert [pair for pair in limiters if pair[0] != pair[1]] == [("shared memory", "blocks")]


def test_a_launch_pass_one_did_not_see_is_left_out(step):
    records, _, resources = step
    keys = [(name_key(launch.name), shape_text(launch.grid), shape_text(launch.block))
            for launch in records.launches]
    unseen = keys[0]
    rows = rows_of(records, {k: v for k, v in resources.items() if k != unseen})
    assert [int(row[ncu.ID]) for row in rows] == [i for i, k in enumerate(keys) if k != unseen]
    assert len(rows) < 282


def test_only_the_measured_launches_get_rows(step):
    """Launches chosen, the records hold the counters of those places alone: a row each,
    named by its place in the step."""
    records, _, resources = step
    chosen = {place: records.counters[place] for place in (0, 7, 200)}
    rows = rows_of(replace(records, counters=chosen), resources)
    assert [int(row[ncu.ID]) for row in rows] == [0, 7, 200]
    assert rows[1][ncu.DRAM_READ] == chosen[7][ncu.DRAM_READ]


def test_no_rows_without_the_sms_limits(step):
    records, _, resources = step
    assert rows_of(replace(records, sm=None), resources) == []


def test_the_engine_is_built_once_per_toolkit(tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    nvcc = stand_in_nvcc(tmp_path, f'echo "$@" >> {calls}\nfor a; do out=$a; done\n'
                                       'touch "$out"\n')
    monkeypatch.setattr(rotation, "find_nvcc", lambda: nvcc)
    monkeypatch.setattr(rotation, "toolkit_roots", lambda: [tmp_path / "cuda"])
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path / "cache"))
    said = []
    built = rotation.engine_library(said.append)
    assert built.name == rotation.LIBRARY and built.is_file()
    assert rotation.engine_library(said.append) == built
    assert said == ["pass 2: building the rotation's engine with nvcc (once for this toolkit)"]
    made = calls.read_text().splitlines()
    assert len(made) == 1 and "rotation_engine.cpp" in made[0] and "-lcupti -lcuda" in made[0]


def test_a_failed_build_says_nvccs_error_and_leaves_nothing(tmp_path, monkeypatch):
    nvcc = stand_in_nvcc(tmp_path, 'for a; do out=$a; done; echo partial > "$out"\n'
                                       'echo "x.cpp(9): error: no cupti_range_profiler.h" >&2\n'
                                       'exit 1\n')
    monkeypatch.setattr(rotation, "find_nvcc", lambda: nvcc)
    monkeypatch.setattr(rotation, "toolkit_roots", lambda: [tmp_path / "cuda"])
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(RotationUnavailable, match="rotation engine: .*no cupti_range_profiler"):
        rotation.engine_library()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


def test_no_nvcc_no_engine(monkeypatch):
    monkeypatch.setattr(rotation, "find_nvcc", lambda: None)
    with pytest.raises(RotationUnavailable, match="no nvcc"):
        rotation.engine_library()


# examples/apps/train_step.py's pass-1 traces (H200): an earlier PyTorch's, and 2.11's, which
# carries each optimizer step's range twice (the host's, and its projection onto the GPU)
TRAIN_STEP_TRACES = ("h200-train-step-trace.json.xz", "h200-train-step-torch211-trace.json.xz")


def _train_step_trace(name: str = TRAIN_STEP_TRACES[0]) -> dict:
    import json
    import lzma
    path = Path(__file__).resolve().parents[1] / "fixtures" / "trace" / name
    return json.loads(lzma.decompress(path.read_bytes()))


def _kernels(trace: dict) -> dict:
    """Every kernel of the trace, by identity, each with a pattern of its own."""
    keys = sorted({(name_key(launch.name), launch.grid, launch.block)
                   for launch in launches(trace)})
    return {key: f"kernel{number}" for number, key in enumerate(keys)}


@pytest.mark.parametrize("name", TRAIN_STEP_TRACES)
def test_the_training_steps_trace_carries_seven_passes_after_its_first_step(name):
    """Its first step launches 440 kernels (AdamW's state made), each of the other seven
    the same 282: each kernel a step launches is ranged once, as the engine is told it
    (its pattern, grid and block)."""
    trace = _train_step_trace(name)
    assert len(optimizer_steps(trace)) == 8
    kernels = _kernels(trace)
    steps = rotation.rotation_steps(launches(trace), optimizer_steps(trace), 7, kernels)
    assert (steps.warm_up, steps.most_steps, steps.launches) == (1, 7, 282)
    assert len({pattern for pattern, _, _ in steps.chosen}) == len(steps.chosen) < len(kernels)
    assert all(re.fullmatch(r"\d+,\d+,\d+", shape) for _, *shapes in steps.chosen
               for shape in shapes)
    assert steps.max_ranges == int(1.25 * len(steps.chosen)) + 64


def test_each_chosen_kernel_is_ranged_at_its_first_launch_in_a_step():
    """The kernel the training step launches most is ranged once, at its shape, and
    nothing else is; the kernels in the order a step first launches them."""
    trace = _train_step_trace(TRAIN_STEP_TRACES[1])
    every, ends = launches(trace), optimizer_steps(trace)
    step = [launch for launch in every if ends[-2] < launch.start_us <= ends[-1]]
    keys = [(name_key(launch.name), launch.grid, launch.block) for launch in step]
    most = max(set(keys), key=keys.count)
    steps = rotation.rotation_steps(every, ends, 7, {most: "9gemm_most"})
    assert keys.count(most) > 1
    grid, block = (",".join(re.findall(r"\d+", shape)) for shape in most[1:])
    assert steps.chosen == (("9gemm_most", grid, block),)
    first, second = keys[0], next(k for k in keys if k != keys[0])
    both = rotation.rotation_steps(every, ends, 7, {second: "second", first: "first"})
    assert [pattern for pattern, _, _ in both.chosen] == ["first", "second"]


def test_steps_that_launch_none_of_the_chosen_kernels_carry_no_rotation():
    trace = _train_step_trace()
    assert rotation.rotation_steps(launches(trace), optimizer_steps(trace), 7,
                                   {("nothing launched", "(1, 1, 1)", "(1, 1, 1)"): "x"}
                                   ) is None


def test_steps_that_differ_to_the_end_carry_no_rotation():
    trace = _train_step_trace()
    ends = optimizer_steps(trace)
    every = launches(trace)
    kernels = _kernels(trace)
    last_step = [launch for launch in every if ends[-2] < launch.start_us <= ends[-1]]
    changed = [replace(launch, grid="(1, 1, 1)") if launch is last_step[0] else launch
               for launch in every]
    assert rotation.rotation_steps(changed, ends, 7, kernels) is None
    assert rotation.rotation_steps(every, ends[:1], 7, kernels) is None       # one step
    assert rotation.rotation_steps(every, ends[:7], 7, kernels) is None       # six to spare
    assert rotation.rotation_steps(every, [], 7, kernels) is None             # no optimizer
    assert rotation.rotation_steps(every, ends, 8, kernels) is None           # seven to spare


def test_a_gans_two_optimizers_of_one_class_are_read_as_one_step():
    """The training step's trace with a second AdamW's step halfway through each step's
    launches, as a GAN's generator steps after its discriminator: the trace's steps then
    alternate, and every other end (the first optimizer's, where the bootstrap's passes
    end) gives steps alike: the second step half-warm, six to spare."""
    trace = _train_step_trace(TRAIN_STEP_TRACES[1])
    ends = optimizer_steps(trace)
    every = launches(trace)
    kernels = _kernels(trace)
    halfway = []
    for before, end in zip([0.0, *ends], ends):
        mine = [launch.start_us for launch in every if before < launch.start_us <= end]
        halfway.append(mine[len(mine) // 2] + 0.001)
    trace["traceEvents"] += [{"ph": "X", "cat": "user_annotation", "ts": at - 1.0,
                              "dur": 1.0, "name": "Optimizer.step#AdamW.step"}
                             for at in halfway]
    both = optimizer_steps(trace)
    assert len(both) == 16
    assert rotation._steps_every(every, both, 6, kernels) is None     # alternating halves
    steps = rotation.rotation_steps(every, both, 6, kernels)
    assert (steps.warm_up, steps.most_steps, steps.launches) == (2, 6, 282)
    assert rotation.rotation_steps(every, both, 7, kernels) is None   # one step short


def test_every_precisions_counters_take_more_passes_than_one():
    """12 passes for every tensor precision's FLOPs, 7 for one (H200): a program whose
    operators name no precision needs 12 steps to spare."""
    assert rotation.passes_for(None) == 12
    assert rotation.passes_for(frozenset({"bf16-tensor"})) == 7
    assert rotation.passes_for(frozenset()) == 7
    assert 7 < rotation.passes_for(frozenset({"bf16-tensor", "fp16-tensor"})) < 12


def test_pass_ones_resources_are_cuptis_registers_and_shared_memory():
    found = rotation.resources_of(launches(_train_step_trace()))
    adam = [(k, v) for k, v in found.items() if "FusedAdamMathFunctor" in k[0]]
    assert adam and all(v.registers_per_thread > 0 for _, v in adam)
    assert len(found) > 50


SM_LINE = "# sm registers=65536 threads=2048 blocks=32 shared=233472 reserved=1024 sms=132\n"


class StandInProgram:
    """The program started for the rotation, as rotation_pass meets it: once its config is
    written it runs, and what the engine would write appears where the config says."""

    def __init__(self, folder: Path, records: str | None, launches: str = "",
                 failed: str | None = None, status: int = 0):
        self.folder, self.records, self.launches = folder, records, launches
        self.failed, self.status, self.config = failed, status, {}

    def wait(self, timeout=None):
        import json
        self.config = json.loads((self.folder / "rotation.json").read_text())
        path = Path(self.config["path"])
        if self.records is not None:
            path.write_text(self.records)
            path.with_name(path.name + ".launches").write_text(self.launches)
        if self.failed is not None:
            path.with_name(path.name + ".failed").write_text(self.failed)
        return self.status


def _program_writing(monkeypatch, tmp_path, records: str | None, launches: str = "",
                     failed: str | None = None, status: int = 0) -> StandInProgram:
    from contextlib import contextmanager
    program_ = StandInProgram(tmp_path, records, launches, failed, status)

    @contextmanager
    def started_rotation(command):
        yield rotation.StartedRotation(program_, tmp_path / "rotation.json",
                                       tmp_path / "records", tmp_path / "output.txt")
    monkeypatch.setattr(rotation, "started_rotation", started_rotation)
    return program_


@pytest.fixture
def engine(monkeypatch, tmp_path):
    monkeypatch.setattr(rotation, "engine_library", lambda: tmp_path / "librooflint_rotation.so")


STEPS = rotation.RotationSteps(warm_up=1, most_steps=7, launches=282,
                               chosen=(("13some_kernel", "4096,1,1", "128,1,1"),) * 282)


def _ranged_as_chosen() -> str:
    """The recorded step's ranges as the engine writes them where every launch is chosen:
    a range each, named by its place, no flush ranges (the recording's own, automatic)."""
    lines = _text("rotate-sized.tsv.gz").splitlines()
    head = [line for line in lines if line.startswith(("#", "range"))]
    ranges = [line.split("\t") for line in lines if not line.startswith(("#", "range"))]
    return "\n".join(head + ["\t".join([str(place), str(place), *cells[2:]])
                             for place, cells in enumerate(ranges[1::2])]) + "\n"


def test_the_rotation_pass_gives_ncus_rows_for_the_recorded_step(step, engine, monkeypatch,
                                                                 tmp_path):
    records, full, resources = step
    _program_writing(monkeypatch, tmp_path, SM_LINE + _ranged_as_chosen(),
                     _text("rotate-sized.tsv.launches.gz"))
    kept = tmp_path / "counters.csv"
    second = rotation.rotation_pass(["python3", "train.py"], ncu.metrics_for(None, None),
                                    STEPS, resources, kept, PassProgress("pass 2", print))
    rows = ncu.parse_rows(second.log)
    assert len(rows) == 282 and kept.read_text() == second.log and second.rotated
    assert [(r[GRID], r[BLOCK]) for r in rows] == [(r[GRID], r[BLOCK]) for r in full]
    assert rows[0][ncu.DRAM_READ] == records.counters[0][ncu.DRAM_READ]


def test_the_engines_config_asks_the_duration_but_no_launch_statistics(engine, monkeypatch,
                                                                   tmp_path):
    ran = _program_writing(monkeypatch, tmp_path, None)
    with pytest.raises(RotationUnavailable):
        rotation.rotation_pass(["python3", "train.py"], ncu.metrics_for(None, None), STEPS,
                               {}, None, PassProgress("pass 2", print))
    seen = ran.config
    assert seen["metrics"] and not [m for m in seen["metrics"] if m.startswith("launch__")]
    assert ncu.DURATION in seen["metrics"]
    assert ncu.THEORETICAL_OCCUPANCY not in seen["metrics"]
    assert (seen["warm_up"], seen["most_steps"], seen["max_ranges"]) == (1, 7, 416)
    assert seen["chosen"] == [["13some_kernel", "4096,1,1", "128,1,1"]] * 282


@pytest.mark.parametrize("written, said", [
    (dict(records=None, failed="rl_begin: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"),
     "^rl_begin: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES$"),
    (dict(records=None, status=1), r"ended \(exit status 1\) before every pass was in "
                                   r"\(7 steps after its first 1\)"),
    (dict(records="# dropped 0\n", launches="0\t_Z1av\t1,1,1\t32,1,1\t0\n"), "no ranges"),
])
def test_a_rotation_that_measured_nothing_says_why(engine, monkeypatch, tmp_path, written,
                                                   said):
    _program_writing(monkeypatch, tmp_path, **written)
    with pytest.raises(RotationUnavailable, match=said):
        rotation.rotation_pass(["python3", "train.py"], ["dram__bytes_read.sum"], STEPS, {},
                               None, PassProgress("pass 2", print))


def test_records_of_no_kernel_pass_one_saw_are_nothing(step, engine, monkeypatch, tmp_path):
    _program_writing(monkeypatch, tmp_path, SM_LINE + _ranged_as_chosen(),
                     _text("rotate-sized.tsv.launches.gz"))
    with pytest.raises(RotationUnavailable, match="none of pass 1's kernels"):
        rotation.rotation_pass(["python3", "train.py"], ["dram__bytes_read.sum"], STEPS, {},
                               None, PassProgress("pass 2", print))


# The training step's first profile's choice: 48 launch shapes, about 14 s under Nsight
# Compute (kernel_choice.pass2_estimate_s), against about 0.6 s by rotation for their first
# launches in a step (47 of them: one is launched only in the first step).
CHOICE = program.Choice(["nvjet"], tensor_precisions=frozenset({"bf16-tensor"}),
                        expected_s=14.4, kernels=dict(sorted(
                            _kernels(_train_step_trace()).items())[:48]))


@pytest.fixture
def traced():
    """Pass 1 of the training step, as its trace was recorded (H200)."""
    return Pass("", 14.0, timer=Timer.torch, trace=_train_step_trace())


def _pass_two_asked(monkeypatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(rotation.PASS_TWO_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(rotation.PASS_TWO_VARIABLE, value)


def test_nsight_computes_pass_2_asked_for_is_never_rotated(traced, monkeypatch):
    _pass_two_asked(monkeypatch, rotation.NCU_ASKED)
    monkeypatch.setattr(rotation, "rotation_pass", lambda *_: pytest.fail("rotated"))
    assert program._rotated(["python3", "train.py"], traced, CHOICE, None,
                            print) is None


@pytest.mark.parametrize("value", [None, "", rotation.ROTATION_ASKED])
def test_the_training_step_is_rotated_from_its_second_step_unless_ncu_is_asked_for(
        traced, monkeypatch, tmp_path, value):
    _pass_two_asked(monkeypatch, value)
    calls, said = [], []

    def rotated(command, metrics, steps, resources, kept, progress, started=None):
        calls.append((command, steps, kept, len(resources)))
        return Pass("rows", 6.9)
    monkeypatch.setattr(rotation, "rotation_pass", rotated)
    second = program._rotated(["python3", "train.py"], traced, CHOICE,
                              tmp_path, said.append)
    assert second.log == "rows"
    (command, steps, kept, resources), = calls
    assert command == ["python3", "train.py"] and steps.warm_up == 1 and resources > 50
    assert kept == tmp_path / program.COUNTERS_LOG
    assert said == ["pass 2: counters by rotation instead, on the first launch in a step of "
                    "each kernel (47 of the step's 282), a pass a step from the program's step "
                    "2 (7 passes): its ranges about 0.6 s beside the program's run"]
    assert len(steps.chosen) == 47


@pytest.mark.parametrize("value", [None, rotation.ROTATION_ASKED])
def test_a_choice_nsight_compute_measures_sooner_is_rotated_only_where_asked(
        traced, monkeypatch, value):
    """A second profile whose counter cache serves all but a kernel: one launch shape,
    about 0.3 s under Nsight Compute, against about 0.6 s for the rotation of 47 kernels;
    by default Nsight Compute's, said; asked for, rotated all the same."""
    _pass_two_asked(monkeypatch, value)
    monkeypatch.setattr(rotation, "rotation_pass", lambda *_, **__: Pass("rows", 6.9))
    said = []
    second = program._rotated(["python3", "train.py"], traced,
                              replace(CHOICE, expected_s=0.3), None, said.append)
    if value is None:
        assert second is None
        assert said == ["pass 2: Nsight Compute's, its launches about 0.3 s against 0.6 s "
                        "for the rotation's 47 ranges a step"]
    else:
        assert second.log == "rows" and said[-1].startswith("pass 2: counters by rotation")


@pytest.mark.parametrize("command", [["torchrun", "--nproc_per_node=2", "train.py"],
                                     ["./sgemm", "4096"]])
def test_a_launcher_or_a_binary_is_not_rotated(traced, monkeypatch, command):
    monkeypatch.setenv(rotation.PASS_TWO_VARIABLE, rotation.ROTATION_ASKED)
    monkeypatch.setattr(rotation, "rotation_pass", lambda *_: pytest.fail("rotated"))
    assert program._rotated(command, traced, CHOICE, None, print) is None


def test_a_rotation_that_cannot_be_had_says_so_and_leaves_pass_2_to_ncu(traced, monkeypatch):
    monkeypatch.setenv(rotation.PASS_TWO_VARIABLE, rotation.ROTATION_ASKED)

    def unavailable(*_):
        raise RotationUnavailable("rl_begin: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
    monkeypatch.setattr(rotation, "rotation_pass", unavailable)
    said = []
    assert program._rotated(["python3", "train.py"], traced, CHOICE, None,
                            said.append) is None
    assert said[-1] == ("pass 2: the rotation measured nothing (rl_begin: "
                        "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES); Nsight Compute instead")
    no_steps = Pass("", 1.0, timer=Timer.torch, trace={"traceEvents": []})
    said.clear()                                 # not a training program: nothing to say
    assert program._rotated(["python3", "train.py"], no_steps, CHOICE,
                            None, said.append) is None
    assert said == []
    trace = _train_step_trace()
    ends = optimizer_steps(trace)
    trace["traceEvents"] = [e for e in trace["traceEvents"]     # stopped after 3 steps
                            if not (e.get("name", "").startswith("Optimizer.step#")
                                    and e["ts"] + e.get("dur", 0) > ends[2])]
    assert program._rotated(["python3", "train.py"], replace(traced, trace=trace),
                            CHOICE, None, said.append) is None
    assert said == ["pass 2: no rotation (pass 1 saw 3 torch.optim steps: it takes a pass a "
                    "step, 7 or more); Nsight Compute instead"]
    trace = _train_step_trace()
    ends = optimizer_steps(trace)
    last = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"
            and ends[-2] < e["ts"] <= ends[-1]][0]
    last["args"]["grid"] = [1, 1, 1]             # the last step launched another shape
    ends = optimizer_steps(trace)
    said.clear()
    assert program._rotated(["python3", "train.py"], replace(traced, trace=trace),
                            CHOICE, None, said.append) is None
    assert said == ["pass 2: no rotation (the program's optimizer steps do not launch the "
                    "same kernels in the same order 7 steps in a row, the chosen ones among "
                    "them: it takes a pass a step, 7 or more); Nsight Compute instead"]
    said.clear()                                 # every precision's counters: 12 passes
    assert program._rotated(["python3", "train.py"], traced,
                            replace(CHOICE, tensor_precisions=None), None, said.append) is None
    assert said == ["pass 2: no rotation (pass 1 saw 8 torch.optim steps: it takes a pass a "
                    "step, 12 or more); Nsight Compute instead"]


def _early(monkeypatch, traced, built=True, waits=True) -> list[str]:
    """two_passes' stand-ins around the rotation: pass 1 the recorded trace, the engine
    built (or not), the programs started for the rotation (saying it waits, or not) and
    under Nsight Compute markers (sound where pass 1 saw one process); the programs
    stopped, and the rotation's let go on once pass 1 is over, returned in order."""
    from contextlib import contextmanager
    monkeypatch.delenv(rotation.PASS_TWO_VARIABLE, raising=False)       # the default
    stopped = []

    def engine_library(say=None):
        if not built:
            raise RotationUnavailable("no nvcc to build the rotation engine with")
        return Path("/cache/librooflint_rotation.so")
    monkeypatch.setattr(rotation, "engine_library", engine_library)

    @contextmanager
    def started_rotation(command):
        yield SimpleNamespace(process="the program waiting for the rotation",
                              waits=lambda within_s: waits,
                              go=lambda: stopped.append("let go on"))

    @contextmanager
    def started_early(command):
        yield SimpleNamespace(process="the program waiting under Nsight Compute")
    monkeypatch.setattr(rotation, "started_rotation", started_rotation)
    monkeypatch.setattr(program, "started_early", started_early)
    monkeypatch.setattr(program, "alone", lambda _, first: first.processes == 1)
    monkeypatch.setattr(program, "stop", stopped.append)
    monkeypatch.setattr(program, "timing_pass", lambda *_: traced)
    return stopped


def test_the_rotations_program_is_started_while_pass_1_runs(traced, monkeypatch):
    """Its imports done beside pass 1, as Nsight Compute's early start does for its pass 2,
    beside another program waiting under Nsight Compute (not attached to)."""
    _early(monkeypatch, traced)
    monkeypatch.setattr(program, "_attach", lambda *_: pytest.fail("attached"))
    given = []

    def rotated(command, metrics, steps, resources, kept, progress, started=None):
        given.append(started)
        return Pass("rows", 6.9)
    monkeypatch.setattr(rotation, "rotation_pass", rotated)
    first, second = program.two_passes(["python3", "train.py"], program.Filters(), None,
                                       lambda _: CHOICE, print)
    assert (first, second.log) == (traced, "rows")
    assert [started.process for started in given] == ["the program waiting for the rotation"]


def test_the_rotations_program_goes_on_once_pass_1_is_over_before_the_plan(traced,
                                                                           monkeypatch):
    """Its start on the GPU (CUDA context, model, cuDNN's benchmark) beside rooflint's
    reading of pass 1, whose program has ended: let go on before the plan is made."""
    events = _early(monkeypatch, traced)
    monkeypatch.setattr(rotation, "rotation_pass", lambda *_, **__: Pass("rows", 6.9))

    def plan(first):
        events.append("planned")
        return CHOICE
    program.two_passes(["python3", "train.py"], program.Filters(), None, plan, print)
    assert events[:2] == ["let go on", "planned"]


@pytest.mark.parametrize("asked, command, steps", [
    (rotation.NCU_ASKED, ["python3", "train.py"], True),
    (None, ["torchrun", "--standalone", "train.py"], True),
    (None, ["./train"], True),
    (None, ["python3", "train.py"], False)])
def test_a_program_the_rotation_cannot_take_is_not_let_go_on(traced, monkeypatch, asked,
                                                              command, steps):
    """Nsight Compute asked for, a launcher's or a binary's program, a trace with no
    optimizer step: its copy for the rotation stays waiting until it is stopped, and
    never runs on the GPU."""
    _pass_two_asked(monkeypatch, None)
    assert program._rotatable(["python3", "train.py"], traced)
    _pass_two_asked(monkeypatch, asked)
    first = traced if steps else Pass("", 1.0, timer=Timer.torch, trace={"traceEvents": []})
    assert not program._rotatable(command, first)


def test_with_nsight_compute_asked_for_no_copy_is_started_for_the_rotation(
        traced, monkeypatch):
    """Through two_passes: Nsight Compute attaches to its own waiting copy, and none is
    started, let go on or stopped for the rotation."""
    events = _early(monkeypatch, traced)
    _pass_two_asked(monkeypatch, rotation.NCU_ASKED)
    monkeypatch.setattr(program, "_attach", lambda waiting, *_: events.append("attached")
                        or Pass("csv", 20.0, attached=True))
    _, second = program.two_passes(["python3", "train.py"], program.Filters(), None,
                                   lambda _: CHOICE, print)
    assert second.log == "csv"
    assert events == ["attached"]


def test_a_rotation_that_measured_nothing_leaves_pass_2_to_nsight_compute_started_early(
        traced, monkeypatch):
    """Attached to the program waiting under Nsight Compute since pass 1 ran, once the one
    waiting for the rotation is stopped."""
    stopped = _early(monkeypatch, traced)

    def unavailable(*_):
        raise RotationUnavailable("the engine wanted more passes after 7 steps")
    monkeypatch.setattr(rotation, "rotation_pass", unavailable)
    attached = []
    monkeypatch.setattr(program, "_attach", lambda waiting, *_: attached.append(
        (waiting.process, list(stopped))) or Pass("csv", 20.0, attached=True))
    monkeypatch.setattr(program, "counter_pass", lambda *_: pytest.fail("not started early"))
    said = []
    _, second = program.two_passes(["python3", "train.py"], program.Filters(), None,
                                   lambda _: CHOICE, said.append)
    assert second.log == "csv" and second.attached
    assert attached == [("the program waiting under Nsight Compute",
                         ["let go on", "the program waiting for the rotation"])]
    assert said[-1] == ("pass 2: the rotation measured nothing (the engine wanted more passes "
                        "after 7 steps); Nsight Compute instead")


def test_the_engines_build_is_said_by_default_too(traced, monkeypatch):
    """nvcc takes seconds the first time: a profile that waits on it says why."""
    _early(monkeypatch, traced)
    monkeypatch.setattr(rotation, "engine_library", lambda say=None: say(
        "pass 2: building the rotation's engine with nvcc (once for this toolkit)"))
    monkeypatch.setattr(rotation, "rotation_pass", lambda *_, **__: Pass("rows", 6.9))
    said = []
    program.two_passes(["python3", "train.py"], program.Filters(), None, lambda _: CHOICE,
                       said.append)
    assert said[0] == "pass 2: building the rotation's engine with nvcc (once for this toolkit)"


@pytest.mark.parametrize("value", [None, rotation.ROTATION_ASKED])
def test_without_the_engine_pass_2_is_nsight_computes_started_early(traced, monkeypatch,
                                                                    value):
    """Why, said where the rotation was asked for; not by default, where any Python program
    would be told of an engine that only a training loop needs."""
    from contextlib import contextmanager
    _early(monkeypatch, traced, built=False)
    _pass_two_asked(monkeypatch, value)
    started = []

    @contextmanager
    def started_early(command):
        started.append(command)
        yield SimpleNamespace(process=None)
    monkeypatch.setattr(program, "started_early", started_early)
    monkeypatch.setattr(program, "alone", lambda *_: True)
    monkeypatch.setattr(program, "_attach", lambda *_: Pass("csv", 20.0, attached=True))
    said = []
    _, second = program.two_passes(["python3", "train.py"], program.Filters(), None,
                                   lambda _: CHOICE, said.append)
    assert second.attached and started
    why = ("pass 2: no rotation (no nvcc to build the rotation engine with); Nsight Compute "
           "instead")
    assert (why in said) == (value == rotation.ROTATION_ASKED)


@pytest.mark.parametrize("processes, waits", [(2, True), (1, False)])
def test_a_program_that_may_have_run_beside_pass_1_is_taken_again_alone_then_rotated(
        traced, monkeypatch, processes, waits):
    """A child of the program ran beside pass 1 (the program waited, its child did not), or
    the program started for the rotation never said it waits (it imported no library the
    bootstrap waits at: TensorFlow's program, say): pass 1 again with every process
    recorded, then the rotation starts the program anew."""
    _early(monkeypatch, replace(traced, processes=processes), waits=waits)
    again = []
    monkeypatch.setattr(program, "every_process_pass",
                        lambda *_: again.append(1) or traced)
    given = []

    def rotated(command, metrics, steps, resources, kept, progress, started=None):
        given.append(started)
        return Pass("rows", 6.9)
    monkeypatch.setattr(rotation, "rotation_pass", rotated)
    said = []
    first, second = program.two_passes(["python3", "train.py"], program.Filters(), None,
                                       lambda _: CHOICE, said.append)
    assert (first, second.log, again, given) == (traced, "rows", [1], [None])
    assert any(line.startswith("pass 1 again, alone") for line in said)


def test_the_gpu_of_a_rotated_profile_is_pass_ones_as_its_rows_name_none(step, traced):
    """Nsight Compute names the GPU in each row it prints; the rotation's rows do not, so
    the GPU is the one pass 1's trace names (an H200 here), never an unknown GPU."""
    from rooflint.engine.program import device_of
    records, _, resources = step
    rows = ncu.parse_rows(raw_page(rows_of(records, resources)))
    device = device_of(traced, rows, "580.95.05")
    assert "H200" in device.name and device.sms == 132
    assert device.l2_bytes == 0 and device.max_sm_clock_mhz is None   # none recorded then


def test_the_l2_and_clocks_the_engine_gives_reach_the_rotated_profiles_gpu(step, traced):
    """The engine writes the L2's size and the clocks (kHz) the driver gives: the GPU of a
    rotated profile has them, as Nsight Compute's rows give them (the table's 'L2 size
    unknown' of 2026-12-01's rotated profiles)."""
    from rooflint.engine.program import device_of
    records, _, resources = step
    given = replace(records, device={"l2_cache_size": 62914560, "clock_rate": 1980000,
                                     "memory_clock_rate": 3201000})
    rows = ncu.parse_rows(raw_page(rows_of(given, resources)))
    device = device_of(traced, rows, "580.95.05")
    assert "H200" in device.name and device.l2_bytes == 62914560
    assert (device.max_sm_clock_mhz, device.max_mem_clock_mhz) == (1980.0, 3201.0)


def test_an_interrupted_rotation_keeps_pass_1(traced, monkeypatch):
    monkeypatch.setenv(rotation.PASS_TWO_VARIABLE, rotation.ROTATION_ASKED)

    def interrupted(*_):
        raise KeyboardInterrupt
    monkeypatch.setattr(rotation, "rotation_pass", interrupted)
    second = program._rotated(["python3", "train.py"], traced, CHOICE, None,
                              print)
    assert second.stopped and second.stopped.interrupted and not second.log


@pytest.mark.parametrize("rotated", [False, True])
def test_a_rotated_profile_records_no_nsight_compute_selection(traced, monkeypatch, rotated):
    """settings.pass2_selection is there to profile the same launches again under Nsight
    Compute; a rotated pass 2 had none, and says it was rotated instead."""
    from rooflint.engine.program import ProfileOptions, passes_settings
    monkeypatch.setattr("rooflint.engine.program.ncu_version", lambda: "2025.3.1")
    choice = CHOICE
    settings = passes_settings(ProfileOptions(command=["python3", "train.py"]), traced,
                               Pass("rows", 6.9, rotated=rotated), 282, choice)
    assert settings.pass2_rotated is (True if rotated else None)
    assert settings.pass2_selection == (None if rotated else choice.selection)
    assert settings.pass2_kernels == (None if rotated else ["nvjet"])
    assert rotated or "regex:nvjet" in settings.pass2_selection


@pytest.mark.parametrize("value", ["Rotation", "rotation ", "on", "1"])
def test_a_misspelt_request_is_refused_before_pass_1(monkeypatch, value):
    from rooflint.common.errors import RooflintError
    monkeypatch.setenv(rotation.PASS_TWO_VARIABLE, value)
    monkeypatch.setattr(program, "timing_pass", lambda *_: pytest.fail("pass 1 ran"))
    monkeypatch.setattr(program, "started_early", lambda *_: pytest.fail("started"))
    with pytest.raises(RooflintError, match=f"^ROOFLINT_PASS_TWO is {value!r}: it takes "
                                            "rotation or ncu$"):
        program.two_passes(["python3", "train.py"], program.Filters(), None,
                           lambda _: CHOICE, print)
