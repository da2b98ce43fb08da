"""benchmarks/counter_trade.py on the committed training-step profiles (no GPU): what a
profile's verdicts would lose without a group of counters, the price of the replay passes
benchmarks/replay_passes.py says each group costs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import counter_trade  # noqa: E402

from rooflint.formats.gpus import find_spec, load_specs  # noqa: E402
from rooflint.formats.results import read_result  # noqa: E402


def _kernels(name: str):
    result = read_result(REPO / "examples" / "profile" / f"{name}.json")
    return ([v for f in result.families for v in f.variants if v.counters],
            find_spec(result.spec_id, load_specs()))


@pytest.mark.parametrize("name", ["h200-profile-train-eager", "h100-profile-train-eager"])
def test_without_the_stalls_no_kernel_keeps_its_stall_cause(name):
    kernels, spec = _kernels(name)
    changed = counter_trade.trade(kernels, spec, ("stalls",))
    assert changed["causes"] == len(kernels) == changed["flags lost"]["top_stall"]
    assert changed["bound"] == 0


def test_every_group_left_out_is_one_replay_passes_measures():
    import replay_passes
    assert set(counter_trade.LEFT_OUT) <= set(replay_passes.GROUPS)
    assert {g for groups in counter_trade.TRADES for g in groups} == set(counter_trade.LEFT_OUT)
