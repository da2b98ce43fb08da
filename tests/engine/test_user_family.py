"""The benchmark family of issue 25 (benchmarks/user_family), without a GPU: `rooflint run`
accepts it as it stands, it fits an H100, and each numpy reference, run at small sizes on
inputs drawn by the worker's own rules, returns what its variant writes, right."""

from __future__ import annotations

import importlib.util
import math
import sys

import numpy as np
import pytest

from edges import REPO
from rooflint.measure.protocol import check_fits
from rooflint.engine.families import RunOptions, check_inputs
from rooflint.formats.family_job import resolve
from rooflint.formats.jobs import TimingJob
from rooflint.formats.manifest import load_manifest
from rooflint.measure.inputs import RandomInputs
from test_run import H100

FAMILY = REPO / "benchmarks" / "user_family"
SMALL = {"N": 4096, "S": 64}


def load_reference():
    spec = importlib.util.spec_from_file_location("user_family_reference", FAMILY / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def small():
    """The family at small sizes, its inputs, and each variant's reference outputs."""
    family = resolve(load_manifest(FAMILY), SMALL, {"num_sms": 132}, TimingJob())
    inputs = RandomInputs([b for b in family.job.buffers if b.role != "out"], family.job.seed)
    reference = load_reference()
    outputs = {v.name: getattr(reference, v.reference)(inputs, dict(family.job.params))
               for v in family.job.variants}
    return family, inputs, outputs


def test_run_accepts_the_family_before_any_gpu_work():
    """What `rooflint run benchmarks/user_family` checks before it starts a worker."""
    [manifest] = check_inputs(RunOptions(targets=[str(FAMILY)], variants=[], sizes={}),
                              lambda line: None)
    assert len(manifest.variants) == 10


def test_the_family_is_of_the_issues_size_and_fits_an_h100():
    family = resolve(load_manifest(FAMILY), {}, {"num_sms": H100.sms}, TimingJob())
    sizes = {b.name: math.prod(b.shape) * np.dtype(b.dtype).itemsize for b in family.job.buffers}
    inputs = [sizes[b.name] for b in family.job.buffers if b.role == "in"]
    assert 2**28 <= min(inputs) and max(inputs) <= 2**30
    check_fits(family, H100)


def test_every_reference_writes_what_its_variant_writes(small):
    family, _, outputs = small
    shapes = {b.name: b.shape for b in family.job.buffers}
    roles = {b.name: b.role for b in family.job.buffers}
    for variant in family.job.variants:
        written = {a.buffer for launch in variant.launches for a in launch.args
                   if a.buffer and roles[a.buffer] == "out"}
        assert set(outputs[variant.name]) == written, variant.name
        for name, array in outputs[variant.name].items():
            assert np.asarray(array).size == math.prod(shapes[name]), (variant.name, name)
            assert np.all(np.isfinite(np.asarray(array, dtype=np.float64))), (variant.name, name)


def test_the_references_compute_what_the_kernels_are_said_to(small):
    family, inputs, outputs = small
    x, y, img = (np.asarray(inputs[n], dtype=np.float64) for n in ("x", "y", "img"))
    a = family.job.params["A"]
    np.testing.assert_allclose(outputs["scale"]["out"], a * x, rtol=1e-6)
    np.testing.assert_allclose(outputs["saxpy"]["out"], a * x + y, rtol=1e-12)
    np.testing.assert_allclose(outputs["polynomial"]["out"], np.exp(x), rtol=1e-5)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(outputs["gelu"]["out"], 0.5 * x * (1 + erf(x / math.sqrt(2))),
                               atol=1e-3)
    np.testing.assert_array_equal(outputs["to_half"]["half_out"], x.astype(np.float16))
    np.testing.assert_allclose(outputs["sum"]["total"], [math.fsum(y)], rtol=1e-12)
    np.testing.assert_allclose(outputs["sum_squares"]["total"], [math.fsum(x * x)], rtol=1e-12)
    keys = np.asarray(inputs["keys"])
    assert outputs["histogram"]["hist"].sum() == keys.size
    assert outputs["histogram"]["hist"][200] == np.count_nonzero(keys == 200)
    np.testing.assert_array_equal(outputs["transpose"]["mat_out"], img.T)
    interior = 0.2 * (img[1:-1, 1:-1] + img[:-2, 1:-1] + img[2:, 1:-1] + img[1:-1, :-2]
                      + img[1:-1, 2:])
    stencil = outputs["stencil"]["mat_out"]
    np.testing.assert_allclose(stencil[1:-1, 1:-1], interior, rtol=1e-6)
    np.testing.assert_array_equal(stencil[0], img[0])


def own_family():
    """benchmarks/own_family.py as a module (its neighbours on the path, as when it runs)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("own_family",
                                                      REPO / "benchmarks" / "own_family.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def test_the_benchmark_holds_each_run_to_the_issues_targets():
    benchmark = own_family()
    runs = {"first-run": {"seconds": 18.0, "phases_s": {}},
            "second-run": {"seconds": 7.5, "phases_s": {"reference (cache hit)": 2.0}}}
    found = benchmark.figures(runs, 30.0)      # issue 50's targets
    assert found["second run / ncu --set full"] == {
        "value": 0.25, "must": 0.4, "goal": 0.25, "must_met": True, "goal_met": True}
    assert found["first run / ncu --set full"] == {
        "value": 0.6, "must": 0.6, "goal": 0.4, "must_met": True, "goal_met": False}
    assert benchmark.read_every_reference(runs["second-run"])
    assert not benchmark.read_every_reference(
        {"phases_s": {"reference (cache hit)": 2.0, "reference (cache miss)": 9.0}})
