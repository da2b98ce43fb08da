"""A user's Nsight Compute report read as rooflint's counters (`rooflint import`), on what
an H200 recorded of tests/fixtures/import/prog.py (see its docstring): ``--set full``
exported in ncu's default units and in base units, ncu's default set, the identities the
derived metrics stand on (identities.py), and what NVIDIA's ncu_report module read of a
report, replayed by a stand-in."""

from __future__ import annotations

import json
import lzma
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from rooflint.common.errors import RooflintError
from rooflint.formats.ncu_log import DURATION, base_unit_scale, parse_rows
from rooflint.measure import imported_report, ncu, source_report
from test_source_report import Context, Range

FIXTURES = Path(__file__).parents[1] / "fixtures" / "import"


def recorded(name: str) -> str:
    return lzma.decompress((FIXTURES / name).read_bytes()).decode()


FULL = parse_rows(recorded("h200-full-set.csv.xz"))
FULL_BASE = parse_rows(recorded("h200-full-set-base-units.csv.xz"))
DEFAULT_SET = parse_rows(recorded("h200-default-set.csv.xz"))
IDENTITIES = parse_rows(recorded("h200-identities.csv.xz"))
# --set full lacks these of rooflint's list, whatever the kernel: L1's bytes (no total of
# its sectors either), fp8's tensor FLOPs (split by sparsity), the tensor instructions (as
# percentages only), and the shared-memory instructions as the hardware counts them
FULL_SET_LACKS = ["l1tex__t_bytes.sum", ncu.SHARED_LOADS, ncu.SHARED_STORES,
                  ncu.TENSOR_FLOPS["fp8-tensor"], ncu.HMMA, ncu.GMMA]


@pytest.mark.parametrize("unit, scale", [
    ("us", 1e3), ("ns", 1.0), ("msecond", 1e6), ("second", 1e9), ("Mbyte", 1e6),
    ("Kbyte/cycle", 1e3), ("Tbyte/s", 1e12), ("sector/ns", 1e9), ("Ghz", 1e9),
    ("%", 1.0), ("inst", 1.0), ("SM", 1.0), ("register/thread", 1.0), ("", 1.0)])
def test_units_scale_to_what_print_units_base_writes(unit, scale):
    assert base_unit_scale(unit) == pytest.approx(scale)


def test_the_default_units_export_reads_as_the_base_units_one_cell_by_cell():
    """Every number of the 14 launches' 2,238 columns: ``0.004096 Mbyte`` is ``4,096
    byte``. (Base units round to two decimals, a zero to -0.01 once, the default to six of
    a larger unit; ncu labels one derived occupancy metric %/Kbyte where its value is per
    byte.)"""
    compared = 0
    for scaled, base in zip(FULL, FULL_BASE, strict=True):
        for metric, value in scaled.items():
            if isinstance(value, float) and isinstance(base[metric], float) and \
                    math.isfinite(value) and metric != "derived__pct_occupancy_per_shared_mem_size":
                assert value == pytest.approx(base[metric], rel=2e-3, abs=1.1e-2), metric
                compared += 1
    assert compared > 14 * 2000


def test_the_identities_hold_on_the_recorded_launches():
    """L2's, L1's and local memory's bytes are 32 per sector, to the byte; a sum is its rate
    per elapsed cycle times the unit's cycles (to the rounding of base units) and its rate
    per second times the duration; SASS's count of shared loads is not the hardware's."""
    gemm = next(row for row in IDENTITIES if "sgemm" in str(row["Kernel Name"]))
    for row in IDENTITIES:
        for metric in (ncu.L2_BYTES, ncu.L1_BYTES, ncu.LOCAL_BYTES[0]):
            assert row[metric] == 32 * row[imported_report.FROM_SECTORS[metric]]
        fma = ncu.SASS_FLOP_COUNTERS[2]
        assert row[fma + ".per_cycle_elapsed"] * row["smsp__cycles_elapsed.avg"] == \
            pytest.approx(row[fma], rel=1e-5)
        assert row[ncu.DRAM_READ + ".per_second"] * row[DURATION] * 1e-9 == \
            pytest.approx(row[ncu.DRAM_READ], rel=1e-9)
    assert gemm["smsp__sass_inst_executed_op_shared_ld.sum"] < 0.95 * gemm[ncu.SHARED_LOADS]


# prog.py's parameters: two Linear layers' weights and biases, and LayerNorm's two vectors
PARAMETERS = 1024 * 4096 + 4096 + 2 * 4096 + 4096 * 1024 + 1024


def test_the_full_set_gives_every_metric_a_point_needs_and_names_the_rest():
    """Its FLOP counters are rates per elapsed cycle, its L2 bytes sectors: both derived.
    AdamW's first foreach kernel (a multiply: the gradients by their scale) counts one
    FLOP per parameter."""
    rows = [imported_report.with_derived(row) for row in FULL]
    for row in rows:
        missing = imported_report.missing_metrics([row], ncu.METRICS)
        assert missing == FULL_SET_LACKS
        assert imported_report.point_lacks(missing) == []
    first = next(row for row in rows if "multi_tensor_apply" in str(row["Kernel Name"]))
    assert ncu.summarize([imported_report.filled(first)]).flops == {
        "fp32": pytest.approx(PARAMETERS, rel=1e-8)}
    assert all(row[ncu.L2_BYTES] == 32 * row["lts__t_sectors.sum"] for row in rows)


def test_the_default_set_has_no_point_its_dram_bytes_and_flops_named():
    rows = [imported_report.with_derived(row) for row in DEFAULT_SET]
    missing = imported_report.missing_metrics(rows, ncu.METRICS)
    assert imported_report.point_lacks(missing) == [
        ncu.DRAM_READ, ncu.DRAM_WRITE, *ncu.SASS_FLOP_COUNTERS]
    assert DURATION not in missing and ncu.OCCUPANCY not in missing


def test_a_precision_the_report_lacks_counts_none_and_is_named():
    """Without fp16's three counters the point stands on fp32's and fp64's."""
    half = set(ncu.SASS_FLOP_COUNTERS[3:6])
    row = {k: v for k, v in imported_report.with_derived(FULL[9]).items()
           if k.removesuffix(".per_cycle_elapsed") not in half}
    missing = imported_report.missing_metrics([row], ncu.METRICS)
    assert half <= set(missing) and imported_report.point_lacks(missing) == []
    counters = ncu.summarize([imported_report.filled(row)])
    assert "fp16" not in counters.flops and counters.flops["fp32"] > 0


# --- ncu_report, replayed ---------------------------------------------------------------

REPORT = json.loads(recorded("h200-two-launches-ncu-report.json.xz"))


@dataclass
class Metric:
    recorded: list

    def value(self):
        return self.recorded[0]

    def unit(self) -> str:
        return self.recorded[1]


@dataclass
class Action:
    launch: dict

    def name(self, base: str = "function") -> str:
        return self.launch[base]

    def metric_names(self) -> tuple[str, ...]:
        return tuple(self.launch["metrics"])

    def metric_by_name(self, name: str) -> Metric | None:
        found = self.launch["metrics"].get(name)
        return None if found is None else Metric(found)


class Module:
    """Stands in for ncu_report: load_report gives the recorded launches."""

    class IAction:
        NameBase_DEMANGLED = "demangled"

    def __init__(self):
        self.loaded: list[str] = []

    def load_report(self, path: str) -> Context:
        self.loaded.append(path)
        return Context([Range([Action(launch) for launch in REPORT])])


def test_the_modules_launches_read_as_the_reports_raw_page(monkeypatch, tmp_path):
    """What ncu_report read of the report, walked, is what ``ncu -i REPORT --csv --page raw
    --print-units base`` exported of it: every metric both hold, and the launch shape."""
    module = Module()
    monkeypatch.setattr(imported_report, "report_module", lambda: module)
    rows = imported_report.report_rows(tmp_path / "full2.ncu-rep")
    exported = parse_rows(recorded("h200-two-launches-base-units.csv.xz"))
    assert module.loaded == [str(tmp_path / "full2.ncu-rep")]
    for walked, page in zip(rows, exported, strict=True):
        shared = [m for m in page if isinstance(page[m], float) and m in walked]
        assert len(shared) > 2000
        for metric in shared:
            if math.isfinite(page[metric]):
                assert walked[metric] == pytest.approx(page[metric], rel=5e-3, abs=6e-3)
        assert (walked["Grid Size"], walked["Block Size"]) == ("(4, 1, 1)", "(128, 1, 1)")
        assert walked["Kernel Name"].startswith("void at::native::vectorized_elementwise")


def test_a_report_without_nsight_compute_says_what_to_install_or_export(monkeypatch, tmp_path):
    monkeypatch.setattr(imported_report, "report_module", lambda: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RooflintError) as refused:
        imported_report.report_rows(tmp_path / "step.ncu-rep")
    said = str(refused.value)
    assert said.startswith(f"{tmp_path / 'step.ncu-rep'}: reading an Nsight Compute report")
    assert "ncu -i step.ncu-rep --csv --page raw > step.csv" in said and "\n" not in said


def test_the_module_is_looked_for_on_pythonpath_then_beside_ncu(monkeypatch):
    monkeypatch.setattr(imported_report.importlib, "import_module",
                        lambda name: (_ for _ in ()).throw(ImportError(name)))
    monkeypatch.setattr(source_report, "interface", lambda: "beside ncu")
    assert imported_report.report_module() == "beside ncu"
