"""The worker's side of the reference cache (measure/references.py), without a GPU: a family
session whose CuPy is numpy computes a host reference once, writes it behind the run,
reads it in the next session without copying an input to the host, and leaves the cache
alone when told to or when the reference runs on the GPU."""

from __future__ import annotations

import importlib
import sys
import types

import numpy as np
import pytest

from rooflint.common.phases import (
    REFERENCE_CACHE_HIT, REFERENCE_CACHE_MISS, REFERENCE_CACHE_WRITE,
)
from rooflint.formats.family_job import resolve
from rooflint.formats.jobs import TimingJob
from rooflint.formats.manifest import load_manifest
from rooflint.formats.reference_cache import references_directory
from test_run import H100

MANIFEST = """\
name: session
params: {N: 4096}
precision: fp32
flops: N
bytes: 8*N
reference: tripled
tolerance: 1e-6
buffers:
  x: {dtype: float32, shape: N, role: in}
  y: {dtype: float32, shape: N, role: out}
variants:
  v:
    source: kernel.cu
    launches:
      - {entry: k, grid: 16, block: 256, args: [x, y, {i64: N}]}
"""

REFERENCE = """\
import numpy as np


def tripled(bufs, params):
    return {"y": 3 * bufs["x"]}


def halved(bufs, params):
    return {"y": bufs["x"] / 2}


def on_gpu(bufs, params, xp=np):
    return {"y": bufs["x"].astype(xp.float64)}
"""


class DeviceArray(np.ndarray):
    """A host array standing in for a CuPy one: ``get`` is its copy on the host."""

    def get(self) -> np.ndarray:
        return np.array(self)


class Generator:
    """CuPy's random generator, drawing numpy's values as DeviceArrays."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def random(self, **kwargs):
        return self.rng.random(**kwargs).view(DeviceArray)

    def integers(self, *args, **kwargs):
        return self.rng.integers(*args, **kwargs).view(DeviceArray)


class Stream:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self) -> None:
        pass


def numpy_cupy() -> types.ModuleType:
    """What a family session calls of CuPy to draw inputs and hold references."""
    fake = types.ModuleType("cupy")
    fake.__version__ = "0+numpy"
    fake.asarray, fake.empty, fake.float64 = np.asarray, np.empty, np.float64
    fake.random = types.SimpleNamespace(default_rng=Generator)
    fake.cuda = types.SimpleNamespace(Stream=lambda non_blocking: Stream())
    return fake


@pytest.fixture
def launch(monkeypatch):
    """rooflint.measure.launch on numpy, forgotten afterwards (no other test sees it)."""
    before = set(sys.modules)
    monkeypatch.setitem(sys.modules, "cupy", numpy_cupy())
    yield importlib.import_module("rooflint.measure.launch")
    for name in set(sys.modules) - before - {"cupy"}:
        del sys.modules[name]


@pytest.fixture
def job(tmp_path):
    (tmp_path / "kernel.yaml").write_text(MANIFEST)
    (tmp_path / "reference.py").write_text(REFERENCE)
    (tmp_path / "kernel.cu").write_text("")
    return resolve(load_manifest(tmp_path), {}, {"num_sms": H100.sms}, TimingJob()).job


def session(launch, job):
    return launch.FamilySession(job, H100, None)


def expected(launch, job, reference: str = "tripled"):
    """One session's reference outputs, its phases once its writes are done, and whether it
    copied an input to the host."""
    measuring = session(launch, job)
    outputs = measuring.references.on_gpu(reference)
    measuring.references.finish_writes()
    return outputs, set(measuring.watch.seconds), bool(measuring.buffers.host.copied)


def entries() -> list:
    directory = references_directory()
    return sorted(directory.iterdir()) if directory.is_dir() else []


def test_a_host_reference_is_computed_once_then_read(launch, job):
    first, phases, copied = expected(launch, job)
    assert {REFERENCE_CACHE_MISS, REFERENCE_CACHE_WRITE} <= phases and copied
    assert REFERENCE_CACHE_HIT not in phases and len(entries()) == 1
    second, phases, copied = expected(launch, job)
    assert REFERENCE_CACHE_HIT in phases and not copied
    assert not {REFERENCE_CACHE_MISS, REFERENCE_CACHE_WRITE} & phases
    x = session(launch, job).buffers.pristine["x"]
    for outputs in (first, second):
        assert outputs["y"].dtype == np.float64
        np.testing.assert_array_equal(outputs["y"], 3 * np.asarray(x))


def test_the_cache_keeps_what_the_reference_returned(launch, job):
    """A float32 output is kept in float32: half the bytes of its float64 copy."""
    expected(launch, job)
    [entry] = entries()
    assert np.load(entry / "0.npy").dtype == np.float32


def test_another_reference_of_the_family_misses(launch, job):
    expected(launch, job)
    _, phases, _ = expected(launch, job, "halved")
    assert REFERENCE_CACHE_MISS in phases and len(entries()) == 2


def test_a_session_told_not_to_use_the_cache_leaves_it(launch, job):
    expected(launch, job)
    job.reference_cache = False
    outputs, phases, copied = expected(launch, job)
    assert phases == {"inputs", "reference"} and copied and len(entries()) == 1


def test_a_reference_on_the_gpu_is_not_kept(launch, job):
    _, phases, copied = expected(launch, job, "on_gpu")
    assert phases == {"inputs", "reference"} and not copied and entries() == []


def test_a_family_session_keeps_its_host_outputs_between_references(launch, job):
    """tripled, halved, tripled again: the second tripled is neither read nor computed."""
    measuring = session(launch, job)
    measuring.references.on_gpu("tripled")
    measuring.references.on_gpu("halved")
    before = dict(measuring.watch.seconds)
    again = measuring.references.on_gpu("tripled")
    assert set(measuring.watch.seconds) - set(before) == {"reference"}
    assert measuring.watch.seconds[REFERENCE_CACHE_MISS] == before[REFERENCE_CACHE_MISS]
    np.testing.assert_array_equal(again["y"], 3 * np.asarray(measuring.buffers.pristine["x"]))


TWO_REFERENCES = MANIFEST + """\
  w:
    source: kernel.cu
    reference: halved
    launches:
      - {entry: k, grid: 16, block: 256, args: [x, y, {i64: N}]}
  u:
    source: kernel.cu
    reference: raises
    launches:
      - {entry: k, grid: 16, block: 256, args: [x, y, {i64: N}]}
"""


def test_a_familys_host_references_start_together_and_each_fails_alone(launch, tmp_path):
    """Three host references (one raising) are started at the session's start on threads
    of their own; each variant's check takes its own, and the raising one fails only its
    variant's row. The inputs are copied to the host once, before the threads start."""
    (tmp_path / "kernel.yaml").write_text(TWO_REFERENCES)
    (tmp_path / "reference.py").write_text(REFERENCE + "\n\ndef raises(bufs, params):\n"
                                           "    raise RuntimeError('no such output')\n")
    (tmp_path / "kernel.cu").write_text("")
    job = resolve(load_manifest(tmp_path), {}, {"num_sms": H100.sms}, TimingJob()).job
    from rooflint.measure.faults import VariantFailed   # on the fixture's numpy CuPy
    measuring = session(launch, job)
    references = measuring.references
    assert list(references.ahead) == ["tripled", "halved", "raises"]
    assert set(measuring.buffers.host.copied) == {"x"}
    references.wait_for_ahead()
    assert "reference (cache miss)" in measuring.watch.seconds    # the wait is counted
    x = np.asarray(measuring.buffers.pristine["x"])
    np.testing.assert_array_equal(references.on_gpu("halved")["y"], x / 2)
    np.testing.assert_array_equal(references.on_gpu("tripled")["y"], 3 * x)
    with pytest.raises(VariantFailed, match=r"reference raises\(\) raised RuntimeError"):
        references.on_gpu("raises")
    references.finish_writes()
    assert len(entries()) == 2


def test_one_host_reference_is_not_started_ahead(launch, job):
    assert session(launch, job).references.ahead == {}


def test_the_session_starts_before_its_host_references_are_done(launch, tmp_path):
    """The references started ahead run behind the session: its start does not wait for
    them (a with-block around their pool had: a first run of a family of ten numpy
    references over GiB arrays waited for all ten before its first variant, uncounted),
    and the wait for them is counted where a variant's measurement asks for it."""
    import time
    (tmp_path / "kernel.yaml").write_text(TWO_REFERENCES)
    (tmp_path / "reference.py").write_text(
        "import time\n\n\ndef tripled(bufs, params):\n    time.sleep(0.6)\n"
        "    return {'y': 3 * bufs['x']}\n\n\ndef halved(bufs, params):\n    time.sleep(0.6)\n"
        "    return {'y': bufs['x'] / 2}\n\n\ndef raises(bufs, params):\n    time.sleep(0.6)\n"
        "    raise RuntimeError('no such output')\n")
    (tmp_path / "kernel.cu").write_text("")
    job = resolve(load_manifest(tmp_path), {}, {"num_sms": H100.sms}, TimingJob()).job
    began = time.monotonic()
    measuring = session(launch, job)
    assert time.monotonic() - began < 0.5
    assert not any(f.done() for f in measuring.references.ahead.values())
    measuring.references.wait_for_ahead()
    assert all(f.done() for f in measuring.references.ahead.values())
    assert measuring.watch.seconds[REFERENCE_CACHE_MISS] > 0.3
    measuring.references.finish_writes()
