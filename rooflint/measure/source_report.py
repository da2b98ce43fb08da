"""The source pass's report (``run --source``) read by line: through NVIDIA's ``ncu_report``
module where it imports, else with ``ncu -i`` and its CSV (ncu.read_source_csv).

``ncu -i`` starts a process for each launch, about a second each, and ncu does not escape
quotes in the CSV it prints: 7.3 s of a 13 s ``run stream --source`` on the H200. The
module Nsight Compute ships for this (extras/python/ncu_report.py beside its native
library) reads the whole report in this process, with the per-instruction metrics and
each instruction's source file and line as data. It is imported from the installation of
the ncu on PATH, so that the reader is the version that wrote the report.

What is relied on of it (Nsight Compute's Python Report Interface, a subset of the NvRules
API): ``load_report(path)`` gives an IContext; ``num_ranges``/``range_by_idx`` and
``num_actions``/``action_by_idx`` walk its launches; an action's ``nvtx_state()`` has
``domains()`` whose ``domain_by_id(id).push_pop_ranges()`` name the NVTX ranges it ran in;
``metric_by_name`` gives an IMetric (None if absent), whose ``num_instances``/
``as_double(i)`` are per-instruction values when ``has_correlation_ids()``, with
``correlation_ids().as_uint64(i)`` the instruction's address; ``source_info(address)`` is
its ISourceInfo (``file_name()``, ``line()``; None without line information); and
``source_files()`` maps each file to the text imported into the report. An ISourceInfo has
a file and a line only, no inline chain: a launch whose samples sit in inlined header code
(cuda_pipeline.h's cp.async wrappers) is read from its CSV page instead, which lists such
code under the lines that called it too (sourcelines.py).

The walk over those objects is plain Python, tested with stand-ins on a CPU; ncu_report
itself runs only where Nsight Compute is installed.
"""

from __future__ import annotations

import functools
import importlib
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import Any

from rooflint.analysis.sourcelines import (INLINED_SHARE, Instruction, SourceLine,
                                           SourceProfile, inlined_share, lines_of, profile_of)
from rooflint.measure import ncu

MODULE = "ncu_report"
EXTRAS = Path("extras") / "python"     # where an installation keeps the module
# Where the CUDA toolkit's bin/ncu, a script, looks for installations besides its own
# <toolkit>/nsight-compute-<version> (it runs the newest it finds).
INSTALLATIONS = Path("/opt/nvidia/nsight-compute")
REPORT_SUFFIX = ".ncu-rep"


class SourceReader(str, Enum):
    """How a run's source pass read its reports (the result's settings say which)."""

    NCU_REPORT = "ncu_report"
    CSV = "csv"


def reader() -> SourceReader:
    return SourceReader.NCU_REPORT if interface() else SourceReader.CSV


def read_source_report(report: Path) -> dict[int, SourceProfile]:
    """Each profiled variant's source lines, by its NVTX range index."""
    module = interface()
    if module is None:
        return ncu.read_source_csv(report)
    try:
        return profiles_by_variant(module.load_report(str(report)),
                                   lambda launch: ncu.launch_source_page(report, launch))
    except Exception as exc:     # a native library's errors: RuntimeError, SWIG's own...
        raise ncu.CountersUnavailable(f"ncu_report could not read its report {report.name}: "
                                      f"{type(exc).__name__}: {exc}") from None


@functools.cache
def interface() -> ModuleType | None:
    """ncu_report from the installation of the ncu on PATH; None without ncu, without the
    module there, or where it does not import (its native library for another system)."""
    try:
        executable = Path(ncu.ncu_path())
    except ncu.CountersUnavailable:
        return None
    directory = interface_directory(executable, ncu.version())
    return imported(directory) if directory else None


def interface_directory(executable: Path, version: str | None) -> Path | None:
    """Where the ncu at ``executable`` keeps ncu_report: beside the program it resolves to
    (an installation's own ncu, or a link to it); for the CUDA toolkit's bin/ncu, a script
    that runs the newest installation it finds, in the installation of the ``version``
    that ncu reports (``2025.3.1.0`` is nsight-compute-2025.3.1, or 2025.3.1 under
    INSTALLATIONS)."""
    program = executable.resolve()
    if (program.parent / EXTRAS / f"{MODULE}.py").is_file():
        return program.parent / EXTRAS
    installations = [*program.parent.parent.glob("nsight-compute-*"), *INSTALLATIONS.glob("*")]
    named = [(len(parts), place / EXTRAS) for place in installations
             if (parts := _version_parts(place.name)) and version
             and _version_parts(version)[:len(parts)] == parts
             and (place / EXTRAS / f"{MODULE}.py").is_file()]
    return max(named)[1] if named else None


def _version_parts(text: str) -> tuple[int, ...]:
    found = re.search(r"\d+(?:\.\d+)+", text)
    return tuple(int(part) for part in found.group().split(".")) if found else ()


def imported(directory: Path) -> ModuleType | None:
    """ncu_report imported from ``directory`` (which its own native module is imported
    from too), the import path as it was afterwards; None if it cannot be imported."""
    sys.path.insert(0, str(directory))
    try:
        return importlib.import_module(MODULE)
    except (ImportError, OSError):
        return None
    finally:
        sys.path.remove(str(directory))


def profiles_by_variant(context: Any, source_page: Callable[[int], str] | None = None
                        ) -> dict[int, SourceProfile]:
    """Each profiled variant's lines, by the index its NVTX range names, its launches'
    lines added up (as ncu.read_source_csv adds the pages of its launches). A launch with
    inlined code of weight (sourcelines.INLINED_SHARE) is read from its CSV source page,
    ``source_page(launch)``, instead: the page knows the inline chains this API does not,
    so that code counts at its caller's line."""
    launches: dict[int, list[list[SourceLine]]] = {}
    for launch, action in enumerate(report_actions(context)):
        index = ncu.range_index(" ".join(_ranges(action)))
        if index is None:
            continue
        instructions = launch_instructions(action)
        if source_page and inlined_share(instructions) >= INLINED_SHARE:
            lines = ncu.source_page_lines(source_page(launch))
        else:
            lines = _lines(action, instructions)
        launches.setdefault(index, []).append(lines)
    return {index: profile_of(line for lines in group for line in lines)
            for index, group in launches.items()}


def report_actions(context: Any) -> list[Any]:
    """Every launch of the report, in the order it was profiled."""
    ranges = [context.range_by_idx(i) for i in range(context.num_ranges())]
    return [r.action_by_idx(i) for r in ranges for i in range(r.num_actions())]


def _ranges(action: Any) -> list[str]:
    """The names of the push/pop NVTX ranges a launch ran in, in every domain."""
    state = action.nvtx_state()
    return [name for domain in state.domains()
            for name in state.domain_by_id(domain).push_pop_ranges()]


def launch_lines(action: Any) -> list[SourceLine]:
    """One launch's lines of its own file, each measure summed over the instructions built
    from the line (as ncu's source page sums them), with the line's text."""
    return _lines(action, launch_instructions(action))


def _lines(action: Any, instructions: list[Instruction]) -> list[SourceLine]:
    files = dict(action.source_files())
    texts = {place: _text(files.get(place[0], ""), place[1])
             for place in {i.places[0] for i in instructions}}
    return lines_of(instructions, texts)


def launch_instructions(action: Any) -> list[Instruction]:
    """A launch's instructions, each at the one line source_info gives it (no inline
    chain: code inlined from a header is at the header's line)."""
    places = _Places(action)
    measured: dict[int, dict[str, float]] = {}
    for measure in ncu.SOURCE_MEASURES:
        for address, value in _instances(action.metric_by_name(measure.metric)):
            sums = measured.setdefault(address, {})
            sums[measure.name] = sums.get(measure.name, 0.0) + value
    return [Instruction(address, (place,), sums) for address, sums in measured.items()
            if (place := places.of(address)) is not None]


def _instances(metric: Any) -> list[tuple[int, float]]:
    """A per-instruction metric's (address, value) pairs; none for a metric the report
    lacks or one not kept per instruction. A value that is no number counts 0, as a cell
    without a number on the source page does."""
    if metric is None or not metric.has_correlation_ids():
        return []
    addresses = metric.correlation_ids()
    values = [(addresses.as_uint64(i), metric.as_double(i)) for i in range(metric.num_instances())]
    return [(address, value if math.isfinite(value) else 0.0) for address, value in values]


@dataclass
class _Places:
    """An action's instruction addresses and the source line each was built from, asked
    of the report once per address (every measure names the same instructions)."""

    action: Any
    known: dict[int, tuple[str, int] | None] = field(default_factory=dict)

    def of(self, address: int) -> tuple[str, int] | None:
        if address not in self.known:
            self.known[address] = _place(self.action.source_info(address))
        return self.known[address]


def _place(info: Any) -> tuple[str, int] | None:
    """An ISourceInfo's file and line; None for an instruction without line information."""
    if info is None or not info.file_name() or info.line() <= 0:
        return None
    return info.file_name(), info.line()


def _text(content: str, line: int) -> str:
    """Line ``line`` of a file's text as the report holds it, stripped as ncu's source
    page prints it; empty where the text was not imported."""
    lines = content.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


@dataclass(frozen=True)
class SourceCounting:
    """A profiler session's collection for the source pass: a report, read by line."""

    suffix: str = ""    # ncu adds REPORT_SUFFIX to the name it is given

    def command(self, output: Path, cache: str) -> list[str]:
        return ncu.source_command(output, cache)

    def read(self, output: Path) -> tuple[dict[int, SourceProfile], str]:
        report = output.with_name(output.name + REPORT_SUFFIX)
        return (read_source_report(report) if report.exists() else {}), ""
