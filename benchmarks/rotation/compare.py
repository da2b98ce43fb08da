"""Would the rotation's counters change rooflint's verdicts? The probe's recorded results
(benchmarks/results/h200/rotation) against Nsight Compute's on the same training step.

``python3 benchmarks/rotation/compare.py [RESULTS]`` prints, and writes RESULTS/summary.json:

- for each counter, how far the rotation's value is from ncu's (``--cache-control all``),
  launch by launch in launch order (the step launches the same kernels in the same order
  in each run; formats/rotation_records refuses passes that did not);
- the verdicts: each kernel among those making 90 % of the step's time (by ncu's duration)
  judged twice through rooflint's analysis, from ncu's row and from the same row with the
  rotation's counters in place of ncu's and its occupancy, limiter and waves computed from
  the launch's shape, registers and shared memory (analysis/occupancy.py: the range
  profiler reads no launch statistics; the duration stays ncu's, which it does not measure
  either), and the bound, top move and best fraction (what the upside is priced from)
  compared; and the same for ncu's second run against its first, the spread the full path
  has with itself.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from rooflint.analysis.observation import Observation, analyse
from rooflint.analysis.occupancy import LIMITERS, LaunchResources, SmLimits, occupancy
from rooflint.engine.program import dominant_precision
from rooflint.formats import calibration
from rooflint.formats.gpus import load_specs
from rooflint.formats.rotation_records import RotationRecords, read_rotation
from rooflint.judge.upside import best_fraction
from rooflint.measure import ncu

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "h200" / "rotation"
SMS = 132                   # the H200's
H200_SM = SmLimits(registers=65536, threads=2048, blocks=32, shared_bytes=233472,
                   reserved_shared_bytes=1024)
COVERAGE = 0.9              # of the step's time: the kernels a profile chooses by default
BEST_FRACTION_CHANGE = 0.05
ROTATION, FIRST_NCU, SECOND_NCU = "rotate-sized.tsv.gz", "ncu-cold-1.csv.gz", "ncu-cold-2.csv.gz"

Row = dict[str, float | str]


def _text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def rotation(path: Path) -> RotationRecords:
    """The engine's ranges file and its launches file beside it, read."""
    launches = path.with_name(path.name.removesuffix(".gz") + ".launches.gz")
    return read_rotation(_text(path), _text(launches))


def ncu_rows(path: Path) -> list[Row]:
    return ncu.parse_rows(_text(path))


def in_launch_order(records: RotationRecords) -> list[dict[str, float]]:
    """The rotation's counters, a launch each, in the step's order."""
    return [counters for _, counters in sorted(records.counters.items())]


def counters_of(rows: list[Row]) -> list[dict[str, float]]:
    """Another ncu run's counters in the rotation's shape (every metric it read)."""
    return [{name: float(value) for name, value in row.items()
             if "__" in name and isinstance(value, (int, float))} for row in rows]


@dataclass
class Spread:
    """How far one source's counter is from the full path's over a step's launches."""

    metric: str
    median_pct: float
    over_5_pct: int
    launches: int


def spreads(counters: list[dict[str, float]], full: list[Row]) -> list[Spread]:
    found = []
    for metric in counters[0]:
        if metric not in full[0]:
            continue
        gaps = [_relative(own[metric], float(row[metric])) for own, row in zip(counters, full)]
        found.append(Spread(metric, round(100 * statistics.median(gaps), 2),
                            sum(gap > 0.05 for gap in gaps), len(gaps)))
    return found


def _relative(a: float, b: float) -> float:
    largest = max(abs(a), abs(b))
    return 0.0 if largest < 1e-9 else abs(a - b) / largest


@dataclass
class Judged:
    bound: str
    top_move: str | None
    best_fraction: float | None


@cache
def _h200():
    """The H200's spec and its committed calibration."""
    return (next(s for s in load_specs() if s.id == "h200"),
            calibration.load(REPO / "examples" / "h200-calibration.json"))


def judge(row: Row, precision: str) -> Judged | None:
    spec, ceilings = _h200()
    counters = ncu.summarize([row])
    analysis = analyse(Observation(
        name="kernel", precision=precision, samples_s=[counters.duration_s], counters=counters,
        model=None, grid_blocks=counters.grid_size, threads_per_block=0, launches=1,
        point_time_s=counters.duration_s, cached=True), spec, SMS, ceilings)
    if analysis.verdict is None:
        return None
    moves = analysis.verdict.moves
    return Judged(analysis.verdict.bound, moves[0].id if moves else None,
                  best_fraction(analysis.point, analysis.counters, ceilings, precision, SMS))


def with_counters(row: Row, counters: dict[str, float], computed: bool) -> Row:
    """ncu's row with ``counters`` in place of its own and, where ``computed``, its
    occupancy limits, theoretical occupancy and waves computed from the launch's resources."""
    mixed = {**row, **{m: v for m, v in counters.items() if m in row}}
    if not computed:
        return mixed
    launch = LaunchResources(
        blocks=int(row[ncu.GRID_SIZE]), threads_per_block=int(row[ncu.BLOCK_SIZE]),
        registers_per_thread=int(row[ncu.REGISTERS]),
        shared_bytes_per_block=int(row["launch__shared_mem_per_block_static"]
                                   + row["launch__shared_mem_per_block_dynamic"]))
    found = occupancy(launch, H200_SM)
    mixed |= {ncu.OCCUPANCY_LIMITS[k]: float(found.limits[k]) for k in LIMITERS}
    mixed[ncu.THEORETICAL_OCCUPANCY] = found.theoretical_pct(launch.threads_per_block)
    mixed[ncu.WAVES] = found.waves(launch.blocks, SMS)
    return mixed


def chosen(full: list[Row]) -> list[int]:
    """The launches making COVERAGE of the step's time, longest first."""
    order = sorted(range(len(full)), key=lambda i: -float(full[i][ncu.DURATION]))
    total, taken, covered = sum(float(r[ncu.DURATION]) for r in full), [], 0.0
    for index in order:
        if covered >= COVERAGE * total:
            break
        taken.append(index)
        covered += float(full[index][ncu.DURATION])
    return taken


@dataclass
class VerdictChanges:
    kernels: int
    bound: int
    top_move: int
    best_fraction: int
    which: list[str]


def verdict_changes(counters: list[dict[str, float]], full: list[Row],
                    computed: bool = False) -> VerdictChanges:
    """The chosen kernels' verdicts from ``full``'s rows against the same rows with
    ``counters`` in place of their own (with_counters)."""
    spec = _h200()[0]
    changes = VerdictChanges(0, 0, 0, 0, [])
    for index in chosen(full):
        row = full[index]
        mixed = with_counters(row, counters[index], computed)
        precision = dominant_precision(ncu.summarize([row]), spec)
        a, b = judge(row, precision), judge(mixed, precision)
        if a is None or b is None:
            continue
        changes.kernels += 1
        said = []
        if a.bound != b.bound:
            changes.bound += 1
            said.append(f"bound {a.bound} -> {b.bound}")
        if a.top_move != b.top_move:
            changes.top_move += 1
            said.append(f"top move {a.top_move} -> {b.top_move}")
        if a.best_fraction and b.best_fraction is not None and \
                abs(b.best_fraction - a.best_fraction) > BEST_FRACTION_CHANGE * a.best_fraction:
            changes.best_fraction += 1
            said.append(f"best fraction {a.best_fraction:.3f} -> {b.best_fraction:.3f}")
        if said:
            changes.which.append(f"{index} {str(row[ncu.KERNEL_NAME])[:60]}: {'; '.join(said)}")
    return changes


def summary(results: Path = RESULTS) -> dict:
    records = rotation(results / ROTATION)       # every pass launched the step alike
    counters = in_launch_order(records)
    first, second = ncu_rows(results / FIRST_NCU), ncu_rows(results / SECOND_NCU)
    return {
        "launches": len(counters),
        "passes": records.passes,
        "rotation_against_first_ncu": [asdict(s) for s in spreads(counters, first)],
        "verdicts": {
            "second ncu run against the first": asdict(verdict_changes(counters_of(second), first)),
            "rotation against the first ncu run": asdict(verdict_changes(counters, first, True)),
            "rotation against the second ncu run": asdict(verdict_changes(counters, second,
                                                                          True)),
        },
    }


def main() -> None:
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS
    found = summary(results)
    for spread in found["rotation_against_first_ncu"]:
        print(f"{spread['metric']:76s} median {spread['median_pct']:6.2f} %  "
              f"over 5 %: {spread['over_5_pct']}/{spread['launches']}")
    for case, changes in found["verdicts"].items():
        print(f"{case}: {changes['kernels']} kernels, bound {changes['bound']}, top move "
              f"{changes['top_move']}, best fraction {changes['best_fraction']}")
        for line in changes["which"]:
            print(f"    {line}")
    (results / "summary.json").write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
