"""The occupancy calculator against Nsight Compute's launch statistics on every launch
recorded with them (H100 and H200 logs: training steps, a transformer block, probes, the
rotation probe's two ncu runs of a training step), by hand, and over whole ranges of
resources."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from rooflint.analysis.occupancy import LIMITERS, LaunchResources, SmLimits, occupancy
from rooflint.measure import ncu

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "ncu"
ROTATION_PROBE = REPO / "benchmarks" / "results" / "h200" / "rotation"
# Hopper's SM (H100 and H200 alike): the driver's device attributes.
HOPPER = SmLimits(registers=65536, threads=2048, blocks=32, shared_bytes=233472,
                  reserved_shared_bytes=1024)


def _recorded_launches() -> list[dict]:
    logs = [path.read_text() for path in sorted(FIXTURES.glob("*.csv"))]
    logs += [gzip.decompress(path.read_bytes()).decode()
             for path in sorted(ROTATION_PROBE.glob("ncu-*.csv.gz"))]
    return [row for log in logs for row in ncu.parse_rows(log)
            if ncu.OCCUPANCY_LIMITS["shared memory"] in row]


def _resources(row: dict) -> LaunchResources:
    return LaunchResources(
        blocks=int(row["launch__grid_size"]), threads_per_block=int(row["launch__block_size"]),
        registers_per_thread=int(row["launch__registers_per_thread"]),
        shared_bytes_per_block=int(row["launch__shared_mem_per_block_static"]
                                   + row["launch__shared_mem_per_block_dynamic"]))


RECORDED = _recorded_launches()


def test_the_recordings_hold_a_thousand_launches_and_every_limiter():
    limiters = {min(LIMITERS, key=lambda k: row[ncu.OCCUPANCY_LIMITS[k]]) for row in RECORDED}
    assert len(RECORDED) == 1158
    assert limiters == set(LIMITERS)


def _ties_at_the_block_limit(row: dict) -> bool:
    """A launch at full blocks whose carveout the driver sized past 32 blocks: Nsight Compute
    names the block limit, the calculator (shared memory at most the block limit) shared
    memory, first of the tie."""
    theirs = {k: int(row[ncu.OCCUPANCY_LIMITS[k]]) for k in LIMITERS}
    return theirs["blocks"] == min(theirs.values()) < theirs["shared memory"]


def test_only_two_launches_tie_at_the_block_limit():
    assert sum(map(_ties_at_the_block_limit, RECORDED)) == 2


@pytest.mark.parametrize("row", RECORDED, ids=lambda row: str(row[ncu.KERNEL_NAME])[:40])
def test_each_recorded_launch_gets_nsight_computes_occupancy(row):
    launch = _resources(row)
    found = occupancy(launch, HOPPER)
    theirs = {k: int(row[ncu.OCCUPANCY_LIMITS[k]]) for k in LIMITERS}
    assert found.blocks_per_sm == min(theirs.values())
    if not _ties_at_the_block_limit(row):
        assert found.limiter == min(theirs, key=theirs.get)
    assert {k: found.limits[k] for k in ("registers", "warps", "blocks")} == \
        {k: theirs[k] for k in ("registers", "warps", "blocks")}
    # at the largest carveout (at most the block limit); ncu's at the one the driver chose
    assert found.limits["shared memory"] >= min(theirs["shared memory"], theirs["blocks"])
    assert found.theoretical_pct(launch.threads_per_block) == \
        pytest.approx(row[ncu.THEORETICAL_OCCUPANCY], abs=0.01)
    # Nsight Compute writes waves to two decimals (0.12 for a 0.125)
    assert found.waves(launch.blocks, int(row["launch__sm_count"])) == \
        pytest.approx(row[ncu.WAVES], rel=0.005, abs=0.0051)


def test_a_hundred_and_sixty_eight_register_gemm_by_hand():
    """384 threads of 168 registers: 64,512 registers a block, one block an SM (18.75 %)."""
    found = occupancy(LaunchResources(132, 384, 168, 213204), HOPPER)
    assert (found.blocks_per_sm, found.limiter) == (1, "registers")
    assert found.theoretical_pct(384) == 18.75
    assert found.waves(132, 132) == 1.0


def test_shared_memory_limits_when_a_block_asks_for_more_than_half_the_sm():
    """120 KiB a block and 1 KiB of the driver's: one block of 128 threads an SM."""
    found = occupancy(LaunchResources(264, 128, 32, 120 * 1024), HOPPER)
    assert (found.blocks_per_sm, found.limiter) == (1, "shared memory")
    assert found.waves(264, 132) == 2.0


@pytest.mark.parametrize("threads", [32, 96, 128, 256, 384, 512, 1024])
def test_more_registers_or_shared_memory_never_raise_occupancy(threads):
    for registers in range(8, 256, 8):
        fewer = occupancy(LaunchResources(1, threads, registers, 0), HOPPER).blocks_per_sm
        more = occupancy(LaunchResources(1, threads, registers + 8, 0), HOPPER).blocks_per_sm
        assert more <= fewer
    for shared in range(0, 200_000, 4096):
        fewer = occupancy(LaunchResources(1, threads, 32, shared), HOPPER).blocks_per_sm
        more = occupancy(LaunchResources(1, threads, 32, shared + 4096), HOPPER).blocks_per_sm
        assert more <= fewer


@pytest.mark.parametrize("threads", range(32, 1025, 32))
def test_resident_warps_never_exceed_the_sm(threads):
    found = occupancy(LaunchResources(1, threads, 16, 0), HOPPER)
    assert 0 < found.theoretical_pct(threads) <= 100
