"""benchmarks/replay_passes.py without a GPU: its groups are the counter list's parts, and
the committed results measured every group the script now has."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
import replay_passes  # noqa: E402


def test_every_counter_of_the_list_is_in_exactly_one_group():
    """A counter added to measure/ncu.py without a group here would go unmeasured."""
    grouped = Counter(m for metrics in replay_passes.GROUPS.values() for m in metrics)
    assert set(grouped) == set(replay_passes.WHOLE)
    assert max(grouped.values()) == 1


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_committed_results_hold_every_case_the_groups_make(gpu):
    result = json.loads((REPO / "benchmarks" / "results" / gpu / "replay-passes.json")
                        .read_text())
    assert gpu.upper() in result["gpu"]
    passes = {case["case"]: case["passes"] for case in result["cases"]}
    for group in replay_passes.GROUPS:
        assert f"{group} alone" in passes and f"less {group}" in passes
        assert passes[f"less {group}"] <= passes["the list"]
    pairs = [c for c in passes if c.startswith("less ")
             and c.removeprefix("less ") not in replay_passes.GROUPS]
    assert len(pairs) == replay_passes.HEAVIEST * (replay_passes.HEAVIEST - 1) // 2
    assert all(passes[pair] <= passes["the list"] for pair in pairs)
    assert passes["the list"] == passes["the list, reversed"] == 8


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_the_committed_results_measured_the_list_as_it_is(gpu):
    """A counter added to or left out of measure/ncu.py since the results were taken
    makes them stale: benchmarks/replay_passes.py is to be run again on both GPUs."""
    result = json.loads((REPO / "benchmarks" / "results" / gpu / "replay-passes.json")
                        .read_text())
    sizes = {case["case"]: case["metrics"] for case in result["cases"]}
    assert sizes["the list"] == len(replay_passes.WHOLE)
    for group, metrics in replay_passes.GROUPS.items():
        assert sizes[f"{group} alone"] == len(metrics)


@pytest.mark.parametrize("arguments, said", [
    ([], "usage"),
    (["--", "python3", "x.py"], "usage"),
    (["out.csv"], "a .json file"),
    (["data.json", "--", "python3", "train.py", "--config", "data.json"], "program's own"),
])
def test_an_output_that_would_lose_a_file_is_refused_before_any_work(arguments, said):
    with pytest.raises(SystemExit) as refused:
        replay_passes.output_path(arguments)
    assert said in str(refused.value)
