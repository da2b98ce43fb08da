"""The program's summary (issue 47) fits MAX_LINES lines at 140 and 100 columns for every
committed profile, the hostile fixtures' long and odd kernel names among them."""

from __future__ import annotations

import pytest

from edges import REPO
from rooflint.formats.results import read_result
from rooflint.judge.program_fixes import fixes_of
from rooflint.output.program_summary import MAX_LINES, summary_lines

PROFILES = sorted(p for p in [*(REPO / "examples" / "profile").glob("*.json"),
                              *(REPO / "tests" / "fixtures" / "results").glob("*.json")]
                  if '"mode": "profile"' in p.read_text())


@pytest.mark.parametrize("width", [140, 100])
@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_the_summary_fits_its_lines_and_columns(path, width):
    result = read_result(path)
    lines = summary_lines(result, fixes_of(result), width)
    assert len(lines) <= MAX_LINES
    assert all(len(line) <= width and line.isprintable() for line in lines)


def test_the_eager_step_s_summary_leads_with_its_unfused_work():
    result = read_result(REPO / "examples" / "profile" / "h200-profile-train-eager.json")
    lines = summary_lines(result, fixes_of(result), 140)
    assert lines[1].startswith("GPU time by kind: GEMM / convolution 32%")
    fixes = [line for line in lines if line[:3].strip().rstrip(".").isdigit()]
    assert "torch.compile the chain" in fixes[0] and "bf16" in fixes[1]
