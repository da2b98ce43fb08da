"""The counter cache (issue 50): a variant whose code, launches, inputs, GPU and tools are
unchanged is not profiled again; its counters are the ones an earlier run took, said in
one line. On the recorded H200 run's counters, through `run` with its profiler stood in."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from recorded import COUNTED, RECORDED, RecordedPool, RecordedProfiler, use_stand_in_pools
from rooflint.common.errors import RooflintError
from rooflint.engine import families as run_module
from rooflint.formats import counter_cache
from rooflint.formats.counter_cache import CounterCache
from rooflint.formats.counter_key import variant_key
from rooflint.formats.families import bundled_manifests
from rooflint.formats.family_job import resolve
from rooflint.formats.jobs import TimingJob
from rooflint.formats.manifest import load_manifest

STREAM = next(path.parent for path in bundled_manifests() if path.parent.name == "stream")
COUNTERS = COUNTED["stream", "copy_float4"]


@pytest.fixture
def family(tmp_path):
    """The bundled stream family, copied where a test may change it."""
    copy = tmp_path / "stream"
    shutil.copytree(STREAM, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


class Profilers:
    """Each run's stand-in profiler, kept to see what it was asked."""

    def __init__(self):
        self.made: list[RecordedProfiler] = []

    def __call__(self, cache, metrics, env=None, preload=()):
        self.made.append(RecordedProfiler(cache, metrics, env))
        return self.made[-1]

    def asked(self) -> list[str]:
        return [v.name for job in self.made[-1].jobs for v in job.variants]


def run(monkeypatch, directory: Path, profilers: Profilers, counter_cache: bool = True):
    use_stand_in_pools(monkeypatch, lambda env=None: RecordedPool(env=env))
    monkeypatch.setattr(run_module, "Profiler", profilers)
    monkeypatch.setattr(run_module.ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")
    warnings: list[str] = []
    result = run_module.run(run_module.RunOptions(targets=[str(directory)], variants=[], sizes={},
                                                  counters="ncu", counter_cache=counter_cache),
                            run_module.Listener(warn=warnings.append))
    return result, warnings


def counters_by_variant(result) -> dict:
    return {v.name: v.counters for v in result.families[0].variants}


def test_a_second_run_of_an_unchanged_family_profiles_nothing(monkeypatch, family):
    profilers = Profilers()
    first, said = run(monkeypatch, family, profilers)
    variants = [v.name for v in first.families[0].variants if v.status == "ok"]
    assert profilers.asked() == variants and not said
    second, said = run(monkeypatch, family, profilers)
    assert profilers.asked() == []
    assert counters_by_variant(second) == counters_by_variant(first)
    assert first.families[0].cached_counters == []
    assert second.families[0].cached_counters == sorted(variants)
    assert len(said) == 1 and f"counters of {len(variants)} of {len(variants)} variants from " \
        f"the counter cache" in said[0] and "--no-counter-cache" in said[0]


def test_an_edited_source_profiles_again_only_the_variants_built_from_it(monkeypatch, family):
    """copy_float4 moved to a file of its own, which is then edited; a header that
    stream.cu includes is then edited too."""
    shutil.copy(family / "stream.cu", family / "stream_f4.cu")
    manifest = (family / "kernel.yaml").read_text().splitlines()
    at = manifest.index("  copy_float4:")
    at += next(i for i, line in enumerate(manifest[at:]) if "source: stream.cu" in line)
    manifest[at] = manifest[at].replace("stream.cu", "stream_f4.cu")
    (family / "kernel.yaml").write_text("\n".join(manifest) + "\n")
    source = family / "stream.cu"
    source.write_text('#include "tuning.cuh"\n' + source.read_text())
    (family / "tuning.cuh").write_text("// nothing yet\n")
    profilers = Profilers()
    run(monkeypatch, family, profilers)
    (family / "stream_f4.cu").write_text((family / "stream_f4.cu").read_text() + "\n// tuned\n")
    run(monkeypatch, family, profilers)
    assert profilers.asked() == ["copy_float4"]
    (family / "tuning.cuh").write_text("#define UNROLL 4\n")
    run(monkeypatch, family, profilers)
    assert "copy_float4" not in profilers.asked() and "copy_scalar" in profilers.asked()


def test_no_counter_cache_profiles_everything_and_keeps_nothing(monkeypatch, family, tmp_path):
    profilers = Profilers()
    run(monkeypatch, family, profilers, counter_cache=False)
    assert not counter_cache.counters_directory().exists()
    run(monkeypatch, family, profilers)
    run(monkeypatch, family, profilers, counter_cache=False)
    assert profilers.asked()


def test_a_result_written_into_the_family_directory_changes_no_key(family):
    job = resolve(load_manifest(str(family)), {}, {"num_sms": 132}, TimingJob()).job

    def key():
        return variant_key(job, job.variants[0], "nvrtc 12.8", RECORDED.gpu, "2025.3.1.0",
                           ("dram__bytes_read.sum",))
    before = key()
    (family / "result.json").write_text("{}")
    (family / "notes.md").write_text("tried float4")
    assert key() == before


@pytest.mark.parametrize("change", ["source", "header", "driver", "model", "ncu", "metrics",
                                    "compiler", "cache", "size", "seed"])
def test_whatever_the_counters_depend_on_changes_the_key(family, change):
    manifest = load_manifest(str(family))
    job = resolve(manifest, {}, {"num_sms": 132}, TimingJob()).job
    device = RECORDED.gpu
    arguments = dict(compiler="nvrtc 12.8", ncu="2025.3.1.0", metrics=("dram__bytes_read.sum",))

    source = family / manifest.variants[0].source
    source.write_text('#include "common.cuh"\n' + source.read_text())
    (family / "common.cuh").write_text("#define TILE 32\n")

    def key(job=job, device=device, **changed):
        given = arguments | changed
        return variant_key(job, job.variants[0], given["compiler"], device, given["ncu"],
                           given["metrics"])
    before = key()
    if change == "source":
        source.write_text(source.read_text() + "// another kernel\n")
        after = key()
    elif change == "header":
        (family / "common.cuh").write_text("#define TILE 64\n")
        after = key()
    elif change == "driver":
        after = key(device=dataclasses.replace(device, driver="999.1"))
    elif change == "model":
        after = key(device=dataclasses.replace(device, name="NVIDIA H100 80GB HBM3", sms=132))
    elif change == "ncu":
        after = key(ncu="2026.1.0.0")
    elif change == "metrics":
        after = key(metrics=("dram__bytes_read.sum", "lts__t_bytes.sum"))
    elif change == "compiler":
        after = key(compiler="nvcc 13.0.88")
    elif change == "cache":
        after = key(job=dataclasses.replace(job, timing=TimingJob(cache="warm")))
    elif change == "size":
        after = key(job=resolve(manifest, {"N": 2**20}, {"num_sms": 132}, TimingJob()).job)
    else:
        after = key(job=dataclasses.replace(job, seed=1))
    assert after != before


def test_entries_read_back_and_a_broken_or_foreign_entry_is_a_miss(tmp_path):
    cache = CounterCache(tmp_path / "counters")
    key = "a" * 64
    assert cache.read(key) is None
    cache.write(key, COUNTERS)
    assert cache.read(key).counters == COUNTERS
    entry = tmp_path / "counters" / f"{key}.json"
    entry.write_text(entry.read_text()[:-20])                         # cut short
    assert cache.read(key) is None
    entry.write_text('{"counters": {"kernels": []}, "taken": "2026-11-29"}')   # other fields
    assert cache.read(key) is None


def test_an_unwritable_cache_costs_the_run_its_caching_only(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    CounterCache(blocked / "counters").write("b" * 64, COUNTERS)       # no error
    assert CounterCache(blocked / "counters").read("b" * 64) is None


def test_clear_removes_its_own_entries_only_and_nothing_through_a_link(tmp_path):
    directory = tmp_path / "counters"
    cache = CounterCache(directory)
    for key in ("c" * 64, "d" * 64):
        cache.write(key, COUNTERS)
    (directory / "mine.json").write_text("{}")
    (directory / f".{'e' * 64}.x.tmp").write_text("")
    assert counter_cache.clear(directory) == 2
    assert sorted(p.name for p in directory.iterdir()) == ["mine.json"]
    link = tmp_path / "linked"
    os.symlink(directory, link)
    with pytest.raises(RooflintError, match="symbolic link"):
        counter_cache.clear(link)
    assert counter_cache.clear(tmp_path / "never") == 0


def test_an_include_that_leaves_the_family_directory_is_not_read(family, tmp_path):
    """`#include "../x.cuh"` names a file outside the family: the key reads nothing there
    (the module docstring says such a change needs --no-counter-cache), and a path like
    ../../etc/passwd is never opened."""
    outside = tmp_path / "outside.cuh"
    outside.write_text("#define A 1\n")
    manifest = load_manifest(str(family))
    source = family / manifest.variants[0].source
    source.write_text('#include "../outside.cuh"\n#include "../../../../etc/passwd"\n'
                      + source.read_text())
    job = resolve(manifest, {}, {"num_sms": 132}, TimingJob()).job

    def key():
        return variant_key(job, job.variants[0], "nvrtc 12.8", RECORDED.gpu, "2025.3.1.0",
                           ("dram__bytes_read.sum",))
    before = key()
    outside.write_text("#define A 2\n")
    assert key() == before
    source.write_text(source.read_text() + "// changed\n")
    assert key() != before
