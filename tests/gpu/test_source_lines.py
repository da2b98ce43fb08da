"""The source pass on the GPU (issue 14): the strided read's move names its load line, in
the user's .cu, whether NVRTC or nvcc built it."""

from pathlib import Path

import pytest

from rooflint.analysis.moves import rule_for
from rooflint.commands.run import RunOptions, run
from rooflint.output.live import Listener
from rooflint.analysis.sourcelines import supporting

pytestmark = pytest.mark.gpu
FAMILIES = Path(__file__).parent.parent / "families"
LOAD_LINE = "stream.cu:36  "


def test_the_strided_reads_move_points_at_its_load_line():
    result = run(RunOptions(targets=["stream"], variants=["strided_read", "copy_float4"],
                            sizes={}, counters="ncu", source=True), Listener())
    strided = next(v for v in result.families[0].variants if v.name == "strided_read")
    top = strided.verdict.moves[0]
    assert top.id == "cut_redundant_traffic", top
    lines = supporting(strided.source_lines, rule_for(top.id).lines)
    assert lines and lines[0].startswith(LOAD_LINE) and "excessive L2 sectors" in lines[0], lines
    assert "x[(i % m) * stride + i / m]" in lines[0]


def test_an_nvcc_built_kernel_has_its_lines_too():
    result = run(RunOptions(targets=[str(FAMILIES / "sgemm_nvcc")], variants=["naive"],
                            sizes={}, counters="ncu", source=True), Listener())
    naive = result.families[0].variants[0]
    assert naive.source_lines and naive.source_lines.totals["stall_samples"] > 0
    assert all(Path(line.file).suffix in (".cu", ".cuh", ".h") for line in naive.source_lines.lines)
