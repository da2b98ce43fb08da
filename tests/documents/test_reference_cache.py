"""The reference cache (issue 25), without a GPU: its key changes with everything a host
reference's outputs depend on and with nothing else; its entries are whole or absent, a
corrupt one is a miss; it stays within its bound, least recently used out first; `rooflint
cache clear` empties it; `run --no-reference-cache` reaches the worker; `--timings` names
hits and misses."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from edges import assert_one_line_error, rooflint
from recorded import RECORDED, RecordedPool, use_stand_in_pools
from rooflint.common.errors import RooflintError
from rooflint.common.phases import REFERENCE_CACHE_HIT, REFERENCE_CACHE_MISS, Stopwatch
from rooflint.formats import reference_cache
from rooflint.formats.family_job import resolve
from rooflint.formats.jobs import FamilyJob, TimingJob
from rooflint.formats.manifest import load_manifest
from rooflint.formats.reference_cache import (
    ENTRY_FILE, LIMIT_VARIABLE, STALE_WRITE_S, ReferenceCache, size_limit,
)
from rooflint.formats.reference_key import family_python_files, reference_key

MANIFEST = """\
name: keyed
params: {N: 1024, SCALE: 2.5}
precision: fp32
flops: N
bytes: 8*N
reference: scaled
prepare: derive
tolerance: 1e-6
buffers:
  x: {dtype: float32, shape: N, role: in, range: [0.5, 1.5]}
  w: {dtype: float32, shape: N, role: in}
  y: {dtype: float32, shape: N, role: out}
variants:
  v:
    source: kernel.cu
    launches:
      - {entry: scale, grid: 4, block: 256, args: [x, y, {i64: N}]}
  triton:
    python: variant.py:scale
"""

REFERENCE = """\
import numpy as np

from helpers import scale_by
from lib import tools


def derive(bufs, params):
    return {"w": np.ones_like(bufs["x"])}


def scaled(bufs, params):
    return {"y": scale_by(bufs["x"], params["SCALE"])}


def doubled(bufs, params):
    return {"y": 2.0 * bufs["x"]}
"""

ENVIRONMENT = {"numpy": "2.1.0", "cupy": "14.2.0", "input_rules": "abc"}


@pytest.fixture
def family(tmp_path) -> Path:
    """A family whose reference imports a helper, a module of a package beside it, and,
    through the helper, another helper."""
    directory = tmp_path / "keyed"
    (directory / "lib").mkdir(parents=True)
    (directory / "kernel.yaml").write_text(MANIFEST)
    (directory / "reference.py").write_text(REFERENCE)
    (directory / "helpers.py").write_text("from constants import FACTOR\n\n\n"
                                          "def scale_by(x, s):\n    return FACTOR * s * x\n")
    (directory / "constants.py").write_text("FACTOR = 1.0\n")
    (directory / "lib" / "__init__.py").write_text("")
    # Absolute imports from a package's module start at the family's top, as sys.path has it.
    (directory / "lib" / "tools.py").write_text("import shared\nfrom base import BASE\n")
    (directory / "shared.py").write_text("TOOL = 1\n")
    (directory / "base.py").write_text("BASE = 1\n")
    (directory / "variant.py").write_text("def scale(xp, bufs, params):\n    pass\n")
    (directory / "unused.py").write_text("UNUSED = 1\n")
    (directory / "kernel.cu").write_text('extern "C" __global__ void scale() {}\n')
    return directory


def job_of(directory: Path, **sizes) -> FamilyJob:
    return resolve(load_manifest(directory), sizes, {"num_sms": 132}, TimingJob()).job


def key_of(directory: Path, reference: str = "scaled", **sizes) -> str:
    return reference_key(job_of(directory, **sizes), reference, ENVIRONMENT)


# --- the key ----------------------------------------------------------------------------

def test_an_unchanged_family_gets_the_same_key(family):
    assert key_of(family) == key_of(family)


def test_the_key_follows_the_reference_and_what_it_imports_only(family):
    assert [p.relative_to(family).as_posix()
            for p in family_python_files(family / "reference.py", family)] == [
        "base.py", "constants.py", "helpers.py", "lib/__init__.py", "lib/tools.py",
        "reference.py", "shared.py"]


@pytest.mark.parametrize("file, text", [
    ("reference.py", REFERENCE.replace('"y": 2.0 *', '"y": 3.0 *')),      # another function
    ("reference.py", REFERENCE.replace("np.ones_like", "np.zeros_like")),  # prepare's body
    ("helpers.py", "from constants import FACTOR\n\n\ndef scale_by(x, s):\n    return s * x\n"),
    ("constants.py", "FACTOR = 2.0\n"),                # imported by the helper, not the reference
    ("lib/tools.py", "import shared\nfrom base import BASE as B\n"),
    ("shared.py", "TOOL = 2\n"),                      # imported by the package's module
    ("base.py", "BASE = 2\n"),                        # from-imported by it
], ids=["reference", "prepare", "helper", "helper-of-helper", "package-module",
        "package-modules-import", "package-modules-from-import"])
def test_a_changed_source_misses(family, file, text):
    before = key_of(family)
    (family / file).write_text(text)
    assert key_of(family) != before


@pytest.mark.parametrize("file", ["variant.py", "unused.py", "kernel.cu"])
def test_a_file_the_reference_does_not_import_leaves_the_key(family, file):
    """Editing a kernel or a python variant must not throw away gigabytes of outputs."""
    before = key_of(family)
    (family / file).write_text((family / file).read_text() + "# edited\n")
    assert key_of(family) == before


@pytest.mark.parametrize("change", [
    lambda job: replace(job, params={**job.params, "SCALE": 3.0}),
    lambda job: replace(job, params={**job.params, "num_sms": 114}),
    lambda job: replace(job, seed=1),
    lambda job: replace(job, prepare=None),
    lambda job: replace(job, buffers=[replace(job.buffers[0], low=0.25), *job.buffers[1:]]),
    lambda job: replace(job, buffers=[replace(job.buffers[0], high=2.0), *job.buffers[1:]]),
    lambda job: replace(job, buffers=[replace(job.buffers[0], dtype="float64"), *job.buffers[1:]]),
    lambda job: replace(job, buffers=[replace(job.buffers[0], shape=[2048]), *job.buffers[1:]]),
    lambda job: replace(job, buffers=[*job.buffers[:2], replace(job.buffers[2], role="inout")]),
], ids=["parameter", "device-name", "seed", "prepare-function", "range-low", "range-high",
        "dtype", "shape", "role"])
def test_a_changed_input_misses(family, change):
    job = job_of(family)
    assert reference_key(change(job), "scaled", ENVIRONMENT) != reference_key(
        job, "scaled", ENVIRONMENT)


def test_a_size_override_misses(family):
    assert key_of(family, N=2048) != key_of(family)


def test_another_reference_or_environment_misses(family):
    job = job_of(family)
    assert reference_key(job, "doubled", ENVIRONMENT) != reference_key(job, "scaled", ENVIRONMENT)
    assert reference_key(job, "scaled", {**ENVIRONMENT, "cupy": "14.3.0"}) != reference_key(
        job, "scaled", ENVIRONMENT)


def test_timing_variants_and_place_do_not_count(family, tmp_path):
    """A family moved elsewhere, timed warm or run for one variant reads the same outputs."""
    job = job_of(family)
    moved = shutil.copytree(family, tmp_path / "elsewhere" / "keyed")
    assert reference_key(replace(job_of(moved), timing=TimingJob(cache="warm"),
                                 variants=job.variants[:1]), "scaled", ENVIRONMENT) == \
        reference_key(job, "scaled", ENVIRONMENT)


def test_imports_are_followed_in_every_form_and_never_out_of_the_family(tmp_path):
    family = tmp_path / "family"
    (family / "pkg").mkdir(parents=True)
    (tmp_path / "outside.py").write_text("")
    (family / "reference.py").write_text(
        "import pkg.deep as d\nfrom . import sibling\nfrom .. import outside\n"
        "def f(bufs, params):\n    import late\n    return {}\n")
    for name in ("pkg/__init__.py", "pkg/deep.py", "sibling.py", "late.py"):
        (family / name).write_text("")
    (family / "broken.py").write_text("def (:\n")     # imported by nothing: never read
    found = [p.relative_to(family).as_posix()
             for p in family_python_files(family / "reference.py", family)]
    assert found == ["late.py", "pkg/__init__.py", "pkg/deep.py", "reference.py", "sibling.py"]


def test_a_family_without_reference_py_has_no_files(tmp_path):
    assert family_python_files(tmp_path / "reference.py", tmp_path) == []


# --- the store --------------------------------------------------------------------------

KEYS = [f"{i:064x}" for i in range(1, 6)]


def outputs(size: int = 256, dtype=np.float32, value: float = 1.5) -> dict[str, np.ndarray]:
    return {"y": np.full(size, value, dtype=dtype), "total": np.array([size * value])}


def test_what_is_written_is_read_back_as_it_was(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 2**20)
    written = {"y": np.arange(12, dtype=np.float16).reshape(3, 4), "n": np.array(7, np.int64)}
    cache.write(KEYS[0], written)
    read = cache.read(KEYS[0])
    assert set(read) == {"y", "n"}
    for name, array in written.items():
        assert read[name].dtype == array.dtype and read[name].shape == array.shape
        np.testing.assert_array_equal(read[name], array)


def test_an_unknown_key_is_a_miss(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 2**20)
    assert cache.read(KEYS[0]) is None
    cache.write(KEYS[0], outputs())
    assert cache.read(KEYS[1]) is None


def truncate(entry: Path) -> None:
    path = entry / "0.npy"
    path.write_bytes(path.read_bytes()[:-100])


def replace_array(entry: Path) -> None:
    np.save(entry / "0.npy", np.zeros(256, np.float64))


@pytest.mark.parametrize("damage", [
    truncate,
    replace_array,
    lambda entry: (entry / "0.npy").write_bytes(b""),
    lambda entry: (entry / "0.npy").unlink(),
    lambda entry: (entry / ENTRY_FILE).write_text("{not json"),
    lambda entry: (entry / ENTRY_FILE).write_text('{"outputs": [{"name": "y"}]}'),
    lambda entry: (entry / ENTRY_FILE).unlink(),
], ids=["truncated", "other-array", "empty-file", "file-gone", "bad-listing",
        "listing-without-files", "no-listing"])
def test_a_corrupt_entry_is_a_miss_and_is_replaced(tmp_path, damage):
    cache = ReferenceCache(tmp_path / "references", 2**20)
    cache.write(KEYS[0], outputs())
    damage(cache.directory / KEYS[0])
    assert cache.read(KEYS[0]) is None
    assert not (cache.directory / KEYS[0]).exists()
    cache.write(KEYS[0], outputs(value=2.5))
    assert cache.read(KEYS[0])["y"][0] == 2.5


def test_an_interrupted_write_leaves_no_entry(tmp_path, monkeypatch):
    """A write that fails after its first file (a full disk) leaves neither an entry nor
    its temporary directory; the run goes on."""
    cache = ReferenceCache(tmp_path / "references", 2**20)
    saved = []

    def save_once(path, array, allow_pickle):
        if saved:
            raise OSError(28, "No space left on device")
        saved.append(path)
        with open(path, "wb") as handle:
            np.lib.format.write_array(handle, array)
    monkeypatch.setattr(reference_cache.np, "save", save_once)
    cache.write(KEYS[0], outputs())
    assert saved and list(cache.directory.iterdir()) == []
    assert cache.read(KEYS[0]) is None


def test_a_killed_writers_leftovers_are_never_read_and_go_once_stale(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 2**20)
    cache.write(KEYS[0], outputs())
    left = cache.directory / f".{KEYS[1]}.abc123.tmp"      # as a SIGKILLed worker leaves it
    shutil.copytree(cache.directory / KEYS[0], left)
    fresh = cache.directory / f".{KEYS[2]}.def456.tmp"     # another run writing right now
    fresh.mkdir()
    assert cache.read(KEYS[1]) is None
    old = os.stat(left).st_mtime - STALE_WRITE_S - 60
    os.utime(left, (old, old))
    cache.write(KEYS[3], outputs())
    assert not left.exists() and fresh.exists()


def test_a_second_writer_of_one_key_leaves_the_first_entry(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 2**20)
    cache.write(KEYS[0], outputs(value=1.5))
    cache.write(KEYS[0], outputs(value=2.5))
    assert cache.read(KEYS[0])["y"][0] == 1.5
    assert [p.name for p in cache.directory.iterdir()] == [KEYS[0]]


def test_outputs_numpy_cannot_keep_are_not_kept(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 2**20)
    cache.write(KEYS[0], {"y": np.array([object()])})
    assert cache.read(KEYS[0]) is None and list(cache.directory.iterdir()) == []


def test_an_unwritable_cache_costs_only_the_caching(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = ReferenceCache(blocked / "references", 2**20)
    cache.write(KEYS[0], outputs())
    assert cache.read(KEYS[0]) is None


def entry_size(cache: ReferenceCache, key: str) -> int:
    return sum(p.stat().st_size for p in (cache.directory / key).iterdir())


def written_at(cache: ReferenceCache, key: str, seconds_ago: float, **values) -> None:
    cache.write(key, outputs(**values))
    moment = os.stat(cache.directory / key).st_mtime - seconds_ago
    os.utime(cache.directory / key, (moment, moment))


def test_the_cache_keeps_to_its_bound_oldest_out_first(tmp_path):
    probe = ReferenceCache(tmp_path / "probe", 2**20)
    probe.write(KEYS[0], outputs())
    one = entry_size(probe, KEYS[0])
    cache = ReferenceCache(tmp_path / "references", 3 * one)
    for age, key in zip((400, 300, 200), KEYS):
        written_at(cache, key, age)
    cache.write(KEYS[3], outputs())
    assert sorted(p.name for p in cache.directory.iterdir()) == KEYS[1:4]
    assert sum(entry_size(cache, k) for k in KEYS[1:4]) <= cache.limit


def test_a_read_keeps_an_entry_from_eviction(tmp_path):
    """Oldest means least recently used: the family being worked on stays."""
    probe = ReferenceCache(tmp_path / "probe", 2**20)
    probe.write(KEYS[0], outputs())
    cache = ReferenceCache(tmp_path / "references", 2 * entry_size(probe, KEYS[0]))
    written_at(cache, KEYS[0], 300)
    written_at(cache, KEYS[1], 200)
    assert cache.read(KEYS[0]) is not None
    cache.write(KEYS[2], outputs())
    assert sorted(p.name for p in cache.directory.iterdir()) == [KEYS[0], KEYS[2]]


def test_outputs_larger_than_the_bound_are_not_kept(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 1000)
    cache.write(KEYS[0], outputs(size=100))
    cache.write(KEYS[1], outputs(size=1000))
    assert cache.read(KEYS[1]) is None and cache.read(KEYS[0]) is not None


def test_only_the_caches_own_directories_are_removed(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 10)
    cache.directory.mkdir()
    (cache.directory / "notes").mkdir()
    (cache.directory / KEYS[4]).write_text("a file named like a key")
    cache.write(KEYS[0], outputs(size=1))     # over the bound: nothing is kept, nothing removed
    cleared = reference_cache.clear(cache.directory)
    assert cleared.entries == 0
    assert sorted(p.name for p in cache.directory.iterdir()) == [KEYS[4], "notes"]


def test_clear_removes_every_entry_and_leftover(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 2**20)
    cache.write(KEYS[0], outputs())
    cache.write(KEYS[1], outputs(size=512))
    (cache.directory / f".{KEYS[2]}.x.tmp").mkdir()
    size = entry_size(cache, KEYS[0]) + entry_size(cache, KEYS[1])
    assert reference_cache.clear(cache.directory) == reference_cache.Cleared(2, size)
    assert list(cache.directory.iterdir()) == []
    assert reference_cache.clear(tmp_path / "never-made") == reference_cache.Cleared(0, 0)


@pytest.mark.parametrize("written, limit", [(None, reference_cache.DEFAULT_LIMIT),
                                            ("2GiB", 2 * 2**30), ("500MB", 500 * 10**6),
                                            ("0", 0)])
def test_the_bound_comes_from_the_environment(monkeypatch, written, limit):
    if written is None:
        monkeypatch.delenv(LIMIT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(LIMIT_VARIABLE, written)
    assert size_limit() == limit


def test_a_bound_that_is_no_size_is_refused(monkeypatch):
    monkeypatch.setenv(LIMIT_VARIABLE, "lots")
    with pytest.raises(RooflintError, match=f"{LIMIT_VARIABLE}=lots: cannot read byte count"):
        size_limit()


def test_the_cache_lives_in_rooflints_cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path))
    assert ReferenceCache.default().directory == tmp_path / "references"


# --- the command line -------------------------------------------------------------------

def test_cache_clear_empties_the_reference_cache_and_keeps_calibrations(tmp_path):
    cache = ReferenceCache(tmp_path / "references", 2**20)
    cache.write(KEYS[0], outputs())
    cache.write(KEYS[1], outputs())
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "h200.json").write_text("{}")
    done = rooflint("cache", "clear", env={"ROOFLINT_CACHE_DIR": str(tmp_path)})
    assert done.code == 0, done.stderr
    assert done.stdout.startswith("removed the outputs of 2 references (")
    assert list(cache.directory.iterdir()) == []
    assert (tmp_path / "calibration" / "h200.json").exists()


def test_run_refuses_a_bound_that_is_no_size_before_any_gpu_work():
    done = rooflint("run", "stream", env={LIMIT_VARIABLE: "lots"})
    assert_one_line_error(done, 2, f"{LIMIT_VARIABLE}=lots")


class JobsSeen(RecordedPool):
    """The recorded worker, keeping each job it is sent."""

    def __init__(self, env: dict[str, str] | None = None):
        super().__init__(env=env)
        self.jobs: list[FamilyJob] = []

    def measure(self, job: FamilyJob, timeout: float, progress):
        self.jobs.append(job)
        yield from super().measure(job, timeout, progress)


@pytest.mark.parametrize("flags, cached", [((), True), (("--no-reference-cache",), False)])
def test_no_reference_cache_reaches_the_worker(monkeypatch, flags, cached):
    from edges import cli_runner
    from rooflint.commands import cli
    pool = JobsSeen()
    use_stand_in_pools(monkeypatch, lambda env=None: pool)
    outcome = cli_runner().invoke(cli.app, ["run", "stream", "copy_float4", "--counters", "off",
                                           *flags])
    assert outcome.exit_code == 0, outcome.output
    assert [job.reference_cache for job in pool.jobs] == [cached]


# --- where the seconds went -------------------------------------------------------------

def test_a_phase_is_recorded_under_the_name_its_block_gave_it():
    watch = Stopwatch()
    with watch.phase("reference") as phase:
        phase.name = REFERENCE_CACHE_HIT
    with pytest.raises(ValueError), watch.phase("reference") as phase:
        phase.name = REFERENCE_CACHE_MISS
        raise ValueError
    assert set(watch.seconds) == {REFERENCE_CACHE_HIT, REFERENCE_CACHE_MISS}


def test_timings_show_a_hit_and_a_miss():
    from rooflint.output.tables import render_timings
    first, second = RECORDED.families[:2]
    result = replace(RECORDED, families=[
        replace(first, timings={REFERENCE_CACHE_HIT: 1.3, "check": 0.5}),
        replace(second, timings={REFERENCE_CACHE_MISS: 9.5, "check": 0.5})],
        timings={REFERENCE_CACHE_HIT: 1.3, REFERENCE_CACHE_MISS: 9.5, "check": 1.0})
    console = Console(record=True, width=200)
    render_timings(console, result)
    rows = {phase: line[len(phase):].split() for line in console.export_text().splitlines()
            for phase in (REFERENCE_CACHE_HIT, REFERENCE_CACHE_MISS) if line.startswith(phase)}
    assert rows == {REFERENCE_CACHE_HIT: ["1.3", "0.0", "1.3"],
                    REFERENCE_CACHE_MISS: ["0.0", "9.5", "9.5"]}
