"""The inputs every variant and reference is checked on (rooflint.measure.inputs), and the
bundled references run on them exactly as the worker shares them: read-only, uncopied."""

import importlib.util

import numpy as np
import pytest

from rooflint.formats.families import bundled_manifests
from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import DEFAULT_RANGES, DTYPES, load_manifest
from rooflint.measure.checks import compare
from rooflint.measure.inputs import HostCopies, RandomInputs, read_only_hint
from rooflint.formats.jobs import BufferJob, TimingJob


def buffer(name: str, dtype: str, low: float, high: float, shape=(4096,)) -> BufferJob:
    return BufferJob(name=name, dtype=dtype, shape=list(shape), role="in", low=low, high=high)


@pytest.mark.parametrize("dtype", DTYPES)
def test_default_ranges_are_drawn_in_range_without_zeros(dtype):
    low, high = DEFAULT_RANGES[np.dtype(dtype).kind]
    values = RandomInputs([buffer("x", dtype, low, high)], seed=0)["x"]
    assert values.dtype == np.dtype(dtype) and values.shape == (4096,)
    assert low <= values.min() and values.max() <= high and np.count_nonzero(values == 0) == 0
    assert len(np.unique(values)) > 20     # drawn, not a constant


def test_an_unsigned_buffer_never_sees_a_wrapped_negative():
    values = RandomInputs([buffer("idx", "uint32", *DEFAULT_RANGES["u"])], seed=0)["idx"]
    assert values.max() <= 100


def test_inputs_are_read_only_and_the_hint_says_what_to_do():
    x = RandomInputs([buffer("x", "float32", -1, 1)], seed=0)["x"]
    with pytest.raises(ValueError) as error:
        x *= 2
    assert read_only_hint(error.value).startswith(" (inputs are shared read-only")


def test_each_buffer_is_drawn_once_when_read_and_the_same_in_any_order():
    buffers = [buffer(n, "float32", -1, 1) for n in "abc"]
    first, second = RandomInputs(buffers, seed=7), RandomInputs(buffers, seed=7)
    assert first["c"] is first["c"] and list(first.drawn) == ["c"]
    for name in ("a", "b", "c"):
        np.testing.assert_array_equal(first[name], second[name])
    assert not np.array_equal(first["a"], first["b"])
    assert not np.array_equal(first["a"], RandomInputs(buffers, seed=8)["a"])


# Sizes small enough for float64 references on a CPU, and valid for each family's kernels.
SMALL = {"gemm_fp32": {"N": 128}, "stream": {"N": 4096}, "reduction": {"N": 2**16},
         "decode_attention": {"B": 1, "S": 256}, "w4a16_gemv": {"K": 256, "N": 256},
         "causes": {}, "softmax_rows": {"M": 64, "N": 256}}


def _load_reference(directory):
    spec = importlib.util.spec_from_file_location(f"reference_{directory.name}",
                                                  directory / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", bundled_manifests(), ids=lambda p: p.parent.name)
def test_bundled_references_run_on_shared_read_only_inputs(path):
    """What the worker does before any kernel runs: prepare, then every reference, all on
    the same uncopied inputs. A reference that wrote into an input would fail here."""
    family = resolve(load_manifest(path), SMALL[path.parent.name], {"num_sms": 132},
                     TimingJob())
    module = _load_reference(path.parent)
    inputs = RandomInputs([b for b in family.job.buffers if b.role != "out"], seed=0)
    host = dict(inputs)
    if family.job.prepare:
        host.update(getattr(module, family.job.prepare)(inputs, family.job.params))
    outputs = {b.name: b.shape for b in family.job.buffers if b.role != "in"}
    references = {v.reference for v in family.job.variants}
    for name in sorted(references):
        result = getattr(module, name)(host, dict(family.job.params))
        assert set(result) <= set(outputs), name
        for buffer_name, array in result.items():
            assert np.asarray(array).size == int(np.prod(outputs[buffer_name])), name
            assert np.isfinite(np.asarray(array, dtype=np.float64)).all(), name


def test_small_sizes_cover_every_bundled_family():
    assert {p.parent.name for p in bundled_manifests()} == set(SMALL)


class FakeDeviceArray:
    """A device array as HostCopies sees one: .get() copies it to the host."""

    copies = 0

    def __init__(self, values):
        self.values = values

    def get(self):
        FakeDeviceArray.copies += 1
        return self.values.copy()


def test_host_copies_are_made_once_when_read_and_are_read_only(monkeypatch):
    monkeypatch.setattr(FakeDeviceArray, "copies", 0)
    host = HostCopies({"x": FakeDeviceArray(np.arange(4.0)), "y": FakeDeviceArray(np.ones(2))})
    assert list(host) == ["x", "y"] and FakeDeviceArray.copies == 0
    assert host["x"] is host["x"] and FakeDeviceArray.copies == 1
    assert not host["x"].flags.writeable


# (output, expected, rel_l2, max_abs, max_rel, nonfinite): worked by hand.
COMPARISONS = [
    ([1.0, 2.0, 2.0], [1.0, 2.0, 2.0], 0.0, 0.0, 0.0, 0),
    ([1.0, 2.0, 4.0], [1.0, 2.0, 2.0], 2 / 3, 2.0, 1.0, 0),          # ||(0,0,2)|| / ||(1,2,2)||
    ([np.nan, 2.0, 2.0], [1.0, 2.0, 2.0], 1 / 3, 1.0, 0.5, 1),       # NaN counts as 0 and wrong
    ([np.inf, 0.0], [0.0, 0.0], 0.0, 0.0, 0.0, 1),                   # zero reference: norm 1
]


@pytest.mark.parametrize("output, expected, rel_l2, max_abs, max_rel, nonfinite", COMPARISONS)
def test_compare_by_hand(output, expected, rel_l2, max_abs, max_rel, nonfinite):
    check = compare("y", np.array(output, dtype=np.float32), np.array(expected), np)
    assert (check.buffer, check.nonfinite) == ("y", nonfinite)
    assert check.rel_l2 == pytest.approx(rel_l2) and check.max_abs == pytest.approx(max_abs)
    assert check.max_rel == pytest.approx(max_rel)


def test_compare_reshapes_the_output_to_the_references_shape():
    check = compare("C", np.arange(6, dtype=np.int32), np.arange(6.0).reshape(2, 3), np)
    assert check.rel_l2 == 0.0 and check.nonfinite == 0
