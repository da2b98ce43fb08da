"""The source pass on the GPU (issue 14): the strided read's move names its load line, in
the user's .cu, whether NVRTC or nvcc built it; ncu_report reads its reports as ncu -i does
(issue 27)."""

from pathlib import Path

import pytest

from rooflint.analysis.moves import rule_for
from rooflint.analysis.sourcelines import MEASURES, SourceProfile, supporting
from rooflint.engine.families import RunOptions, run
from rooflint.measure import ncu, source_report
from rooflint.output.live import Listener

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


def alike(by_module: SourceProfile, by_csv: SourceProfile) -> bool:
    """The same lines with the same measures, to ncu -i's rounding of what it prints."""
    def measures(profile: SourceProfile) -> dict:
        return {(line.file, line.line, line.text): [getattr(line, m) for m in MEASURES]
                for line in profile.lines}
    csv = measures(by_csv)
    return by_module.totals == pytest.approx(by_csv.totals, rel=1e-3) and \
        measures(by_module).keys() == csv.keys() and \
        all(values == pytest.approx(csv[key], rel=1e-3)
            for key, values in measures(by_module).items())


@pytest.mark.parametrize("family, variants", [("stream", ["strided_read", "copy_float4"]),
                                              ("gemm_fp32", ["tiled", "blocked_1d"])])
def test_ncu_report_reads_each_source_report_as_ncu_i_does(monkeypatch, family, variants):
    """Every report of the source pass read both ways (issue 27): ncu_report, from the ncu
    on PATH, and ncu -i's CSV; the run keeps what ncu_report read, and says so."""
    module = source_report.interface()
    if module is None:
        pytest.skip("ncu_report does not import from the installation of the ncu on PATH")
    read = []

    def both(report: Path) -> dict[int, SourceProfile]:
        by_module = source_report.profiles_by_variant(module.load_report(str(report)))
        read.append((by_module, ncu.read_source_csv(report)))
        return by_module
    monkeypatch.setattr(source_report, "read_source_report", both)
    result = run(RunOptions(targets=[family], variants=variants, sizes={}, counters="ncu",
                            source=True), Listener())
    assert result.settings.source_reader == "ncu_report" and read
    for by_module, by_csv in read:
        assert by_module.keys() == by_csv.keys() and by_csv
        for index, profile in by_csv.items():
            assert alike(by_module[index], profile), (index, by_module[index], profile)
