"""The gate's honesty on the GPU: an A/A run does not cry wolf, injected regressions fail.

Bar (issue 6): 20 A/A gates in a row fail at most once; a variant made 10 % slower fails
every time; 5 % more DRAM bytes at the same time fails on bytes. The figures are written
to $ROOFLINT_GATE_FIGURES (a JSON file) when set, for examples/.
"""

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from rooflint.formats import baseline as baselines
from rooflint.judge.gate import evaluate
from rooflint.engine.families import RunOptions, run

pytestmark = pytest.mark.gpu
FAMILY = str(Path(__file__).parent.parent / "fixtures" / "gate")
A_A_RUNS, INJECTED_RUNS = 20, 5


def measure(variants):
    result = run(RunOptions(targets=[FAMILY], variants=variants, sizes={}, counters="ncu"))
    return baselines.from_result(result)


def as_base(measured, name):
    """The entry measured for ``name``, presented as the `base` variant."""
    entry = next(e for e in measured.entries if e.variant == name)
    return replace(measured, entries=[replace(entry, variant="base")])


def test_a_a_does_not_cry_wolf_and_injected_regressions_fail():
    reference = measure(["base"])
    a_a = [evaluate(reference, measure(["base"])).passed for _ in range(A_A_RUNS)]
    slower, more_bytes = [], []
    for _ in range(INJECTED_RUNS):
        both = measure(["slower", "more_bytes"])
        slower.append(evaluate(reference, as_base(both, "slower")).rows[0])
        more_bytes.append(evaluate(reference, as_base(both, "more_bytes")).rows[0])
    figures = {
        "a_a_failures": a_a.count(False), "a_a_runs": A_A_RUNS,
        "slower_detected": sum(r.outcome == "regressed" for r in slower),
        "slower_slowdowns": [r.slowdown for r in slower],
        "more_bytes_detected": sum(any("DRAM bytes" in x for x in r.reasons) for r in more_bytes),
        "more_bytes_reasons": [r.reasons for r in more_bytes], "injected_runs": INJECTED_RUNS,
    }
    if os.environ.get("ROOFLINT_GATE_FIGURES"):
        Path(os.environ["ROOFLINT_GATE_FIGURES"]).write_text(json.dumps(figures, indent=1))
    assert figures["a_a_failures"] <= 1, figures
    assert figures["slower_detected"] == INJECTED_RUNS, figures
    assert figures["more_bytes_detected"] == INJECTED_RUNS, figures
