"""Whether launching a kernel costs as much as running it is judged on its time in the
program's run: a profile's counters are one launch measured apart (cold caches, once), and
a kernel near LAUNCH_COST_S measured so flipped its top move between two passes 2 on 3 % of
noise (the eager training step, H200, 2026-12-01: benchmarks/results/h200/rotation/chosen,
Nsight Compute's pass 2 beside the rotation's)."""

from __future__ import annotations

import json
import lzma
from dataclasses import replace
from pathlib import Path

import pytest

from rooflint.analysis.counters import Counters
from rooflint.analysis.evidence import LAUNCH_COST_S
from rooflint.analysis.observation import Observation, analyse
from rooflint.formats.gpus import find_spec, load_specs

CHOSEN = Path(__file__).parents[2] / "benchmarks" / "results" / "h200" / "rotation" / "chosen"
H200 = find_spec("h200", load_specs())


def _kernel(name: str) -> dict:
    document = json.loads(lzma.decompress((CHOSEN / "train_step-ncu.json.xz").read_bytes()))
    return next(v for f in document["families"] for v in f["variants"] if v["name"] == name)


def _launch_bound(variant: dict, point_scale: float, samples_scale: float = 1.0) -> bool:
    """Whether the kernel is judged launch-bound, its one profiled launch's time scaled by
    ``point_scale`` (as a second measurement of it might read) and its run's by
    ``samples_scale``."""
    counters = Counters(**variant["counters"])
    counters = replace(counters, duration_s=counters.duration_s * point_scale)
    analysis = analyse(Observation(variant["name"], variant["precision"],
                                   [s * samples_scale for s in variant["samples_s"]],
                                   counters, None, counters.grid_size, 0, 1,
                                   point_time_s=counters.duration_s, cached=True),
                       H200, H200.sms, None)
    return "launch_overhead" in [c.name for c in analysis.verdict.causes] or any(
        m.id == "launch_amortise" for m in analysis.verdict.moves)


@pytest.mark.parametrize("name", ["cast bf16→fp32 (4608 blocks)", "add at train_step.py:37"])
def test_a_kernel_the_run_launches_for_under_the_launch_cost_is_launch_bound_however_measured(
        name):
    """A cast measured at 9.86 us and an add at 10.14 us, both under 10 us in the run
    (7.87 and 8.96 us at the median of their launches): launch-bound, whether their one
    measured launch read 5 % more or less."""
    variant = _kernel(name)
    assert LAUNCH_COST_S * 0.95 < variant["counters"]["duration_s"] < LAUNCH_COST_S * 1.05
    assert all(_launch_bound(variant, scale) for scale in (0.95, 0.97, 1.0, 1.03, 1.05))


def test_a_kernel_the_run_takes_longer_than_the_launch_cost_is_not_launch_bound():
    """The same cast, its run's launches 1.5 times as long (11.8 us at the median): not
    launch-bound at any reading of its measured launch."""
    variant = _kernel("cast bf16→fp32 (4608 blocks)")
    assert not any(_launch_bound(variant, scale, samples_scale=1.5)
                   for scale in (0.95, 1.0, 1.05))


def test_a_family_variant_is_judged_on_its_own_timed_runs():
    """A variant's point is the median of its timed runs (no point_time_s): the launch cost
    is judged on it, as before."""
    variant = _kernel("cast bf16→fp32 (4608 blocks)")
    counters = Counters(**variant["counters"])
    for median_s, bound in ((8e-6, True), (12e-6, False)):
        analysis = analyse(Observation("v", "fp32", [median_s] * 9, counters, None,
                                       counters.grid_size, 256, 1), H200, H200.sms, None)
        assert ("launch_overhead" in [c.name for c in analysis.verdict.causes]) is bound
