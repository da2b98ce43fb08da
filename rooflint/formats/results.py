"""The result document: one JSON file per run, versioned, self-describing.

``compare``, ``plot`` and ``gate`` read only this format, so they work on a laptop with
results made on a GPU box. Every number says where it came from (``model`` for the
manifest's algorithmic counts, ``ncu`` for counters), and the raw timing samples are
kept so that later statistics need no re-run.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

from rooflint.analysis.diagnose import Verdict
from rooflint.formats.collective_calls import RankCollectives
from rooflint.formats.jsonfile import Rows, read_document, write_atomic
from rooflint.formats.settings import Settings
from rooflint.analysis.counters import Counters
from rooflint.analysis.gpu_spec import PrecisionWord
from rooflint.formats.gpus import DeviceInfo, KnownSpecId
from rooflint.formats.jobs import Clocks, OutputCheck
from rooflint.formats.ranks import RankInfo
from rooflint.analysis.roofline import Level, Point, Roofs
from rooflint.common.sense import Amount, Positive, Seconds, Sense, Size, shown
from rooflint.analysis.sourcelines import SourceProfile
from rooflint.analysis.stats import TimeStats
from rooflint.formats.status import Status, StatusWord
from rooflint.formats.trace_events import Origin
from rooflint.formats.trace_timing import ProgramTiming
from rooflint.formats.typed_schema import ALWAYS_WRITTEN
from rooflint.common.version import __version__

SCHEMA = "rooflint.result/1"


@dataclass
class KernelShare:
    """A profiled program's kernel: what it costs the program and what fixing it could save."""

    kernel: str                 # the demangled name, as Nsight Compute reports it
    library: str | None         # who wrote it, in plain words (cuBLAS GEMM), when known
    launches: Size              # in the profiled region
    total_s: Seconds            # GPU time of all those launches
    share: Amount               # of the region's GPU time
    best_fraction: Amount | None  # of its nearest roof (DRAM, L2, L1 or compute); None: no counters
    upside_s: Amount | None     # what its best move could save (judge/upside.py)
    origins: list[Origin] = field(default_factory=list)   # operators and lines that launched it
    # its launch shape, "(1056, 1, 1)" and "(256, 1, 1)": with its name, which kernel it is
    # on every rank of a job (judge/ranks.py); "" in a document written before they were
    grid: str = ""
    block: str = ""


def _upside_without_roof(s: KernelShare) -> str | None:
    """An upside is measured from the nearest roof (judge/upside.py)."""
    return ("has an upside_s but no best_fraction it could be measured from"
            if s.upside_s is not None and s.best_fraction is None else None)


Share = Annotated[KernelShare, Sense(_upside_without_roof)]


def _out_of_order(t: TimeStats) -> str | None:
    """The order every set of samples has: a spread or a median outside it means nothing."""
    if t.min_s <= t.q1_s <= t.median_s <= t.q3_s:
        return None
    return (f"is out of order (min_s {t.min_s:g}, q1_s {t.q1_s:g}, median_s {t.median_s:g}, "
            f"q3_s {t.q3_s:g}; expected min_s <= q1_s <= median_s <= q3_s)")


Timing = Annotated[TimeStats, Sense(_out_of_order)]


def _disagrees(p: Point) -> str | None:
    """A point's rates and intensity are its counts over its time and bytes
    (roofline.place): a point whose figures disagree is placed nowhere in particular."""
    derived = {"achieved_flops": p.flops / p.time_s, "achieved_bandwidth": p.dram_bytes / p.time_s,
               "observed_ai": p.flops / p.dram_bytes if p.dram_bytes else math.inf,
               "algorithmic_ai": (p.flops / p.algorithmic_bytes if p.algorithmic_bytes
                                  else math.inf)}
    for name, value in derived.items():
        if not math.isclose(getattr(p, name), value, rel_tol=1e-9):
            return (f"has {name} {shown(getattr(p, name))}, but its counts and time give "
                    f"{shown(value)}")
    return None


Placed = Annotated[Point, Sense(_disagrees)]


@dataclass
class VariantResult:
    name: str
    description: str
    status: StatusWord
    message: str
    baseline: bool
    source_sha256: str | None
    precision: PrecisionWord
    tolerance: Amount
    checks: list[OutputCheck]
    samples_s: list[Seconds]
    time: Timing | None
    clocks: Clocks
    gpm: dict[str, Amount]              # NVML GPM utilizations (%), supporting evidence only
    graph_time: Timing | None           # CUDA-graph replay of the same launches (short kernels)
    flops: dict[str, Amount]            # by source: {"model": ..., "ncu": counted}
    dram_bytes: dict[str, Amount]       # by source: {"model": ..., "ncu": measured}
    counters: Counters | None           # the raw ncu summary, when counters ran
    notes: list[str]                    # how the counters differ from the model, and why
    roofs: Roofs | None
    point: Placed | None
    verdict: Verdict | None
    expect: dict[str, str | None]
    expectation_mismatch: str | None    # what the measurement contradicts, if anything
    versus: str | None                  # bytes, AI and time against the variant it should beat
    speed_vs_baseline: Positive | None  # baseline time / this time (1.0 = as fast)
    # the manifest's `rooflint gate` thresholds
    gate: dict[str, Amount] = field(default_factory=dict)
    share: Share | None = None          # a kernel of a profiled program: its part of the GPU time
    compiler: str = ""                  # what built it ("nvcc 13.0.88"); "" for a Python call
    levels: list[Level] = field(default_factory=list)  # DRAM, L2, L1 (hierarchical roofline)
    source_lines: SourceProfile | None = None   # the lines behind its moves (run --source)
    # rooflint's metrics the report a kernel was imported from lacked (`rooflint import`):
    # what they would have judged is not judged
    missing_metrics: list[str] = field(default_factory=list)


def _ok_but_not(v: VariantResult) -> str | None:
    """A variant is ok only when it was timed and every output check passed (as
    measure.launch decides): an ok without them would be judged on nothing."""
    if v.status != Status.OK:
        return None
    if not (v.samples_s and v.time):
        return "is ok, but has no timing samples or time"
    wrong = next((c for c in v.checks if c.nonfinite or not c.rel_l2 <= v.tolerance), None)
    if wrong is None:
        return None
    return (f"is ok, but its output {wrong.buffer!r} failed its check (relative error "
            f"{shown(wrong.rel_l2)}, tolerance {v.tolerance:g}, {wrong.nonfinite} elements NaN "
            f"or infinite)")


def _placed_but_not_judged(v: VariantResult) -> str | None:
    """A point and its verdict are made together (analysis.observation): a point without
    one is no document rooflint wrote, and every reader of a point reads its verdict."""
    if (v.point is None) != (v.verdict is None):
        return "has a point but no verdict" if v.verdict is None else "has a verdict but no point"
    return None


# the same as JSON Schema: both null, or both present
_JUDGED_WITH_ITS_POINT = (("oneOf", (
    {"properties": {"point": {"type": "null"}, "verdict": {"type": "null"}}},
    {"properties": {"point": {"type": "object"}, "verdict": {"type": "object"}}})),)

Variant = Annotated[VariantResult, Sense(lambda v: _ok_but_not(v) or _placed_but_not_judged(v),
                                         schema=_JUDGED_WITH_ITS_POINT)]


def _at_least_one(what: str) -> Sense:
    """A list a result holds at least one of: without, there is nothing to show (`show` and
    `report` printed a header alone and exited 0), and rooflint never writes one so."""
    return Sense(lambda items: None if items else f"is empty: a result holds at least one {what}",
                 schema=(("minItems", 1),))


@dataclass
class FamilyResult:
    name: str
    directory: str
    params: dict[str, float]
    baseline: str | None
    variants: Annotated[list[Variant], _at_least_one("variant")]
    # seconds per phase (rooflint.common.phases)
    timings: dict[str, Amount] = field(default_factory=dict)
    device: str | None = None           # the CUDA_VISIBLE_DEVICES entry it ran on (--devices)
    # The variants whose counters were read from the counter cache, not profiled this run
    # (rooflint.formats.counter_cache).
    cached_counters: list[str] = field(default_factory=list)


@dataclass
class FixLine:
    """A source line a program fix is for: the part of the GPU time its kernels took there."""

    line: str                   # ``train_step.py:37 in Block.forward``, forward and backward
    share: Amount               # of the region's GPU time


@dataclass
class ProgramFixResult:
    """A change to the profiled program and what it could save (judge/program_fixes.py):
    the kernels it is for, their source lines and summed share, the estimated saving over
    the profiled region. ``action`` is None for kernels no fix is for, ``why`` says why."""

    id: str                     # analysis/program_fixes.py's entry, or "none"
    action: str | None
    why: str
    estimate: str               # how the saving was estimated (program_fixes.Saving)
    kernels: list[str]          # the result's variant names
    lines: list[FixLine]        # the most GPU time first
    share: Amount               # of the region's GPU time, its kernels' shares summed
    saving_s: Amount            # over the profiled region
    saving_share: Amount        # of the region's GPU time and a job's exposed
                                # communication (judge/program_fixes.spent_s)
    changes_precision: bool = False
    made: int = 0               # of its kernels, those the change is made in already (none
    #                             of its saving: analysis/program_fixes.ProgramFix.made)


@dataclass
class RunResult:
    gpu: DeviceInfo
    spec_id: KnownSpecId
    settings: Settings = field(default_factory=Settings)
    # empty while a run measures; never so in a document
    families: Annotated[list[FamilyResult], _at_least_one("family")] = field(
        default_factory=list, metadata=ALWAYS_WRITTEN)
    timings: dict[str, Amount] = field(default_factory=dict)  # the families' phases + start-up
    # a profile's program fixes, the most saving first; a profile written before they were
    # has none, and `show` rolls them up from its kernels (judge/program_fixes.py)
    fixes: list[ProgramFixResult] = field(default_factory=list)
    # a profile's wall time, GPU busy time, idle gaps by cause and steps, from pass 1's
    # trace (formats/trace_timing.py); None, and not written, for a manifest's run, a
    # profile timed by Nsight Compute (no timestamps) and a document written before it was
    program: ProgramTiming | None = None
    # a rank's own document: one process of a job of several (formats/ranks.py, merged by
    # judge/ranks.py); None, and not written, for any other result
    rank: RankInfo | None = None
    # a profile's NCCL kernels matched to the calls NCCL logged, with their sizes
    # (formats/collective_calls.py); None, and not written, where the program ran none
    collectives: RankCollectives | None = None
    created: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    tool_version: str = __version__
    schema: str = SCHEMA

    def to_json(self) -> dict[str, Any]:
        document = {**asdict(self), "settings": self.settings.to_json()}
        for optional in ("program", "rank", "collectives"):
            if document[optional] is None:
                del document[optional]
        return document


def write_result(result: RunResult, path: Path) -> None:
    write_atomic(result.to_json(), path)


def _variant_count(data: dict[str, Any]) -> int:
    """The variants (a profile's kernels) of a result as parsed, whatever its shape."""
    families = data.get("families")
    return sum(len(f["variants"]) for f in families if isinstance(f, dict)
               and isinstance(f.get("variants"), list)) if isinstance(families, list) else 0


def read_result(path: Path) -> RunResult:
    """A result file, every field checked against the dataclasses above (fields a newer
    rooflint added are ignored; see jsonfile.read_document), one of too many variants
    refused before."""
    return read_document(path, RunResult, SCHEMA, "result", Rows("variants", _variant_count))
