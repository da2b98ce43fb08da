"""Terminal rendering with rich: run tables, explain panels, the GPU spec table.

Only presentation lives here; every number shown was computed elsewhere and is also in
the JSON result, so the screen and the file never disagree.
"""

from __future__ import annotations

import statistics

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rooflint.calibration import Calibration, fraction_of_datasheet_at_clock
from rooflint.comparison import Comparison, Figures, describe_movement
from rooflint.diagnose import Verdict
from rooflint.evidence import BOUND_THRESHOLD
from rooflint.gate import Report as GateReport
from rooflint.explain import Explanation
from rooflint.gpus import GpuSpec
from rooflint.measure.protocol import THROTTLING
from rooflint.results import FamilyResult, RunResult, VariantResult
from rooflint.roofline import Point, Roofs
from rooflint.units import format_bytes, format_rate, format_time

BOUND_STYLE = {"bandwidth": "cyan", "compute": "magenta", "chain": "yellow"}
STATUS_STYLE = {"ok": "green", "fail": "bold red", "error": "bold red", "skipped": "yellow"}


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.0f}%"


def _ai(value: float) -> str:
    return "inf" if value == float("inf") else f"{value:.3g}"


def roofs_line(roofs: Roofs) -> str:
    def beside(value: float, datasheet: float, unit: str) -> str:
        shown = format_rate(value, unit)
        return shown if value == datasheet else f"{shown} (datasheet {format_rate(datasheet, unit)})"
    return (f"roofs ({roofs.source}): DRAM "
            f"{beside(roofs.dram_bandwidth, roofs.datasheet_dram_bandwidth, 'B/s')}, "
            f"{roofs.precision} {beside(roofs.compute, roofs.datasheet_compute, 'FLOP/s')}, "
            f"ridge {roofs.ridge:.3g} FLOP/B")


def render_run_header(console: Console, result: RunResult) -> None:
    gpu = result.gpu
    clocks = f", max SM clock {gpu.max_sm_clock_mhz:.0f} MHz" if gpu.max_sm_clock_mhz else ""
    counted = any(v.counters for f in result.families for v in f.variants)
    source = "DRAM bytes from ncu counters" if counted else "DRAM bytes from the manifests' model"
    console.print(f"[bold]{gpu.name}[/] (spec {result.spec_id}), {gpu.sms} SMs, "
                  f"L2 {format_bytes(gpu.l2_bytes)}, driver {gpu.driver}{clocks}; "
                  f"cache {result.settings['cache']}; {source}")
    if result.settings.get("counters_unavailable"):
        console.print(f"[yellow]counters unavailable: {result.settings['counters_unavailable']}[/]")


def render_family(console: Console, family: FamilyResult) -> None:
    params = ", ".join(f"{k}={int(v) if float(v).is_integer() else v}" for k, v in family.params.items())
    table = Table(title=f"{family.name} ({params})", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("variant", "status", "time", "DRAM", "FLOP/s", "AI obs/alg", "verdict",
                   "top move"):
        table.add_column(column, justify="right" if column in ("time", "DRAM", "FLOP/s", "AI obs/alg")
                         else "left")
    for v in family.variants:
        table.add_row(*_row(v))
    console.print(table)
    precisions = {v.roofs.precision: v.roofs for v in family.variants if v.roofs}
    for roofs in precisions.values():
        console.print(f"{roofs_line(roofs)}; bound = at >= {_pct(BOUND_THRESHOLD)} of a roof; "
                      f"DRAM and FLOP/s as % of their roofs")
    baseline = next((v for v in family.variants if v.name == family.baseline), None)
    for v in family.variants:
        for note in _notes(v, baseline):
            console.print(f"  [bold]{v.name}[/]: {note}")


def _short(action: str) -> str:
    """The lead phrase of a move ("more bytes in flight: 16-byte ..." -> "more bytes in flight")."""
    return action.split(":")[0].split(" (")[0]


def _row(v: VariantResult) -> list[str]:
    status = f"[{STATUS_STYLE[v.status]}]{v.status.upper()}[/]"
    name = v.name + (" [dim](baseline)[/]" if v.baseline else "")
    if not v.time or not v.point:
        return [name, status, "", "", "", "", "", ""]
    p = v.point
    time = f"{format_time(v.time.median_s)} ±{100 * v.time.spread:.0f}%"
    verdict = f"[{BOUND_STYLE[v.verdict.bound]}]{v.verdict.bound}[/]"
    if v.expect.get("bound") not in (None, v.verdict.bound):
        verdict += f" [red](expected {v.expect['bound']})[/]"
    top = v.verdict.moves[0] if v.verdict.moves else None
    return [
        name,
        status,
        f"[bold yellow]{time} noisy[/]" if v.time.noisy else time,
        f"{format_rate(p.achieved_bandwidth, 'B/s')} {_pct(p.dram_fraction)}",
        f"{format_rate(p.achieved_flops, '')} {_pct(p.compute_fraction)}" if p.flops else "-",
        f"{_ai(p.observed_ai)}/{_ai(p.algorithmic_ai)}" if p.flops else "-",
        verdict,
        f"{top.direction}: {_short(top.action)}" if top else "",
    ]


def _notes(v: VariantResult, baseline: VariantResult | None = None) -> list[str]:
    notes = []
    if v.status != "ok":
        notes.append(f"[{STATUS_STYLE[v.status]}]{v.message}[/]")
    if v.time and v.time.noisy:
        notes.append(f"[yellow]noisy time: {v.time.noise}; its median is uncertain[/]")
    if v.counters:
        notes.append(f"[dim]{_counter_summary(v)}[/]")
    notes += v.notes
    if v.verdict:
        notes += [f"{c.name}: {c.detail}" for c in v.verdict.causes]
        if v.verdict.moves:
            top = v.verdict.moves[0]
            notes.append(f"why {top.direction}: {top.reason}; expect {top.expect}")
        notes += v.verdict.ruled_out
    if v.gpm:
        shown = ", ".join(f"{k.removesuffix('_util').replace('_', ' ')} {x:.0f}%"
                          for k, x in v.gpm.items())
        notes.append(f"[dim]GPM utilization (NVML, back-to-back runs): {shown}[/]")
    if v.speed_vs_baseline:
        against = (f" [yellow](a noisy baseline: {baseline.name} spreads "
                   f"±{100 * baseline.time.spread:.0f}%)[/]" if baseline and baseline.time.noisy
                   else "")
        notes.append(f"{v.speed_vs_baseline:.2f}x the speed of the baseline{against}")
    if v.expectation_mismatch:
        notes.append(f"[red]prediction missed[/]: {v.expectation_mismatch}")
    if v.versus:
        notes.append(v.versus)
    limits = [r for r in v.clocks.throttle_reasons if r in THROTTLING]
    if limits:
        sm = f"SM clock {statistics.median(v.clocks.sm_mhz):.0f} MHz, " if v.clocks.sm_mhz else ""
        notes.append(f"[yellow]{sm}clocks held down by {', '.join(limits)}[/]")
    return notes


def _counter_summary(v: VariantResult) -> str:
    c = v.counters
    flops = ", ".join(f"{format_rate(x, 'FLOP')} {p}" for p, x in c.flops.items()
                      if x >= 0.01 * c.counted_flops) or "no FLOPs"
    return (f"ncu: DRAM read {format_bytes(c.dram_read)}, write {format_bytes(c.dram_write)}; "
            f"L2 {format_bytes(c.l2_bytes)}; counted {flops} (model "
            f"{format_rate(v.flops['model'], 'FLOP')}); occupancy {c.occupancy_pct:.0f}%, "
            f"{c.registers_per_thread} registers, {c.waves:.3g} waves")


def render_run(console: Console, result: RunResult) -> None:
    render_run_header(console, result)
    for family in result.families:
        render_family(console, family)


def render_explanation(console: Console, e: Explanation) -> None:
    p, v = e.point, e.verdict
    console.print(f"[bold]{e.spec.name}[/]: {roofs_line(e.roofs)}")
    console.print(f"  achieved {format_rate(p.achieved_flops, 'FLOP/s')} "
                  f"({_pct(p.compute_fraction)} of compute), "
                  f"{format_rate(p.achieved_bandwidth, 'B/s')} ({_pct(p.dram_fraction)} of DRAM)")
    console.print(f"  AI observed {_ai(p.observed_ai)} FLOP/B, algorithmic "
                  f"{_ai(p.algorithmic_ai)} FLOP/B; {'left' if p.limiting_roof == 'dram' else 'right'} "
                  f"of the ridge; at {_pct(p.roof_fraction)} of the applicable roof")
    render_verdict(console, v)


def render_verdict(console: Console, v: Verdict) -> None:
    console.print(f"  verdict: [{BOUND_STYLE[v.bound]}]{v.bound}-bound[/]: {v.summary}")
    for cause in v.causes:
        console.print(f"    cause {cause.name}: {cause.detail}")
    for move in v.moves:
        console.print(f"    move {move.direction}: {move.action}")
        console.print(f"      why: {move.reason}; expect: {move.expect}")
    for text in v.ruled_out:
        console.print(f"    {text}")


def render_specs(console: Console, specs: list[GpuSpec]) -> None:
    table = Table(title="GPU specs: datasheet, dense peaks in TFLOP/s (* tensor cores)", title_justify="left", pad_edge=False,
                  box=box.SIMPLE_HEAD)
    for column in ("id", "SMs", "TB/s", "L2 MiB", "FP64", "FP32", "TF32*", "FP16*", "FP8*"):
        table.add_column(column, justify="left" if column == "id" else "right",
                         min_width=13 if column == "id" else None)
    for s in specs:
        def peak(key: str) -> str:
            return f"{s.peaks[key].flops_per_s / 1e12:.4g}" if key in s.peaks else "-"
        table.add_row(s.id, str(s.sms), f"{s.dram_bandwidth / 1e12:.3g}",
                      f"{s.l2_bytes / 2**20:.0f}", peak("fp64"), peak("fp32"),
                      peak("tf32-tensor"), peak("fp16-tensor"), peak("fp8-tensor"))
    console.print(table)
    console.print("`rooflint specs ID` shows one GPU: its name, clocks, every peak and ridge point.")


def render_spec(console: Console, s: GpuSpec) -> None:
    console.print(f"[bold]{s.name}[/] ({s.id}): {s.architecture}, compute capability "
                  f"{s.compute_capability}, {s.sms} SMs, boost {s.boost_clock_mhz:.0f} MHz")
    console.print(f"  memory: {s.memory_gb:g} GB {s.memory_type}, "
                  f"{format_rate(s.dram_bandwidth, 'B/s')}; L2 {format_bytes(s.l2_bytes)}")
    table = Table(title_justify="left")
    for column in ("precision", "peak", "assumes SM clock", "ridge (FLOP/B)"):
        table.add_column(column, justify="left" if column == "precision" else "right")
    for precision, peak in s.peaks.items():
        table.add_row(precision, format_rate(peak.flops_per_s, "FLOP/s"),
                      f"{peak.clock_mhz:.0f} MHz", f"{s.ridge(precision):.3g}")
    console.print(table)
    console.print(f"  source: {s.source}")
    if s.notes:
        console.print(f"  notes: {s.notes}")


def render_calibration(console: Console, calibration: Calibration, spec: GpuSpec) -> None:
    table = Table(title=f"{calibration.gpu.name}: measured ceilings, driver "
                        f"{calibration.gpu.driver}, {calibration.created}",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("ceiling", "measured", "datasheet", "of datasheet", "at clock seen",
                   "SM clock", "how"):
        table.add_column(column, justify="left" if column in ("ceiling", "how") else "right")
    rows = [("dram", calibration.dram, spec.dram_bandwidth, "B/s")]
    if calibration.l2:
        rows.append(("l2", calibration.l2, None, "B/s"))
    rows += [(p, c, spec.peaks[p].flops_per_s if p in spec.peaks else None, "FLOP/s")
             for p, c in calibration.compute.items()]
    for name, ceiling, datasheet, unit in rows:
        at_clock = fraction_of_datasheet_at_clock(spec, name, ceiling) if unit == "FLOP/s" else None
        table.add_row(
            name, format_rate(ceiling.value, unit),
            format_rate(datasheet, unit) if datasheet else "-",
            _pct(ceiling.value / datasheet) if datasheet else "-",
            _pct(at_clock) if at_clock else "-",
            f"{ceiling.sm_clock_mhz:.0f} MHz" if ceiling.sm_clock_mhz else "-",
            ceiling.method)
    console.print(table)
    for name, why in calibration.skipped.items():
        console.print(f"[yellow]not measured: {name}: {why}[/]")


def render_comparison(console: Console, c: Comparison) -> None:
    style = {"faster": "green", "slower": "red", "same": "cyan", "inconclusive": "yellow"}
    console.print(f"[bold {style[c.speedup.decision]}]{escape(c.sentence)}[/]")
    console.print(_labelled([("warning", f"[bold yellow]{escape(w)}[/]") for w in c.warnings]
                            + [("where it came from", c.attribution.sentence),
                               ("movement", describe_movement(c.movement))]))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("", c.a, c.b):
        table.add_column(escape(column), justify="left" if not column else "right")

    def time_cell(f: Figures) -> str:
        shown = f"{format_time(f.time_s)} ±{100 * f.spread:.0f}% ({f.samples} samples)"
        return f"[bold yellow]{shown} noisy[/]" if f.noisy else shown
    sides = [c.figures[c.a], c.figures[c.b]]
    table.add_row("time (median ± IQR)", *map(time_cell, sides))
    table.add_row("FLOP/s", *[format_rate(f.flop_rate, "FLOP/s") if f.flop_rate else "-"
                              for f in sides])
    table.add_row("DRAM bandwidth", *[format_rate(f.bandwidth, "B/s") for f in sides])
    sources = sorted({k for side in c.bytes.values() for k in side})
    for source in sources:
        table.add_row(f"DRAM bytes ({source})",
                      *[format_bytes(c.bytes[n][source]) if source in c.bytes[n] else "-"
                        for n in (c.a, c.b)])
    for source in sorted({k for side in c.flops.values() for k in side}):
        table.add_row(f"FLOPs ({source})",
                      *[format_rate(c.flops[n][source], "FLOP") if source in c.flops[n] else "-"
                        for n in (c.a, c.b)])
    table.add_row("correctness", c.correctness[c.a], c.correctness[c.b])
    table.add_row("verdict", str(c.movement["verdict_before"]), str(c.movement["verdict_after"]))
    console.print(table)
    held = c.expectation and "missed" not in c.expectation
    console.print(_labelled(
        ([("prediction", f"[{'green' if held else 'red'}]{escape(c.expectation)}[/]")]
         if c.expectation else [])
        + [("note", f"[yellow]{escape(note)}[/]") for note in c.notes]))


def _labelled(rows: list[tuple[str, str]]) -> Table:
    """Label and text side by side, the text wrapping under itself (a hanging indent)."""
    grid = Table.grid(padding=(0, 1), pad_edge=True)
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column()
    for label, text in rows:
        grid.add_row(f"{label}:", text)
    return grid


GATE_STYLE = {"pass": "green", "improved": "green", "new": "cyan", "inconclusive": "yellow",
              "regressed": "bold red", "missing": "bold red"}


def _slowdown(row) -> str:
    return f"{100 * (row.slowdown - 1):+.1f}%" if row.slowdown is not None else "-"


def render_gate(console: Console, report: GateReport) -> None:
    table = Table(title="rooflint gate", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("family", "variant", "outcome", "time", "why"):
        table.add_column(column, justify="right" if column == "time" else "left")
    for row in report.rows:
        table.add_row(row.family, row.variant,
                      f"[{GATE_STYLE[row.outcome]}]{row.outcome}[/]", _slowdown(row),
                      "; ".join(row.reasons + [f"[yellow]{w}[/]" for w in row.warnings]))
    console.print(table)
    if report.gpu_note:
        console.print(f"[yellow]{report.gpu_note}[/]")
    verdict = "[bold green]PASS[/]" if report.passed else "[bold red]FAIL[/]"
    counts = {o: sum(r.outcome == o for r in report.rows) for o in GATE_STYLE}
    console.print(f"{verdict}: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n))


def gate_markdown(report: GateReport) -> str:
    """A GitHub-flavoured summary: one table row per variant."""
    lines = [f"### rooflint gate: {'PASS' if report.passed else 'FAIL'}", ""]
    if report.gpu_note:
        lines += [f"> {report.gpu_note}", ""]
    lines += ["| family | variant | outcome | time | why |", "|---|---|---|---|---|"]
    for row in report.rows:
        why = "; ".join(row.reasons + row.warnings).replace("|", "\\|")
        lines.append(f"| {row.family} | {row.variant} | {row.outcome} | {_slowdown(row)} | {why} |")
    return "\n".join(lines) + "\n"


def gate_junit(report: GateReport) -> str:
    """JUnit XML: one testcase per variant; regressed and missing ones fail."""
    import xml.etree.ElementTree as ET
    failures = sum(r.outcome in ("regressed", "missing") for r in report.rows)
    suite = ET.Element("testsuite", name="rooflint gate", tests=str(len(report.rows)),
                       failures=str(failures), errors="0")
    for row in report.rows:
        case = ET.SubElement(suite, "testcase", classname=f"rooflint.{row.family}",
                             name=row.variant)
        if row.outcome in ("regressed", "missing"):
            failure = ET.SubElement(case, "failure", message="; ".join(row.reasons),
                                    type=row.outcome)
            failure.text = "; ".join(row.reasons + row.warnings)
        elif row.outcome == "inconclusive" or row.warnings:
            ET.SubElement(case, "system-out").text = "; ".join(row.reasons + row.warnings)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
