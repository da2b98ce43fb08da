"""examples/ci: the gate run per GPU model, each model against its own baseline."""

import json
from pathlib import Path

import pytest
import yaml

from edges import assert_one_line_error, rooflint

CI = Path(__file__).parents[2] / "examples" / "ci"


def matrix_models() -> dict[str, list[str]]:
    github = yaml.safe_load((CI / "github-actions.yml").read_text())
    gitlab = yaml.safe_load((CI / "gitlab-ci.yml").read_text())
    return {"github": github["jobs"]["gate"]["strategy"]["matrix"]["gpu"],
            "gitlab": gitlab["kernel-gate"]["parallel"]["matrix"][0]["GPU"]}


def test_both_workflows_run_the_same_models_each_with_a_baseline_of_that_model():
    models = matrix_models()
    assert models["github"] == models["gitlab"] == ["h100", "h200"]
    for model in models["github"]:
        baseline = json.loads((CI / f"{model}-baseline.json").read_text())
        assert baseline["spec_id"].split("-")[0] == model
        assert model.upper() in baseline["gpu"]


@pytest.mark.parametrize("model, other", [("h100", "h200"), ("h200", "h100")])
def test_a_job_given_another_models_results_stops_instead_of_passing(model, other):
    current = CI.parent / f"{other}-bundled.json"
    outcome = rooflint("gate", "--baseline", str(CI / f"{model}-baseline.json"),
                       "--current", str(current), timeout=60)
    assert_one_line_error(outcome, 2, model.upper())


@pytest.mark.parametrize("model, source", [
    ("h100", CI.parent / "h100-bundled.json"),
    ("h200", CI.parent / "h200-bundled.json"),
])
def test_a_job_on_its_own_model_passes_on_the_results_its_baseline_came_from(model, source):
    outcome = rooflint("gate", "--baseline", str(CI / f"{model}-baseline.json"),
                       "--current", str(source), timeout=60)
    assert outcome.code == 0, outcome.stderr
