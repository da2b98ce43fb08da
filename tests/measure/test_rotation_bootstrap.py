"""Pass 2 by rotation inside the program (trace_bootstrap._Rotation), without a GPU: the
engine's calls as the first optimizer steps, through a stand-in engine and torch."""

from __future__ import annotations

import ctypes
import json
import sys
from types import SimpleNamespace

import pytest

from rooflint.measure import trace_bootstrap
from rooflint.measure.trace_bootstrap import FAILED, _Rotation


class Ended(Exception):
    """The program ended (trace_bootstrap._exit_now)."""


class Optimizer:
    """An optimizer, as the hook sees it (weakly referenced)."""


class Error:
    """rl_error, whose restype the bootstrap sets."""

    restype = None

    def __call__(self):
        return b"CUPTI_ERROR_NOT_SUPPORTED"


class StandInEngine:
    """rotation_engine.cpp's calls, recorded; ``passes`` passes, or an error where told."""

    def __init__(self, passes=3, failing=None):
        self.passes, self.failing, self.calls, self.stopped = passes, failing, [], 0
        self.rl_error = Error()

    def _call(self, name, *args):
        self.calls.append((name, *args))
        return -1 if name == self.failing else 0

    def rl_begin(self, metrics, max_ranges, flush, chosen):
        return self._call("rl_begin", metrics, max_ranges, flush, chosen) or self.passes

    def rl_start(self):
        return self._call("rl_start")

    def rl_stop(self):
        if self._call("rl_stop") < 0:
            return -1
        self.stopped += 1
        return int(self.stopped >= self.passes)

    def rl_finish(self, path):
        return self._call("rl_finish", path) or 282


@pytest.fixture
def program(monkeypatch):
    """A stand-in torch whose synchronisations are counted, the program's end an Ended."""
    synced = []
    torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: synced.append(1)))
    monkeypatch.setitem(sys.modules, "torch", torch)

    def end():
        raise Ended
    monkeypatch.setattr(trace_bootstrap, "_exit_now", end)
    return synced


def _rotation(tmp_path, monkeypatch, engine, warm_up=3, most_steps=10):
    """The rotation as its configuration (rooflint's JSON file) says."""
    monkeypatch.setattr(ctypes, "CDLL", lambda path: engine)
    config = tmp_path / "rotation.json"
    config.write_text(json.dumps(dict(zip(trace_bootstrap.ROTATION_FIELDS, (
        "/cache/librooflint_rotation.so", ["dram__bytes_read.sum", "smsp__inst_executed.sum"],
        600, warm_up, most_steps,
        [["^gemm$", "2,64,1", "384,1,1"], ["13elementwise", "4096,1,1", "128,1,1"]],
        str(tmp_path / "records"))))))
    return _Rotation(str(config))


def _step(rotation, optimizer, times=1):
    for _ in range(times):
        rotation._after_step(optimizer, (), {})


def test_each_step_after_the_warm_up_is_a_pass_and_the_last_ends_the_program(
        tmp_path, monkeypatch, program):
    engine = StandInEngine(passes=3)
    rotation = _rotation(tmp_path, monkeypatch, engine)
    optimizer = Optimizer()
    _step(rotation, optimizer, 2)
    assert engine.calls == [] and program == []
    _step(rotation, optimizer)               # the third: the engine begins, its first pass
    assert engine.calls == [("rl_begin", b"dram__bytes_read.sum,smsp__inst_executed.sum",
                             600, 1,
                             b"^gemm$\t2,64,1\t384,1,1\n13elementwise\t4096,1,1\t128,1,1\n"),
                            ("rl_start",)]
    _step(rotation, optimizer, 2)
    with pytest.raises(Ended):
        _step(rotation, optimizer)
    assert [c[0] for c in engine.calls[2:]] == ["rl_stop", "rl_start", "rl_stop", "rl_start",
                                                "rl_stop", "rl_finish"]
    assert engine.calls[-1] == ("rl_finish", str(tmp_path / "records").encode())
    assert len(program) == 4                  # the GPU synchronised at each step's end
    assert not (tmp_path / f"records{FAILED}").exists()


def test_a_second_optimizers_steps_are_not_passes(tmp_path, monkeypatch, program):
    engine = StandInEngine(passes=2)
    rotation = _rotation(tmp_path, monkeypatch, engine, warm_up=1)
    discriminator, generator = Optimizer(), Optimizer()
    _step(rotation, discriminator)
    _step(rotation, generator)
    assert [c[0] for c in engine.calls] == ["rl_begin", "rl_start"]


@pytest.mark.parametrize("failing, said", [
    ("rl_begin", "rl_begin: CUPTI_ERROR_NOT_SUPPORTED"),
    ("rl_start", "rl_start: CUPTI_ERROR_NOT_SUPPORTED"),
    ("rl_stop", "rl_stop: CUPTI_ERROR_NOT_SUPPORTED"),
    ("rl_finish", "rl_finish: CUPTI_ERROR_NOT_SUPPORTED"),
])
def test_an_engine_error_is_written_and_ends_the_program(tmp_path, monkeypatch, program,
                                                          failing, said):
    rotation = _rotation(tmp_path, monkeypatch, StandInEngine(passes=1, failing=failing),
                         warm_up=1)
    optimizer = Optimizer()
    with pytest.raises(Ended):
        _step(rotation, optimizer, 3)
    assert (tmp_path / f"records{FAILED}").read_text() == said


def test_passes_still_wanted_after_the_most_steps_fail(tmp_path, monkeypatch, program):
    rotation = _rotation(tmp_path, monkeypatch, StandInEngine(passes=99), warm_up=1,
                         most_steps=4)
    with pytest.raises(Ended):
        _step(rotation, Optimizer(), 10)
    assert (tmp_path / f"records{FAILED}").read_text() == \
        "the engine wanted more passes after 4 steps"


def test_an_engine_that_will_not_load_fails_in_one_line(tmp_path, monkeypatch, program):
    def refused(path):
        raise OSError(f"{path}: undefined symbol: cuptiRangeProfilerEnable")
    rotation = _rotation(tmp_path, monkeypatch, None, warm_up=1)
    monkeypatch.setattr(ctypes, "CDLL", refused)
    with pytest.raises(Ended):
        _step(rotation, Optimizer())
    assert (tmp_path / f"records{FAILED}").read_text() == \
        "the engine would not load: /cache/librooflint_rotation.so: undefined symbol: " \
        "cuptiRangeProfilerEnable"
