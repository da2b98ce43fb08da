"""A user's Nsight Compute report read as rooflint's counters (`rooflint import`).

A report comes as its user's ncu wrote it: an ``.ncu-rep``, read through NVIDIA's
``ncu_report`` module where it imports (report_module), else exported by the ncu on PATH
(``ncu -i REPORT --csv --page raw --print-units base``); or that CSV, exported already in
ncu's default units or base ones (formats/ncu_log.parse_rows reads either). Its rows hold
the metrics of the sections it was profiled with (``--set full``, ncu's default set), not
rooflint's list: a metric the report lacks is derived where an identity of Nsight
Compute's makes it from what the report holds (with_derived), and named where not
(missing_metrics). Without a launch's duration, DRAM bytes or FLOPs there is no roofline
point (point_lacks); any other missing metric reads 0, which a Counters field means as
"not read", and the causes it would have shown go unjudged.

The walk over ncu_report's objects (launch_rows) is plain Python, tested with stand-ins on
a CPU; the module itself runs only where Nsight Compute is installed.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from rooflint.common.errors import RooflintError
from rooflint.formats.ncu_log import (BLOCK, DURATION, GRID, ID, KERNEL_NAME, base_unit_scale,
                                      parse_rows)
from rooflint.measure import ncu, source_report
from rooflint.measure.ncu import (DRAM_READ, DRAM_WRITE, L1_BYTES, L1_STAGES, L1_THROUGHPUT,
                                  L2_BYTES, LOCAL_BYTES, SASS_FLOP_COUNTERS, CountersUnavailable)

# Identities of Nsight Compute's, by which a metric of rooflint's list is made from others
# a report holds (each checked on the recorded H200 report, tests/measure/test_imported_report.py):
# - a sum's rate per second is the sum over the launch's gpu__time_duration.sum
#   (dram__bytes_read.sum.per_second x the duration gives dram__bytes_read.sum to the byte);
PER_SECOND = ".per_second"
# - a sum's rate per elapsed cycle is the sum over its unit's average elapsed cycles
#   (``--set full`` holds the SASS FLOP counters only so, for its roofline charts:
#   smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed);
PER_CYCLE = ".per_cycle_elapsed"
# - L1 and L2 move 32-byte sectors: their bytes are 32 x their sectors (to the byte, for
#   L2, L1 and local memory alike, on the launches of a PyTorch GEMM, layer norm and
#   softmax on the H200).
# Not the shared-memory instructions counted in SASS (smsp__sass_inst_executed_op_shared_ld)
# for the hardware's count rooflint reads: cuBLAS's SIMT GEMM's were 12.7 M to 13.5 M.
BYTES_PER_SECTOR = 32
FROM_SECTORS = {metric: metric.replace("_bytes", "_sectors", 1)
                for metric in (L2_BYTES, L1_BYTES, *LOCAL_BYTES)}
# The L1 stages' business, which ``--set full`` does not hold, is read as ncu's own
# l1tex__throughput where a report holds that (ncu.summarize reads either).
COVERED_BY = {stage: L1_THROUGHPUT for stage in L1_STAGES}
# Without these, no roofline point: the time, the DRAM bytes and the FLOPs it stands on.
POINT = (DURATION, DRAM_READ, DRAM_WRITE)


def with_derived(row: dict[str, float | str]) -> dict[str, float | str]:
    """A launch's row with every metric of rooflint's list it lacks and the identities
    above make from what it holds."""
    made: dict[str, float] = {}
    for metric in ncu.METRICS:
        if not _number(row, metric):
            value = _derived(row, metric)
            if value is not None:
                made[metric] = value
    return {**row, **made}


def _derived(row: dict[str, float | str], metric: str) -> float | None:
    """``metric`` made from others of ``row``; None where none of the identities can."""
    per_second, duration = _number(row, metric + PER_SECOND), _number(row, DURATION)
    if per_second is not None and duration is not None:
        return per_second * duration * 1e-9
    cycles = _number(row, f"{metric.split('__', 1)[0]}__cycles_elapsed.avg")
    per_cycle = _number(row, metric + PER_CYCLE)
    if per_cycle is not None and cycles is not None:
        return per_cycle * cycles
    sectors = _number(row, FROM_SECTORS.get(metric, ""))
    return None if sectors is None else BYTES_PER_SECTOR * sectors


def _number(row: dict[str, float | str], metric: str) -> float | None:
    """A finite number the row holds for ``metric``; None where it holds none (no such
    column, "n/a")."""
    value = row.get(metric)
    return value if isinstance(value, float) and math.isfinite(value) else None


def missing_metrics(rows: list[dict[str, float | str]], wanted: Iterable[str]) -> list[str]:
    """The metrics of ``wanted`` some of a kernel's launch rows hold no number for (after
    with_derived), in ``wanted``'s order."""
    return [m for m in wanted
            if any(_number(row, m) is None and _number(row, COVERED_BY.get(m, "")) is None
                   for row in rows)]


def point_lacks(missing: list[str]) -> list[str]:
    """Of a kernel's missing metrics, those its roofline point cannot do without: its
    duration, its DRAM bytes, or every FLOP counter (a precision whose counters the report
    lacks counts none)."""
    flops = [m for m in SASS_FLOP_COUNTERS if m in missing]
    return [m for m in POINT if m in missing] + (flops if len(flops) == len(SASS_FLOP_COUNTERS)
                                                 else [])


def filled(row: dict[str, float | str]) -> dict[str, float | str]:
    """A launch's row with every metric of rooflint's list it holds no number for read as
    0, the Counters' "not read", so that ncu.summarize sums it as any pass 2 log."""
    return {**row, **{m: 0.0 for m in ncu.METRICS if _number(row, m) is None}}


def report_rows(path: Path) -> list[dict[str, float | str]]:
    """The launches of an ``.ncu-rep``, one row each as ``ncu --csv --page raw`` writes it
    in base units: through ncu_report where it imports, else through the ncu on PATH."""
    module = report_module()
    if module is not None:
        try:
            return launch_rows(module, module.load_report(str(path)))
        except Exception as exc:   # a native library's errors: RuntimeError, SWIG's own...
            raise RooflintError(f"{path}: ncu_report could not read it: "
                                f"{type(exc).__name__}: {exc}") from None
    try:
        ncu.ncu_path()
    except CountersUnavailable:
        raise RooflintError(
            f"{path}: reading an Nsight Compute report takes Nsight Compute (its ncu_report "
            f"module on PYTHONPATH, or ncu on PATH); install it, or export the report where "
            f"it is: ncu -i {path.name} --csv --page raw > {path.stem}.csv") from None
    try:
        return parse_rows(ncu.raw_page(path))
    except CountersUnavailable as exc:
        raise RooflintError(f"{path}: {exc}") from None


def report_module() -> ModuleType | None:
    """NVIDIA's ncu_report: as Python imports it (its extras/python on PYTHONPATH), else
    from the installation of the ncu on PATH (source_report.interface); None where
    neither has it."""
    try:
        return importlib.import_module(source_report.MODULE)
    except (ImportError, OSError):
        return source_report.interface()


def launch_rows(module: ModuleType, context: Any) -> list[dict[str, float | str]]:
    """Every launch of a loaded report as a row of the raw page: its number, its name as
    ncu demangles it, its grid and block, each metric's value in base units."""
    return [launch_row(number, action, module)
            for number, action in enumerate(source_report.report_actions(context))]


def launch_row(number: int, action: Any, module: ModuleType) -> dict[str, float | str]:
    row: dict[str, float | str] = {ID: float(number), KERNEL_NAME: str(
        action.name(module.IAction.NameBase_DEMANGLED))}
    for name in action.metric_names():
        metric = action.metric_by_name(name)
        value = metric.value() if metric is not None else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            row[name] = float(value) * base_unit_scale(str(metric.unit() or ""))
        elif isinstance(value, str):
            row[name] = value
    row[GRID], row[BLOCK] = _shape(row, "grid"), _shape(row, "block")
    return row


def _shape(row: dict[str, float | str], what: str) -> str:
    """``(4096, 1, 1)``, from launch__grid_dim_x..z (or block), as the raw page's Grid Size."""
    dims = [row.get(f"launch__{what}_dim_{axis}") for axis in "xyz"]
    return "(" + ", ".join(str(int(d)) for d in dims if isinstance(d, float)) + ")"
