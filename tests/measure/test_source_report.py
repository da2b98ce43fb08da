"""The source pass's report read through NVIDIA's ncu_report module (issue 27), on a CPU:
the walk over its objects with stand-ins that answer as the Python Report Interface
documents them, the module found in the installation of the ncu on PATH, and the reader
chosen (ncu_report where it imports, ncu -i's CSV otherwise).

The stand-in report holds the launches tests/fixtures/ncu/h100-source-strided-read.csv
recorded (stream's strided_read with stride 32, then 1, each in its variant range), an
instruction at a time: the page lists each line's sums and its first instructions, the
last instruction of a line here carries the rest of its sums (the rows cut from the
recording). Both readers must give the same profiles."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rooflint.analysis.sourcelines import profile_of
from rooflint.measure import ncu, source_report
from test_sourcelines import PAGE, STRIDED, launches

FILE = "/work/main/kernels/stream/stream.cu"
SAMPLES, EXCESSIVE, NWAY, BARRIER = (m.metric for m in ncu.SOURCE_MEASURES)
SIGNATURE = ('extern "C" __global__ void strided_read(const float* __restrict__ x, '
             'float* __restrict__ out,')
# The file as --import-source copied it into the report: the recorded lines, indented as
# in stream.cu (ncu's page prints them stripped), the others blank here.
IMPORTED = "\n" * 31 + "\n".join([
    SIGNATURE, "                                        long long n, long long stride) {",
    "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;",
    "    long long m = n / stride;", f"    {STRIDED}", "}"]) + "\n"
# Each launch's instructions: (address, line, stall samples, excessive L2 sectors).
STRIDE_32 = [(0x200, 32, 38, 0),
             (0x210, 34, 5, 0), (0x220, 34, 25, 0), (0x230, 34, 1135, 0),
             (0x4b0, 36, 42, 0), (0x4c0, 36, 13, 0), (0x4d0, 36, 46037, 14680064),
             (0x880, 37, 9, 0), (0x890, 37, 4602, 0)]
STRIDE_1 = [(0x200, 32, 64, 0),
            (0x210, 34, 7, 0), (0x220, 34, 27, 0), (0x230, 34, 1432, 0),
            (0x4b0, 36, 44, 0), (0x4c0, 36, 16, 0), (0x4d0, 36, 6638, 0),
            (0x880, 37, 6, 0), (0x890, 37, 212, 0)]
NO_LINE = 0x9f0     # an instruction without line information: on no line of the page


# --- stand-ins for ncu_report's objects, answering as its documentation says -------------

@dataclass
class Metric:
    """An IMetric: a value per instance; with correlation IDs, the instances' addresses."""

    values: list[float]
    addresses: list[int] | None = None

    def num_instances(self) -> int:
        return len(self.values)

    def as_double(self, instance: int) -> float:
        return float(self.values[instance])

    def as_uint64(self, instance: int) -> int:
        return int(self.values[instance])

    def has_correlation_ids(self) -> bool:
        return self.addresses is not None

    def correlation_ids(self) -> Metric:
        return Metric([float(a) for a in self.addresses])


@dataclass
class SourceInfo:
    file: str
    number: int

    def file_name(self) -> str:
        return self.file

    def line(self) -> int:
        return self.number


@dataclass
class Domain:
    ranges: list[str]

    def push_pop_ranges(self) -> list[str]:
        return self.ranges


@dataclass
class NvtxState:
    by_id: dict[int, Domain]

    def domains(self) -> list[int]:
        return list(self.by_id)

    def domain_by_id(self, domain: int) -> Domain:
        return self.by_id[domain]


@dataclass
class Action:
    ranges: list[str]
    metrics: dict[str, Metric]
    lines: dict[int, int]                         # address -> line of FILE
    files: dict[str, str] = field(default_factory=lambda: {FILE: IMPORTED})
    asked: list[int] = field(default_factory=list)
    elsewhere: dict[int, tuple[str, int]] = field(default_factory=dict)   # other files' lines

    def nvtx_state(self) -> NvtxState:
        return NvtxState({0: Domain([]), 7: Domain(self.ranges)})

    def metric_by_name(self, name: str) -> Metric | None:
        return self.metrics.get(name)

    def source_info(self, address: int) -> SourceInfo | None:
        self.asked.append(address)
        if address in self.elsewhere:
            return SourceInfo(*self.elsewhere[address])
        return SourceInfo(FILE, self.lines[address]) if address in self.lines else None

    def source_files(self) -> dict[str, str]:
        return self.files


@dataclass
class Range:
    actions: list[Action]

    def num_actions(self) -> int:
        return len(self.actions)

    def action_by_idx(self, index: int) -> Action:
        return self.actions[index]


@dataclass
class Context:
    ranges: list[Range]

    def num_ranges(self) -> int:
        return len(self.ranges)

    def range_by_idx(self, index: int) -> Range:
        return self.ranges[index]


def launch(variant: int, instructions: list[tuple[int, int, float, float]]) -> Action:
    """A launch in variant range ``variant``, its instructions' samples and excessive
    sectors per address (and one sampled instruction without a line), no bank conflicts,
    and an instanced metric that is not per instruction."""
    addresses = [a for a, *_ in instructions] + [NO_LINE]
    return Action(ranges=["warm-up", f"rooflint-variant/{variant}"], lines={
        address: line for address, line, *_ in instructions}, metrics={
        SAMPLES: Metric([s for _, _, s, _ in instructions] + [999], addresses),
        EXCESSIVE: Metric([e for *_, e in instructions] + [0], addresses),
        NWAY: Metric([0.0] * len(addresses), addresses),
        "smsp__pcsamp_interval": Metric([5.0])})


RECORDED = Context([Range([launch(0, STRIDE_32)]), Range([launch(1, STRIDE_1)])])


def csv_profiles() -> dict:
    """What ncu -i's pages of the same launches give (ncu.read_source_csv's reading)."""
    return {index: profile_of(ncu.source_page_lines(page))
            for index, page in enumerate(launches(PAGE))}


# --- the walk ------------------------------------------------------------------------------

def test_both_readers_give_the_same_lines_for_the_recorded_launches():
    assert source_report.profiles_by_variant(RECORDED) == csv_profiles()


def test_a_launchs_lines_sum_their_instructions_in_line_order_with_their_text():
    action = launch(0, STRIDE_32)
    lines = source_report.launch_lines(action)
    assert [(line.line, line.stall_samples) for line in lines] == [
        (32, 38), (34, 1165), (36, 46092), (37, 4611)]
    assert lines[2].excessive_sectors == 14680064 and lines[2].text == STRIDED
    assert lines[0].text == SIGNATURE and lines[0].file == FILE
    assert sorted(set(action.asked)) == sorted(action.asked)    # each address asked once


def test_a_variants_launches_add_up_and_launches_outside_a_variant_are_left_out():
    outside = launch(0, STRIDE_1)
    outside.ranges = ["warm-up"]
    context = Context([Range([launch(0, STRIDE_32), launch(0, STRIDE_1), outside])])
    [(index, profile)] = source_report.profiles_by_variant(context).items()
    both = profile_of([*ncu.source_page_lines(launches(PAGE)[0]),
                       *ncu.source_page_lines(launches(PAGE)[1])])
    assert index == 0 and profile == both


def test_what_a_report_lacks_counts_nothing():
    """A metric the report lacks, a value that is no number, a file not imported: as the
    page's missing column, cell without a number and empty text."""
    action = launch(0, [(0x4d0, 36, math.nan, 14680064)])
    del action.metrics[NWAY]
    action.files = {}
    [line] = source_report.launch_lines(action)
    assert (line.stall_samples, line.excessive_sectors, line.bank_conflicts) == (0, 14680064, 0)
    assert line.text == ""


# --- where ncu_report is, and which reader reads -------------------------------------------

def module_at(directory: Path, body: str = "def load_report(path):\n    return path\n") -> Path:
    (directory / "extras" / "python").mkdir(parents=True)
    (directory / "extras" / "python" / "ncu_report.py").write_text(body)
    return directory / "extras" / "python"


def test_the_module_is_found_beside_the_ncu_on_path_through_links(tmp_path):
    installed = tmp_path / "NVIDIA-Nsight-Compute-2025.3"
    extras = module_at(installed)
    (installed / "ncu").write_text("#!/bin/sh\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ncu").symlink_to(installed / "ncu")
    assert source_report.interface_directory(tmp_path / "bin" / "ncu", None) == extras


def test_behind_the_toolkits_ncu_script_the_installation_of_its_version(tmp_path, monkeypatch):
    """/usr/local/cuda/bin/ncu runs the newest of <toolkit>/nsight-compute-<version> and
    /opt/nvidia/nsight-compute/<version>: the one whose version ncu --version reports."""
    toolkit, opt = tmp_path / "cuda-12.8", tmp_path / "opt"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "bin" / "ncu").write_text("#!/bin/sh\n# runs the newest Nsight Compute\n")
    older = module_at(toolkit / "nsight-compute-2025.1.1")
    toolkits = module_at(toolkit / "nsight-compute-2025.3.1")
    optional = module_at(opt / "2025.3.2")
    monkeypatch.setattr(source_report, "INSTALLATIONS", opt)
    ncu_on_path = toolkit / "bin" / "ncu"
    assert source_report.interface_directory(ncu_on_path, "2025.3.1.0") == toolkits
    assert source_report.interface_directory(ncu_on_path, "2025.1.1.0") == older
    assert source_report.interface_directory(ncu_on_path, "2025.3.2.0") == optional
    assert source_report.interface_directory(ncu_on_path, "2024.1.0.0") is None
    assert source_report.interface_directory(ncu_on_path, None) is None


@pytest.fixture
def forget_ncu_report(monkeypatch):
    """The stand-in modules imported as ncu_report are gone after the test."""
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)
    yield
    sys.modules.pop("ncu_report", None)


def test_the_module_is_imported_from_there_and_the_import_path_left_as_it_was(
        tmp_path, forget_ncu_report):
    extras = module_at(tmp_path / "good")
    path = list(sys.path)
    module = source_report.imported(extras)
    assert module.load_report("r.ncu-rep") == "r.ncu-rep" and sys.path == path
    sys.modules.pop("ncu_report")
    broken = module_at(tmp_path / "broken", "import _ncu_report_built_for_another_system\n")
    assert source_report.imported(broken) is None and sys.path == path


def test_without_the_module_the_csv_reads_and_the_result_says_which(monkeypatch, tmp_path):
    report = tmp_path / "ncu-0.ncu-rep"
    monkeypatch.setattr(source_report, "interface", lambda: None)
    monkeypatch.setattr(ncu, "read_source_csv", lambda path: {0: f"csv of {path.name}"})
    assert source_report.read_source_report(report) == {0: "csv of ncu-0.ncu-rep"}
    assert source_report.reader() == source_report.SourceReader.CSV


@dataclass
class Interface:
    """A stand-in ncu_report module: load_report gives the recorded report, or fails."""

    failure: Exception | None = None

    def load_report(self, path: str) -> Context:
        if self.failure:
            raise self.failure
        return RECORDED


def test_with_the_module_it_reads_and_a_failure_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(source_report, "interface", lambda: Interface())
    monkeypatch.setattr(ncu, "read_source_csv", lambda path: pytest.fail("ncu -i was run"))
    report = tmp_path / "ncu-0.ncu-rep"
    assert source_report.read_source_report(report) == csv_profiles()
    assert source_report.reader() == source_report.SourceReader.NCU_REPORT
    monkeypatch.setattr(source_report, "interface",
                        lambda: Interface(RuntimeError("Failed to load report")))
    with pytest.raises(ncu.CountersUnavailable) as refused:
        source_report.read_source_report(report)
    assert str(refused.value) == ("ncu_report could not read its report ncu-0.ncu-rep: "
                                  "RuntimeError: Failed to load report")


def test_no_ncu_on_path_means_no_module(monkeypatch):
    def missing():
        raise ncu.CountersUnavailable("ncu (Nsight Compute) is not on PATH")
    monkeypatch.setattr(ncu, "ncu_path", missing)
    source_report.interface.cache_clear()
    try:
        assert source_report.interface() is None
    finally:
        source_report.interface.cache_clear()


def test_a_launch_whose_samples_sit_in_inlined_header_code_is_read_from_its_page():
    """ncu_report places instructions without their inline chain; a launch with more than
    INLINED_SHARE of its samples in another file is read from its CSV page, which has the
    chains, so the header's samples count at the line that called it."""
    page = (Path(__file__).parents[1] / "fixtures" / "ncu"
            / "h100-source-inlined-pipeline.csv").read_text()
    plain = launch(0, STRIDE_32)
    inlined = launch(1, STRIDE_32)
    header = ("/usr/include/cuda_pipeline_helpers.h", 190)
    inlined.elsewhere = {address: header for address, *_ in STRIDE_32[4:7]}   # line 36
    asked = []

    def source_page(launch_index: int) -> str:
        asked.append(launch_index)
        return page
    profiles = source_report.profiles_by_variant(Context([Range([plain, inlined])]), source_page)
    assert asked == [1]
    assert any(line.inlined == "cuda_pipeline_helpers.h:190" for line in profiles[1].lines)
    assert not any(line.inlined for line in profiles[0].lines)
