"""`rooflint run --devices`: which GPUs, families spread over them, one merged result;
on recorded worker output (no GPU)."""

import dataclasses
import sys
import time

import pytest

from recorded import (COUNTED, RECORDED, RecordedPool, RecordedProfiler,
                      use_stand_in_pools)
from rooflint.engine import families as run_module
from rooflint.common.errors import RooflintError
from rooflint.measure.devices import parse_devices, visible_devices
from rooflint.measure.runner import WorkerPool
from rooflint.formats.results import read_result

FAMILIES = ["causes", "stream", "reduction", "gemm_fp32"]


@pytest.mark.parametrize("text, visible, chosen", [
    ("all", ["0", "1", "2", "3"], ["0", "1", "2", "3"]),
    ("0,2", ["0", "1", "2", "3"], ["0", "2"]),
    ("1", ["4", "6"], ["6"]),                             # indices into CUDA_VISIBLE_DEVICES
    ("all", ["GPU-1f2e", "GPU-77aa"], ["GPU-1f2e", "GPU-77aa"]),
])
def test_devices_are_indices_into_the_visible_gpus(text, visible, chosen):
    assert parse_devices(text, visible) == chosen


@pytest.mark.parametrize("text, visible, message", [
    ("0,4", ["0", "1"], "--devices 0,4: no GPU 4 (this process sees 2: indices 0 to 1)"),
    ("one", ["0"], "--devices 'one': expected 'all' or GPU indices such as 0,2"),
    ("1,1", ["0", "1"], "--devices 1,1: a GPU is named twice"),
    ("all", [], "--devices all: this process sees no GPU"),
    ("99", [], "--devices 99: no GPU 99 (this process sees no GPU)"),
])
def test_impossible_devices_are_one_line(text, visible, message):
    with pytest.raises(RooflintError) as error:
        parse_devices(text, visible)
    assert str(error.value) == message


def test_visible_devices_respect_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 3")
    assert visible_devices() == ["2", "3"]


class Lanes:
    """A RecordedPool per GPU, each family's variants slow enough that both lanes work."""

    def __init__(self, device_names=None, broken=()):
        self.pools: list[RecordedPool] = []
        self.profilers: list[RecordedProfiler] = []
        self.device_names = device_names or {}
        self.broken = broken

    def __call__(self, env=None):
        visible = env["CUDA_VISIBLE_DEVICES"]
        pool = RecordedPool(lambda family, variant: time.sleep(0.01), env=env)
        name = self.device_names.get(visible)
        if visible in self.broken:
            def refuse():
                raise RooflintError("the GPU worker exited at start: CUDA error")
            pool.start = refuse
        elif name:
            pool.start = lambda: dataclasses.replace(RECORDED.gpu, name=name)
        self.pools.append(pool)
        return pool

    def profiler(self, cache, metrics, env=None, preload=()):
        self.profilers.append(RecordedProfiler(cache, metrics, env))
        return self.profilers[-1]


def run_on(monkeypatch, lanes, devices, warnings=None, tmp_path=None):
    use_stand_in_pools(monkeypatch, lanes)
    monkeypatch.setattr(run_module, "Profiler", lanes.profiler)
    monkeypatch.setattr(run_module.ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")
    listener = run_module.Listener(warn=warnings.append if warnings is not None else print)
    options = run_module.RunOptions(targets=FAMILIES, variants=[], sizes={}, devices=devices,
                                    json_path=tmp_path / "out.json" if tmp_path else None)
    return run_module.run(options, listener)


def test_families_are_spread_over_the_gpus_and_merged_in_order(monkeypatch, tmp_path):
    lanes = Lanes()
    result = run_on(monkeypatch, lanes, ["0", "1"], tmp_path=tmp_path)
    assert [f.name for f in result.families] == FAMILIES
    by_lane = [{family for _, family in pool.log} for pool in lanes.pools]
    assert all(by_lane) and set.union(*by_lane) == set(FAMILIES)
    assert not set.intersection(*by_lane)                       # each family measured once
    for family in result.families:
        pool = next(p for p in lanes.pools if ("measure", family.name) in p.log)
        assert family.device == pool.env["CUDA_VISIBLE_DEVICES"]
    assert result.settings.devices == ["0", "1"]
    assert read_result(tmp_path / "out.json") == result          # the merged document
    for pool, profiler in zip(lanes.pools, lanes.profilers):     # each GPU profiles its own
        assert profiler.env == pool.env
        assert [f for _, f in profiler.log if f] == [f for _, f in pool.log]
        assert profiler.log[-1] == ("close", "")
    copy = next(v for f in result.families for v in f.variants if v.name == "copy_float4")
    assert copy.counters == COUNTED["stream", "copy_float4"]     # counters came back


def test_a_gpu_that_does_not_start_is_left_out(monkeypatch):
    warnings = []
    result = run_on(monkeypatch, Lanes(broken={"1"}), ["0", "1"], warnings)
    assert [f.name for f in result.families] == FAMILIES
    assert {f.device for f in result.families} == {"0"}
    assert warnings == ["GPU 1 left out: the GPU worker exited at start: CUDA error"]


def test_no_gpu_starting_is_one_error(monkeypatch):
    with pytest.raises(RooflintError, match="no GPU of --devices started: the GPU worker"):
        run_on(monkeypatch, Lanes(broken={"0", "1"}), ["0", "1"])


def test_a_gpu_of_another_model_is_left_out_and_its_worker_closed(monkeypatch):
    warnings, closed = [], []
    lanes = Lanes({"1": "NVIDIA H100 80GB HBM3"})
    monkeypatch.setattr(RecordedPool, "close", lambda pool: closed.append(pool.env))
    result = run_on(monkeypatch, lanes, ["0", "1"], warnings)
    assert {f.device for f in result.families} == {"0"}
    assert {env["CUDA_VISIBLE_DEVICES"] for env in closed} == {"0", "1"}
    assert warnings == ["GPU 1 left out: it is a NVIDIA H100 80GB HBM3, GPU 0 a NVIDIA H200 "
                        "(run each model separately)"]


def test_an_interrupt_on_one_gpu_stops_the_run(monkeypatch):
    def interrupt_at_reduction(family, variant):
        if family == "reduction":
            raise KeyboardInterrupt

    class Interrupting(Lanes):
        def __call__(self, env=None):
            pool = super().__call__(env)
            pool.on_start = interrupt_at_reduction
            return pool

    with pytest.raises(KeyboardInterrupt):    # raised in the caller's thread, not lost
        run_on(monkeypatch, Interrupting(), ["0", "1"])


def test_a_worker_is_pinned_to_its_gpu():
    """The worker process sees only its GPU: CUDA_VISIBLE_DEVICES in its environment."""
    script = ('import json, os; print(json.dumps({"event": "fatal", "message": '
              'os.environ["CUDA_VISIBLE_DEVICES"]}))')
    pool = WorkerPool(prefix=[sys.executable, "-c", script], env={"CUDA_VISIBLE_DEVICES": "3"})
    with pytest.raises(RooflintError, match=r"^3 \(without a GPU"):
        pool.start()


@pytest.mark.parametrize("devices, fragment", [
    ("0,5", "--devices 0,5: no GPU 5 (this process sees 2: indices 0 to 1)"),
    ("first", "--devices 'first': expected 'all' or GPU indices"),
    ("", "--devices '': expected 'all' or GPU indices"),       # not silently one GPU
])
def test_the_cli_refuses_impossible_devices_in_one_line(devices, fragment):
    from edges import assert_one_line_error, rooflint
    outcome = rooflint("run", "stream", "--devices", devices,
                       env={"CUDA_VISIBLE_DEVICES": "0,1"}, timeout=30)
    assert_one_line_error(outcome, 2, fragment)


def test_the_display_shows_one_line_per_gpu_at_work(monkeypatch):
    """Two GPUs each timing a family: two progress lines, neither replacing the other."""
    import io
    import threading
    from rich.console import Console
    from rooflint.output.live import RunDisplay
    display = RunDisplay(Console(file=io.StringIO(), width=100), tables=False)
    first_variants, both_started, shown = [], threading.Event(), []

    def at_start(family, variant):
        if variant != RECORDED_FIRST[family]:
            return
        first_variants.append(family)
        if len(first_variants) == 2:
            shown.extend(sorted(t.description for t in display.bar.tasks))
            both_started.set()
        else:
            both_started.wait(timeout=5)

    class BothAtOnce(Lanes):
        def __call__(self, env=None):
            pool = super().__call__(env)
            pool.on_start = at_start
            return pool
    lanes = BothAtOnce()
    use_stand_in_pools(monkeypatch, lanes)
    options = run_module.RunOptions(targets=["causes", "stream"], variants=[], sizes={},
                                    devices=["0", "1"], counters="off")
    with display:
        run_module.run(options, display.listener())
    assert [d.split(":")[0] for d in shown] == ["causes", "stream"]
    assert display.bar.tasks == [] and sorted(display.done) == ["causes", "stream"]


RECORDED_FIRST = {f.name: f.variants[0].name for f in RECORDED.families}
