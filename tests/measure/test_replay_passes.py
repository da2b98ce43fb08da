"""benchmarks/replay_passes.py without a GPU: its groups are the counter list's parts, and
the committed results measured every group the script now has."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import replay_passes  # noqa: E402


def test_every_counter_of_the_list_is_in_exactly_one_group():
    """A counter added to measure/ncu.py without a group here would go unmeasured."""
    grouped = Counter(m for metrics in replay_passes.GROUPS.values() for m in metrics)
    assert set(grouped) == set(replay_passes.WHOLE)
    assert max(grouped.values()) == 1


# The list's passes in each GPU's committed results. The H100's were taken with the list
# as it is (two L1 stages, 2026-11-27); the H200's with the list before (five L1 stages,
# 2026-11-26): no H200 could be had since.
LIST_PASSES = {"h100": 8, "h200": 9}
TAKEN_WITH_THE_LIST_AS_IT_IS = {"h100": True, "h200": False}


def _result(gpu: str) -> dict:
    return json.loads((REPO / "benchmarks" / "results" / gpu / "replay-passes.json")
                      .read_text())


@pytest.mark.parametrize("gpu", sorted(LIST_PASSES))
def test_the_committed_results_hold_every_case_the_groups_make(gpu):
    result = _result(gpu)
    assert gpu.upper() in result["gpu"]
    passes = {case["case"]: case["passes"] for case in result["cases"]}
    for group in replay_passes.GROUPS:
        assert f"{group} alone" in passes and f"less {group}" in passes
        assert passes[f"less {group}"] <= passes["the list"]
    pairs = [c for c in passes if c.startswith("less ")
             and c.removeprefix("less ") not in replay_passes.GROUPS]
    assert len(pairs) == replay_passes.HEAVIEST * (replay_passes.HEAVIEST - 1) // 2
    assert all(passes[pair] <= passes["the list"] for pair in pairs)
    assert passes["the list"] == passes["the list, reversed"] == LIST_PASSES[gpu]


@pytest.mark.parametrize("gpu", sorted(TAKEN_WITH_THE_LIST_AS_IT_IS))
def test_the_committed_results_say_which_list_they_measured(gpu):
    """A counter added to or left out of measure/ncu.py makes the results stale until
    benchmarks/replay_passes.py runs again on that GPU; a result taken again makes the
    table above stale. Either way this fails until both agree."""
    sizes = {case["case"]: case["metrics"] for case in _result(gpu)["cases"]}
    now = sizes["the list"] == len(replay_passes.WHOLE) and all(
        sizes[f"{group} alone"] == len(metrics)
        for group, metrics in replay_passes.GROUPS.items())
    assert now == TAKEN_WITH_THE_LIST_AS_IT_IS[gpu]


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
