"""A GPU's roofs on the terminal: the table of every spec, one GPU's spec with its peaks
and ridge points, a calibration's measured ceilings beside the datasheet's, and `explain`'s
point placed under its roofs with the verdict (the verdict printed as a run's notes
would give it: causes, moves, what was ruled out).
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from rooflint.analysis.ceilings import fraction_of_datasheet_at_clock
from rooflint.analysis.diagnose import Move, Verdict
from rooflint.analysis.evidence import pct
from rooflint.analysis.moves import GainBasis
from rooflint.analysis.observation import faster_than_possible
from rooflint.common.printable import printable_fields
from rooflint.common.units import format_bytes, format_rate, format_time
from rooflint.formats.explanation import Explanation
from rooflint.analysis.gpu_spec import GpuSpec
from rooflint.formats.calibration import Calibration, Interconnect
from rooflint.output.terminal import BOUND_STYLE, ai_text, labelled, roofs_line
from rooflint.common.vocabularies import Precision


def interconnect_line(interconnect: Interconnect) -> str:
    """The interconnect's roofs: each collective's best bus bandwidth and where it reached it."""
    roofs = ", ".join(f"{r.collective} {format_rate(r.value, 'B/s')} at {format_bytes(r.size)}"
                      for r in interconnect.roofs)
    return (f"interconnect, {interconnect.gpus} GPUs ({interconnect.link or 'links unknown'}), "
            f"NCCL's best bus bandwidth: {roofs}")


def render_explanation(console: Console, e: Explanation) -> None:
    e = printable_fields(e)
    p, v = e.point, e.verdict
    console.print(f"[bold]{escape(e.spec.name)}[/]: {escape(roofs_line(e.roofs))}")
    console.print(f"  achieved {format_rate(p.achieved_flops, 'FLOP/s')} "
                  f"({pct(p.compute_fraction)} of compute), "
                  f"{format_rate(p.achieved_bandwidth, 'B/s')} ({pct(p.dram_fraction)} of DRAM)")
    side = "left" if p.limiting_roof == "dram" else "right"
    console.print(f"  AI observed {ai_text(p.observed_ai)} FLOP/B, algorithmic "
                  f"{ai_text(p.algorithmic_ai)} FLOP/B; {side} "
                  f"of the ridge; at {pct(p.roof_fraction)} of the applicable roof")
    if e.floor:
        console.print(f"  floor {format_time(e.floor.time_s)}: "
                      + ("the algorithmic bytes at the DRAM roof" if e.floor.bound_by == "dram"
                         else "the FLOPs at the compute roof"), markup=False)
        if e.floor.beaten_by(p.time_s):
            console.print(f"  {faster_than_possible(p.time_s, e.floor)}", style="bold red",
                          markup=False)
    render_verdict(console, v)


def render_verdict(console: Console, v: Verdict) -> None:
    v = printable_fields(v)
    console.print(f"  verdict: [{BOUND_STYLE[v.bound]}]{v.bound}-bound[/]: {escape(v.summary)}")
    for cause in v.causes:
        console.print(f"    cause {cause.name}: {escape(cause.detail)}")
    for move in v.moves:
        console.print(f"    move {move.direction}: {escape(move.action)}")
        console.print(f"      why: {escape(move.reason)}; expect: {escape(move.expect)}"
                      + _gain_text(move))
    for text in v.ruled_out:
        console.print(f"    {escape(text)}")


def _gain_text(move: Move) -> str:
    words = gain_words(move)
    return f"; {words}" if words else ""


def gain_words(move: Move) -> str:
    """The move's speed-up, the range it may land in, and what it rests on ("about 1.67x
    faster (1.11x to 2.5x, from its evidence)", "up to 8x faster (from the nearest roof)");
    "" for a move with no estimate. The terminal and the HTML report say it alike."""
    if move.gain is None:
        return ""
    basis = "the nearest roof" if move.gain_from == GainBasis.ROOF else "its evidence"
    if move.gain_from == GainBasis.ESTIMATE and move.gain_low and move.gain_high:
        return (f"about {move.gain:.3g}x faster ({move.gain_low:.3g}x to "
                f"{move.gain_high:.3g}x, from {basis})")
    if move.gain_from == GainBasis.AT_LEAST:
        most = f" to {move.gain_high:.3g}x" if move.gain_high else ""
        return f"at least {move.gain:.3g}x faster{most} (from {basis})"
    return f"up to {move.gain:.3g}x faster (from {basis})"


def render_specs(console: Console, specs: list[GpuSpec]) -> None:
    table = Table(title="GPU specs: datasheet, dense peaks in TFLOP/s (* tensor cores)",
                  title_justify="left", pad_edge=False, box=box.SIMPLE_HEAD)
    for column in ("id", "SMs", "TB/s", "L2 MiB", "FP64", "FP32", "TF32*", "FP16*", "FP8*"):
        table.add_column(column, justify="left" if column == "id" else "right",
                         min_width=13 if column == "id" else None)
    for s in specs:
        table.add_row(Text(s.id), str(s.sms), f"{s.dram_bandwidth / 1e12:.3g}",
                      f"{s.l2_bytes / 2**20:.0f}", _peak(s, Precision.FP64),
                      _peak(s, Precision.FP32), _peak(s, Precision.TF32_TENSOR),
                      _peak(s, Precision.FP16_TENSOR), _peak(s, Precision.FP8_TENSOR))
    console.print(table)
    console.print("`rooflint specs ID` shows one GPU: its name, clocks, every peak and ridge "
                  "point.")


def _peak(spec: GpuSpec, precision: str) -> str:
    """A dense peak in TFLOP/s for the specs table, "-" where the GPU has none."""
    if precision not in spec.peaks:
        return "-"
    return f"{spec.peaks[precision].flops_per_s / 1e12:.4g}"


def render_spec(console: Console, s: GpuSpec) -> None:
    console.print(f"[bold]{escape(s.name)}[/] ({escape(s.id)}): {escape(s.architecture)}, "
                  f"compute capability {escape(s.compute_capability)}, {s.sms} SMs, "
                  f"boost {s.boost_clock_mhz:.0f} MHz")
    console.print(f"  memory: {s.memory_gb:g} GB {escape(s.memory_type)}, "
                  f"{format_rate(s.dram_bandwidth, 'B/s')}; L2 {format_bytes(s.l2_bytes)}")
    table = Table(title_justify="left")
    for column in ("precision", "peak", "assumes SM clock", "ridge (FLOP/B)"):
        table.add_column(column, justify="left" if column == "precision" else "right")
    for precision, peak in s.peaks.items():
        table.add_row(precision, format_rate(peak.flops_per_s, "FLOP/s"),
                      f"{peak.clock_mhz:.0f} MHz", f"{s.ridge(precision):.3g}")
    console.print(table)
    console.print(f"  source: {escape(s.source)}")
    if s.notes:
        console.print(f"  notes: {escape(s.notes)}")


def render_calibration(console: Console, calibration: Calibration, spec: GpuSpec) -> None:
    calibration, spec = printable_fields((calibration, spec))
    table = Table(title=Text(f"{calibration.gpu.name}: measured ceilings, driver "
                             f"{calibration.gpu.driver}, {calibration.created}"),
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("ceiling", "measured", "datasheet", "of datasheet", "at clock seen",
                   "SM clock"):
        table.add_column(column, justify="left" if column == "ceiling" else "right")
    rows = [("dram", calibration.dram, spec.dram_bandwidth, "B/s")]
    rows += [(name, ceiling, None, "B/s")
             for name, ceiling in (("l2", calibration.l2), ("l1", calibration.l1)) if ceiling]
    rows += [(p, c, spec.peaks[p].flops_per_s if p in spec.peaks else None, "FLOP/s")
             for p, c in calibration.compute.items()]
    for name, ceiling, datasheet, unit in rows:
        at_clock = fraction_of_datasheet_at_clock(spec, name, ceiling) if unit == "FLOP/s" else None
        table.add_row(
            name, format_rate(ceiling.value, unit),
            format_rate(datasheet, unit) if datasheet else "-",
            pct(ceiling.value / datasheet) if datasheet else "-",
            pct(at_clock) if at_clock else "-",
            f"{ceiling.sm_clock_mhz:.0f} MHz" if ceiling.sm_clock_mhz else "-")
    console.print(table)
    console.print(labelled([(name, Text(ceiling.method)) for name, ceiling, _, _ in rows]))
    if calibration.interconnect:
        console.print(Text(interconnect_line(calibration.interconnect)))
        console.print(labelled([("interconnect", Text(calibration.interconnect.method))]))
    for name, why in calibration.skipped.items():
        console.print(Text(f"not calibrated: {name}: {why}", "yellow"))
