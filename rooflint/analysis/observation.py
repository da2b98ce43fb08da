"""One kernel as measured, whatever measured it, and the one function that judges it.

A manifest run (a variant timed in rooflint's worker, its counters from its NVTX range in
the ncu pass) and an application profile (a kernel's launch durations from a whole program, its
counters from one profiled launch) both become an `Observation`; `analyse` turns either
into roofs, a roofline point, the counters' reading and a verdict. So a verdict means the
same thing wherever the kernel came from, and the result schema that `show`, `plot`,
`compare` and `gate` read is filled the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rooflint.analysis import ceilings
from rooflint.analysis.counters import implausible, traffic
from rooflint.analysis.diagnose import Verdict, diagnose
from rooflint.analysis.evidence import LaunchFacts, l1_fraction
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.analysis.counters import Counters
from rooflint.analysis.stats import TimeStats
from rooflint.analysis.roofline import Floor, Level, Point, Roofs, floor, levels, place
from rooflint.common.units import format_bytes, format_rate, format_time


@dataclass
class Model:
    """The author's count of the work: algorithmic FLOPs, compulsory DRAM bytes, and the
    bytes of the outputs it writes (the compulsory writes ncu may not see)."""

    flops: float
    bytes: float
    written_bytes: float = 0.0


@dataclass
class Observation:
    name: str
    precision: str
    samples_s: list[float]          # a variant's timed runs, or a kernel's launch durations
    counters: Counters | None
    model: Model | None             # None: nobody counted the algorithm (an application kernel)
    grid_blocks: int
    threads_per_block: int
    launches: int                   # kernel launches in one sample
    graph_samples_s: list[float] = field(default_factory=list)
    point_time_s: float | None = None  # the time the counters were taken over, when not the
    #                                    samples' median (a profile's one profiled launch)
    cached: bool = False            # its data may sit in L2 between runs (a warm-cache run, a
    #                                 kernel of a program): its floor is its FLOPs' alone


@dataclass
class Analysis:
    roofs: Roofs
    time: TimeStats | None
    graph_time: TimeStats | None
    point: Point | None
    verdict: Verdict | None
    flops: dict[str, float]         # by source: model, ncu
    dram_bytes: dict[str, float]
    notes: list[str]
    levels: list[Level]             # DRAM, L2, L1: with counters only
    counters: Counters | None       # the observation's, unless refused (implausible)
    refused: str | None = None      # why its counters were not taken as read


def analyse(o: Observation, spec: GpuSpec, sms: int,
            calibration: ceilings.MeasuredCeilings | None) -> Analysis:
    """Roofs, point and verdict for one observation (no point without a time, or without
    either a model or counters to say how many bytes moved). Counters that cannot be true
    (counters.implausible) are refused, with the reason in the notes, and the kernel
    judged as without them."""
    refused = (implausible(o.counters, spec.dram_bandwidth,
                           max(p.flops_per_s for p in spec.peaks.values()))
               if o.counters else None)
    if refused:
        o = replace(o, counters=None, point_time_s=None)
    roofs = ceilings.roofs(spec, o.precision, calibration)
    time = TimeStats.of(o.samples_s) if o.samples_s else None
    graph_time = TimeStats.of(o.graph_samples_s) if o.graph_samples_s else None
    model = o.model or Model(0.0, 0.0)
    measured = (traffic(o.counters, model.flops, model.bytes, model.written_bytes, o.precision)
                if o.counters else None)
    flops = ({"model": model.flops} if o.model else {}) | (
        {"ncu": measured.counted_flops} if measured else {})
    dram_bytes = ({"model": model.bytes} if o.model else {}) | (
        {"ncu": measured.dram_bytes} if measured else {})
    point = verdict = None
    hierarchy: list[Level] = []
    if time and (o.model or measured):
        point = place(o.point_time_s or time.median_s,
                      model.flops if o.model else measured.counted_flops,
                      measured.dram_bytes if measured else model.bytes,
                      model.bytes if o.model else None, roofs,
                      "ncu" if measured else "model")
        facts = LaunchFacts.of(
            sms, o.precision, grid_blocks=o.grid_blocks, threads_per_block=o.threads_per_block,
            launches=o.launches,
            tensor_roof=ceilings.tensor_roof(spec, o.precision, calibration),
            l2_roof=ceilings.bandwidth(calibration, "l2"),
            fp8_roof=ceilings.fp8_roof(spec, o.precision, calibration),
            compute_capability=spec.compute_capability,
            run_time_s=time.median_s if o.point_time_s else None)
        verdict = diagnose(point, facts, o.counters, graph_time.median_s if graph_time else None)
        if o.counters:
            hierarchy = levels(point, roofs, o.counters.l2_bytes, facts.l2_roof,
                               o.counters.l1_bytes, ceilings.bandwidth(calibration, "l1"),
                               l1_fraction(o.counters, sms))
    notes = [f"counters refused: {refused}"] if refused else measured.notes if measured else []
    bound = floor(model.flops, model.bytes, roofs, o.cached) if o.model else None
    if time and bound and bound.beaten_by(time.median_s):
        notes = [faster_than_possible(time.median_s, bound), *notes]
    above = above_calibrated_roof(point, roofs, hierarchy) if point else None
    if above:
        notes = [*notes, above]
    return Analysis(roofs, time, graph_time, point, verdict, flops, dram_bytes, notes,
                    hierarchy, o.counters, refused)


def above_calibrated_roof(point: Point, roofs: Roofs, hierarchy: list[Level]) -> str | None:
    """The note of a kernel that ran above a roof `rooflint calibrate` measured (cuBLAS's
    bf16 GEMMs of the training step read 103-106 % of the H100's calibrated bf16 roof,
    one 104 % of its calibrated L2): the calibration's own kernel reached less than this
    one, so every fraction of that roof reads high; None where no calibrated roof was
    passed. Datasheet roofs are not measured rates, and a kernel far above one has its
    counters refused (counters.implausible)."""
    calibrated = [(f"{roofs.precision} compute", point.compute_fraction,
                   roofs.compute, roofs.datasheet_compute)] \
        if roofs.compute != roofs.datasheet_compute else []
    if roofs.dram_bandwidth != roofs.datasheet_dram_bandwidth:
        calibrated.append(("DRAM", point.dram_fraction, roofs.dram_bandwidth,
                           roofs.datasheet_dram_bandwidth))
    calibrated += [("L2", level.fraction, level.roof, None) for level in hierarchy
                   if level.name == "l2" and level.roof and level.fraction]
    above = [c for c in calibrated if c[1] > 1.0]
    if not above:
        return None
    name, fraction, roof, datasheet = max(above, key=lambda c: c[1])
    unit = "FLOP/s" if name.endswith("compute") else "B/s"
    return (f"above the calibrated {name} roof: {100 * fraction:.0f}% of "
            f"{format_rate(roof, unit)}; the calibration's own kernel reached less than this "
            f"one, so fractions of that roof read high (calibrate again"
            + (f", or read it against the datasheet's {format_rate(datasheet, unit)})"
               if datasheet else ")"))


def faster_than_possible(time_s: float, bound: Floor) -> str:
    """The note of a time under the work's floor, with what usually makes one."""
    what = (f"its compulsory {format_bytes(bound.amount)} take at the DRAM roof "
            f"({format_rate(bound.roof, 'B/s')})" if bound.bound_by == "dram" else
            f"its {format_rate(bound.amount, 'FLOP')} take at the compute roof "
            f"({format_rate(bound.roof, 'FLOP/s')})")
    return (f"faster than physically possible: {format_time(time_s)}, under the "
            f"{format_time(bound.time_s)} {what}; usually work skipped, an output served "
            f"from a cache across samples, or a model that counts more than the kernel "
            f"must do")
