"""Pass 2 by rotation without a GPU: the engine's build (a stand-in nvcc), and the rows it
gives for the probe's recorded step (one H200, 2026-11-30) against Nsight Compute's log of
the same step."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import pytest

from rooflint.analysis.occupancy import SmLimits
from rooflint.formats.ncu_log import BLOCK, GRID
from rooflint.formats.rotation_records import read_rotation
from rooflint.judge.kernel_times import name_key
from rooflint.measure import ncu, rotation
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
    """The recorded rotation (with the H200's SM, which its engine did not yet write) and
    ncu's log of the same step, and each launch's resources as pass 1's trace gives them
    (here ncu's: the two agree, tests/core/test_occupancy.py)."""
    records = read_rotation(_text("rotate-sized.tsv.gz"), _text("rotate-sized.tsv.launches.gz"))
    records = replace(records, sm=H200, sms=132)
    full = ncu.parse_rows(_text("ncu-cold-1.csv.gz"))
    resources = {}
    for launch, row in zip(records.launches, full):
        key = (name_key(launch.name), row[GRID], row[BLOCK])
        resources[key] = KernelResources(
            int(row[ncu.REGISTERS]), int(row["launch__shared_mem_per_block_static"]
                                         + row["launch__shared_mem_per_block_dynamic"]),
            float(row[ncu.DURATION]) * 1e-9)
    return records, full, resources


def test_every_launch_gets_a_row_with_ncus_shape_and_launch_statistics(step):
    records, full, resources = step
    rows = rows_of(records, resources)
    assert len(rows) == 282
    for row, theirs in zip(rows, full):
        assert (row[GRID], row[BLOCK]) == (theirs[GRID], theirs[BLOCK])
        for metric in STATISTICS:
            assert row[metric] == pytest.approx(theirs[metric], rel=0.005, abs=0.0051), metric


def test_each_row_holds_the_rotations_counters_and_pass_ones_duration(step):
    records, _, resources = step
    rows = rows_of(records, resources)
    for row, counters, launch in zip(rows, records.counters, records.launches):
        assert {m: row[m] for m in counters} == counters
        key = (name_key(launch.name), row[GRID], row[BLOCK])
        assert row[ncu.DURATION] == pytest.approx(resources[key].duration_s * 1e9)


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
    keys = [(name_key(launch.name), _dims(launch.grid), _dims(launch.block))
            for launch in records.launches]
    unseen = keys[0]
    rows = rows_of(records, {k: v for k, v in resources.items() if k != unseen})
    assert [int(row[ncu.ID]) for row in rows] == [i for i, k in enumerate(keys) if k != unseen]
    assert len(rows) < 282


def test_no_rows_without_the_sms_limits(step):
    records, _, resources = step
    assert rows_of(replace(records, sm=None), resources) == []


def _dims(shape):
    return f"({', '.join(map(str, shape))})"


def test_the_engine_is_built_once_per_toolkit(tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    nvcc = stand_in_nvcc(tmp_path, f'echo "$@" >> {calls}\nfor a; do out=$a; done\n'
                                       'touch "$out"\n')
    monkeypatch.setattr(rotation, "find_nvcc", lambda: nvcc)
    monkeypatch.setattr(rotation, "toolkit_roots", lambda: [tmp_path / "cuda"])
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path / "cache"))
    built = rotation.engine_library()
    assert built.name == rotation.LIBRARY and built.is_file()
    assert rotation.engine_library() == built
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
