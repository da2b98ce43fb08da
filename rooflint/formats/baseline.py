"""The gate's baseline file: small, sorted, diff-friendly JSON meant to be committed.

It keeps, per variant, only what the gate compares: correctness, the raw timing samples
(four significant digits: enough for the statistics, short in a diff), and the
deterministic signals (measured DRAM bytes, counted FLOPs, registers, spill bytes) with
the verdict. It is keyed by the GPU model, the driver and the SM clock seen, so a
baseline from another GPU is recognised and refused.
"""

from __future__ import annotations

import statistics
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated

from rooflint.analysis.evidence import BoundWord
from rooflint.formats.jsonfile import read_document, write_atomic
from rooflint.formats.results import RunResult, VariantResult
from rooflint.formats.status import Status, StatusWord
from rooflint.common.sense import Amount, Count, Seconds, Sense, SpecId, unique

SCHEMA = "rooflint.baseline/1"


@dataclass
class Entry:
    family: str
    variant: str
    status: StatusWord
    samples_s: list[Seconds]
    dram_bytes: Amount | None         # measured (ncu) DRAM bytes, when counters ran
    counted_flops: Amount | None
    registers: Count | None
    spill_bytes: Amount | None
    bound: BoundWord | None
    gate: dict[str, Amount] = field(default_factory=dict)   # the manifest's thresholds

    @property
    def key(self) -> tuple[str, str]:
        return self.family, self.variant


def _untimed(entry: Entry) -> str | None:
    return "is ok, but has no timing samples" if entry.status == Status.OK and not entry.samples_s \
        else None


def _empty(entries: list[Entry]) -> str | None:
    return ("is empty: a baseline with no variants judges nothing (make one with "
            "`rooflint gate --update`)") if not entries else None


# A gate judges each variant against one entry: none leaves every variant "new" (a pass
# that judged nothing); two leave it to chance which one.
Entries = Annotated[list[Annotated[Entry, Sense(_untimed)]], Sense(_empty),
                    unique(lambda e: e.key)]


@dataclass
class Baseline:
    gpu: str
    spec_id: SpecId
    driver: str
    sm_clock_mhz: Amount | None
    git_revision: str | None
    entries: Entries
    created: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    schema: str = SCHEMA


def _round(value: float) -> float:
    return float(f"{value:.4g}")


def _entry(family: str, v: VariantResult) -> Entry:
    c = v.counters
    return Entry(
        family=family, variant=v.name, status=v.status,
        samples_s=[_round(x) for x in v.samples_s],
        dram_bytes=v.dram_bytes.get("ncu"), counted_flops=v.flops.get("ncu"),
        registers=c.registers_per_thread if c else None,
        spill_bytes=c.local_bytes if c else None,
        bound=v.verdict.bound if v.verdict else None, gate=dict(v.gate))


def git_revision(directory: str) -> str | None:
    """The commit the measured kernels came from (a ``-dirty`` suffix if edited since)."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=directory,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError, NotADirectoryError):
        return None
    return rev + ("-dirty" if dirty else "")


def from_result(result: RunResult) -> Baseline:
    clocks = [mhz for f in result.families for v in f.variants for mhz in v.clocks.sm_mhz]
    return Baseline(
        gpu=result.gpu.name, spec_id=result.spec_id, driver=result.gpu.driver,
        sm_clock_mhz=statistics.median(clocks) if clocks else None,
        git_revision=result.settings.git_revision,
        entries=[_entry(f.name, v) for f in result.families for v in f.variants])


def document(baseline: Baseline) -> dict:
    """The baseline as its file holds it: entries by family and variant, so a baseline
    made again differs from the last by what changed, not by order."""
    data = asdict(baseline)
    data["entries"] = sorted(data["entries"], key=lambda e: (e["family"], e["variant"]))
    return data


def write(baseline: Baseline, path: Path) -> None:
    write_atomic(document(baseline), path)


def read(path: Path) -> Baseline:
    """A baseline file, each entry checked field by field (see jsonfile.read_document)."""
    return read_document(path, Baseline, SCHEMA, "baseline")
