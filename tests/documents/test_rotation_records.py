"""The rotation engine's files read back: the probe's recorded step (one H200, 2026-11-30)
and files that do not fit, each refused in one line that says why."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from rooflint.analysis.occupancy import SmLimits
from rooflint.formats.rotation_records import UnreadableRotation, read_rotation
from rooflint.measure import ncu

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200" / "rotation"
HEADER = "range\tname\tdram__bytes_read.sum\tsmsp__inst_executed.sum"


def _recorded(name: str) -> str:
    return gzip.decompress((RECORDED / name).read_bytes()).decode()


def _ranges(*values: tuple[float, float], sm: str = "") -> str:
    lines = ["# dropped 0", HEADER] if not sm else [sm, "# dropped 0", HEADER]
    lines += [f"{i}\t{i}\t{a}\t{b}" for i, (a, b) in enumerate(values)]
    return "\n".join(lines) + "\n"


def _launches(*passes: list[str]) -> str:
    return "".join(f"{number}\t{name}\t4096,1,1\t128,1,1\t0\t32\t0\t0\n"
                   for number, names in enumerate(passes) for name in names)


def test_the_recorded_training_step_reads_as_282_launches_with_their_counters():
    """Nsight Compute's run of the same step launched the same shapes in the same order."""
    ranges = _recorded("rotate-sized.tsv.gz")
    records = read_rotation(ranges, _recorded("rotate-sized.tsv.launches.gz"))
    metrics = next(line for line in ranges.splitlines() if line.startswith("range")).split()[2:]
    assert (len(records.launches), records.passes, len(metrics)) == (282, 7, 43)
    assert sorted(records.counters) == list(range(282))
    assert all(list(counters) == metrics for counters in records.counters.values())
    ncu_shapes = [(row["Grid Size"], row["Block Size"]) for row in
                  ncu.parse_rows(_recorded("ncu-cold-1.csv.gz"))]
    assert [(f"({', '.join(map(str, launch.grid))})", f"({', '.join(map(str, launch.block))})")
            for launch in records.launches] == ncu_shapes
    assert all(launch.name.startswith("_Z") or launch.name.isidentifier()
               for launch in records.launches)


def test_the_flush_ranges_are_the_first_of_each_pair():
    records = read_rotation(_ranges((120e6, 1000), (4096, 77), (120e6, 1000), (8192, 99)),
                            _launches(["_Z1av", "_Z1bv"], ["_Z1av", "_Z1bv"]))
    assert {p: c["smsp__inst_executed.sum"] for p, c in records.counters.items()} == \
        {0: 77, 1: 99}
    assert [launch.name for launch in records.launches] == ["_Z1av", "_Z1bv"]


def _named(*ranges: tuple[str, float, float]) -> str:
    """A ranges file of user ranges, each named as the engine names them (its place)."""
    lines = ["# dropped 0", HEADER]
    lines += [f"{i}\t{name}\t{a}\t{b}" for i, (name, a, b) in enumerate(ranges)]
    return "\n".join(lines) + "\n"


def test_the_chosen_launches_counters_are_read_by_their_places():
    """Kernels chosen, a range for each one's first launch, named by its place in the step:
    no flush ranges."""
    records = read_rotation(_named(("1", 4096, 77), ("3", 8192, 99)),
                            _launches(["_Z1av", "_Z1bv", "_Z1av", "_Z1cv"],
                                      ["_Z1av", "_Z1bv", "_Z1av", "_Z1cv"]), chosen=True)
    assert {p: c["smsp__inst_executed.sum"] for p, c in records.counters.items()} == \
        {1: 77, 3: 99}
    assert len(records.launches) == 4 and records.passes == 2


@pytest.mark.parametrize("ranges", [
    _named(("1", 1, 1), ("1", 2, 2), ("3", 3, 3)),     # one launch ranged twice
    _named(("1", 1, 1), ("9", 2, 2)),                  # past the step's launches
    _named(("1", 1, 1), ("first", 2, 2)),              # not a place
])
def test_ranges_that_are_not_one_a_launch_are_refused(ranges):
    with pytest.raises(UnreadableRotation, match="not one a launch"):
        read_rotation(ranges, _launches(["_Z1av", "_Z1bv", "_Z1av", "_Z1cv"]), chosen=True)


def test_the_sm_line_gives_the_limits_for_occupancy():
    line = "# sm registers=65536 threads=2048 blocks=32 shared=233472 reserved=1024 sms=132"
    records = read_rotation(_ranges((1, 1), (2, 2), sm=line), _launches(["_Z1av"]))
    assert records.sm == SmLimits(65536, 2048, 32, 233472, 1024)
    assert records.sms == 132


@pytest.mark.parametrize("line", [
    "# sm registers=0 threads=2048 blocks=32 shared=233472 reserved=1024 sms=132",
    "# sm registers=65536 threads=2048 blocks=32 shared=233472 sms=132",
    "# sm registers=lots threads=2048 blocks=32 shared=233472 reserved=1024 sms=132",
])
def test_an_sm_line_missing_a_limit_gives_none_rather_than_a_wrong_occupancy(line):
    records = read_rotation(_ranges((1, 1), (2, 2), sm=line), _launches(["_Z1av"]))
    assert records.sm is None and records.sms is None


def test_the_sm_line_gives_the_l2_and_the_clocks_the_driver_knows():
    line = ("# sm registers=65536 threads=2048 blocks=32 shared=233472 reserved=1024 sms=132 "
            "l2=62914560 clock=1980000 memclock=0")
    records = read_rotation(_ranges((1, 1), (2, 2), sm=line), _launches(["_Z1av"]))
    assert records.device == {"l2_cache_size": 62914560, "clock_rate": 1980000}
    assert records.sm == SmLimits(65536, 2048, 32, 233472, 1024)
    older = read_rotation(_ranges((1, 1), (2, 2)), _launches(["_Z1av"]))
    assert older.device == {}


def test_a_reserve_of_zero_is_a_limit_before_ampere():
    line = "# sm registers=65536 threads=1024 blocks=16 shared=65536 reserved=0 sms=40"
    records = read_rotation(_ranges((1, 1), (2, 2), sm=line), _launches(["_Z1av"]))
    assert records.sm == SmLimits(65536, 1024, 16, 65536, 0)


def test_a_pass_that_launched_other_kernels_is_refused_saying_where():
    with pytest.raises(UnreadableRotation, match=r"pass 2 launched 2 kernels where the first "
                                                 r"launched 2, differing from launch 2 on"):
        read_rotation(_ranges((1, 1), (2, 2), (3, 3), (4, 4)),
                      _launches(["_Z1av", "_Z1bv"], ["_Z1av", "_Z1cv"]))


def test_a_pass_that_launched_fewer_kernels_is_refused():
    with pytest.raises(UnreadableRotation, match="pass 2 launched 1 kernels where the first "
                                                 "launched 2, differing from launch 2 on"):
        read_rotation(_ranges((1, 1), (2, 2), (3, 3), (4, 4)),
                      _launches(["_Z1av", "_Z1bv"], ["_Z1av"]))


@pytest.mark.parametrize("ranges, launches, said", [
    (_ranges((1, 1)), _launches(["_Z1av"]), "1 ranges for 1 launches and their flushes"),
    (_ranges((1, 1), (2, "many")), _launches(["_Z1av"]), "'many' for a count"),
    (_ranges((1, 1), (2, -5)), _launches(["_Z1av"]), "'-5' for a count"),
    (_ranges((1, 1), (2, "nan")), _launches(["_Z1av"]), "'nan' for a count"),
    (_ranges((1, 1), (2, 2)) + "9\t9\t1\n", _launches(["_Z1av"]), "1 values for 2 counters"),
    ("# dropped 0\n", _launches(["_Z1av"]), "holds no ranges"),
    (_ranges((1, 1), (2, 2)), "", "recorded no launch"),
    (_ranges((1, 1), (2, 2)), "0\t_Z1av\t4096,1\t128,1,1\t0\n", "line 1 of the launches"),
    (_ranges((1, 1), (2, 2)), "zero\t_Z1av\t4096,1,1\t128,1,1\t0\n", "line 1 of the launches"),
])
def test_files_that_do_not_fit_are_refused_in_one_line(ranges, launches, said):
    with pytest.raises(UnreadableRotation, match=said) as refused:
        read_rotation(ranges, launches)
    assert "\n" not in str(refused.value)
