"""benchmarks/rotation without a GPU: the probe's recorded counters (CUPTI's range profiler,
one pass a training step, an L2 flush before each launch) against Nsight Compute's on the
same step, one H200, 2026-11-30."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "rotation"))
import compare  # noqa: E402

WORK = ["smsp__inst_executed.sum", "l1tex__t_bytes.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "sm__inst_executed_pipe_tensor_op_gmma.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]


@pytest.fixture(scope="module")
def recorded():
    return (compare.in_launch_order(compare.rotation(compare.RESULTS / compare.ROTATION)),
            compare.ncu_rows(compare.RESULTS / compare.FIRST_NCU),
            compare.ncu_rows(compare.RESULTS / compare.SECOND_NCU))


@pytest.fixture(scope="module")
def summary():
    return compare.summary()


def test_the_step_took_seven_passes_of_282_launches_each():
    records = compare.rotation(compare.RESULTS / compare.ROTATION)
    assert (records.passes, len(records.launches), len(records.counters)) == (7, 282, 282)
    assert records.sm is None                   # recorded before the engine wrote it


def test_the_rotation_and_ncu_count_the_same_work_launch_by_launch(recorded):
    """Instructions and bytes through L1 are the kernel's own, whatever the caches hold: equal
    counts show the flush kernel's ranges were told apart and the launches line up (within
    2 % or a few sectors: a cooperative GEMM's instructions vary with its tile scheduling,
    1.2 % on one, and one 4 KiB launch read 512 bytes more under the rotation)."""
    rotation, first, _ = recorded
    assert len(rotation) == len(first) == 282
    for own, row in zip(rotation, first):
        for metric in WORK:
            assert own[metric] == pytest.approx(float(row[metric]), rel=0.02, abs=1024)


def test_dram_reads_agree_where_the_caches_were_flushed(recorded):
    """The flush kernel is what makes DRAM bytes comparable: the probe without it read 60 %
    less from DRAM than ncu on the median launch (the step's tensors were in L2)."""
    rotation, first, _ = recorded
    spread = {s.metric: s for s in compare.spreads(rotation, first)}
    assert spread["dram__bytes_read.sum"].median_pct < 1
    assert spread["dram__bytes_read.sum"].over_5_pct < 0.2 * 282


def test_the_rotation_changes_fewer_verdicts_than_ncu_run_twice(summary):
    """Issue 50's check: the faster path (the rotation's counters, occupancy computed from
    the launches' resources) against the full path on the same kernels, with the full
    path's own spread as the yardstick."""
    verdicts = summary["verdicts"]
    itself = verdicts["second ncu run against the first"]
    for case in ("rotation against the first ncu run", "rotation against the second ncu run"):
        assert verdicts[case]["kernels"] == itself["kernels"] == 182
        assert verdicts[case]["bound"] <= itself["bound"]
        assert verdicts[case]["top_move"] <= itself["top_move"]


def test_the_committed_summary_is_what_the_recordings_give(summary):
    committed = json.loads((compare.RESULTS / "summary.json").read_text())
    assert committed == json.loads(json.dumps(summary))


# The user-range probe (benchmarks/rotation/select_probe.sh at 1df5693, H200, 2026-11-30): ranges
# pushed in the launch callback around every RL_EVERY-th launch of the training step, the
# flush outside them, against automatic ranges (a range every kernel, the flush's too).
SELECT = REPO / "benchmarks" / "results" / "h200" / "rotation" / "select"


def _ranges(tag: str) -> list[dict[str, str]]:
    import csv
    import gzip
    text = gzip.decompress((SELECT / f"rotate-{tag}.tsv.gz").read_bytes()).decode()
    table = list(csv.reader([line for line in text.splitlines() if not line.startswith("#")],
                            delimiter="\t"))
    return [dict(zip(table[0], row)) for row in table[1:]]


def test_user_ranges_hold_only_the_launches_pushed_with_their_work_counted_alike():
    """Every launch pushed got a range of its own, named by its place in the step, and no
    flush did (282 and 71 ranges, not 564); they counted the instructions of each launch's
    automatic range (within 2 %, all but one), its DRAM reads on three of four launches."""
    automatic = _ranges("auto-0")[1::2]              # the launches' ranges, not the flushes'
    every, fourth = _ranges("user-1"), _ranges("user-4")
    assert (len(automatic), len(every), len(fourth)) == (282, 282, 71)
    assert [int(r["name"]) for r in fourth] == list(range(0, 282, 4))
    def alike(metric: str, r: dict[str, str]) -> bool:
        theirs, mine = float(automatic[int(r["name"])][metric]), float(r[metric])
        return abs(mine - theirs) <= 0.02 * max(theirs, 1.0)
    for user in (every, fourth):        # a cooperative GEMM's instructions vary by 2 % or so
        assert sum(alike("smsp__inst_executed.sum", r) for r in user) >= 0.99 * len(user)
        assert sum(alike("dram__bytes_read.sum", r) for r in user) >= 0.75 * len(user)


def test_user_ranges_time_more_than_the_kernel():
    """Their gpu__time_duration is the range's, longer than the kernel's (median 1.8x of the
    automatic range's): the duration cannot come from them as it is."""
    import statistics
    automatic = _ranges("auto-0")[1::2]
    ratios = [float(r["gpu__time_duration.sum"])
              / float(automatic[int(r["name"])]["gpu__time_duration.sum"])
              for r in _ranges("user-1")]
    assert statistics.median(ratios) > 1.5
