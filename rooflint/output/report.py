"""Terminal rendering with rich: run tables, explain panels, the GPU spec table.

Only presentation lives here; every number shown was computed elsewhere and is also in
the JSON result, so the screen and the file never disagree.
"""

from __future__ import annotations

import statistics
import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from rooflint.analysis.calibration import Calibration, fraction_of_datasheet_at_clock
from rooflint.analysis.comparison import Comparison, Figures, describe_movement
from rooflint.analysis.diagnose import Move, Verdict
from rooflint.common.errors import RooflintError
from rooflint.analysis.evidence import BOUND_THRESHOLD, pct
from rooflint.analysis.moves import rule_for
from rooflint.commands.gate import FAILING, Report as GateReport
from rooflint.commands.explain import Explanation
from rooflint.formats.gpus import GpuSpec
from rooflint.measure.protocol import THROTTLING
from rooflint.common.phases import PHASES
from rooflint.common.printable import printable, printable_fields
from rooflint.formats.results import FamilyResult, RunResult, VariantResult
from rooflint.analysis.roofline import Level, Roofs
from rooflint.analysis.sourcelines import supporting
from rooflint.commands.run import Listener
from rooflint.common.units import counted, format_bytes, format_params, format_rate, format_time

# rich's SIMPLE_HEAD in ASCII: a header rule of "-", so a line of N characters is N bytes
# and tools that count bytes (awk, cut, CI log viewers) agree that it fits the terminal.
HEAD_RULE = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
BOUND_STYLE = {"bandwidth": "cyan", "compute": "magenta", "chain": "yellow"}
STATUS_STYLE = {"ok": "green", "fail": "bold red", "error": "bold red", "skipped": "yellow"}


def _ai(value: float) -> str:
    """Three significant figures, whole numbers from 100 up (1020, not 1.02e+03)."""
    if value == float("inf"):
        return "inf"
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def roofs_line(roofs: Roofs) -> str:
    def beside(value: float, datasheet: float, unit: str) -> str:
        shown = format_rate(value, unit)
        return shown if value == datasheet else f"{shown} (datasheet {format_rate(datasheet, unit)})"
    return (f"roofs ({roofs.source}): DRAM "
            f"{beside(roofs.dram_bandwidth, roofs.datasheet_dram_bandwidth, 'B/s')}, "
            f"{roofs.precision} {beside(roofs.compute, roofs.datasheet_compute, 'FLOP/s')}, "
            f"ridge {roofs.ridge:.3g} FLOP/B")


def render_run_header(console: Console, result: RunResult) -> None:
    """The device and settings; printed by `run` before its first family is measured, when
    the byte source is the one it will try (a fallback is announced when it happens)."""
    result = printable_fields(result)
    gpu = result.gpu
    clocks = f", max SM clock {gpu.max_sm_clock_mhz:.0f} MHz" if gpu.max_sm_clock_mhz else ""
    if result.families:
        counted = any(v.counters for f in result.families for v in f.variants)
    else:
        counted = result.settings.get("counters", "off") != "off"
    source = "DRAM bytes from ncu counters" if counted else "DRAM bytes from the manifests' model"
    console.print(f"[bold]{escape(gpu.name)}[/] (spec {escape(result.spec_id)}), {gpu.sms} SMs, "
                  f"L2 {format_bytes(gpu.l2_bytes)}, driver {escape(gpu.driver)}{clocks}; "
                  f"cache {escape(str(result.settings.get('cache', 'cold')))}; {source}")
    if result.settings.get("counters_unavailable"):
        console.print(Text(f"counters unavailable: {result.settings.get('counters_unavailable')}",
                           style="yellow"))


# The family table's columns. The wide layout is used when it fits the terminal without
# wrapping; otherwise the compact one, which shows a failed variant's status in the verdict
# column and puts the top move among the notes.
WIDE = ("variant", "status", "time", "DRAM", "FLOP/s", "AI obs/alg", "verdict", "top move")
COMPACT = ("variant", "time", "DRAM", "FLOP/s", "AI obs/alg", "verdict")
NUMERIC = {"time", "DRAM", "FLOP/s", "AI obs/alg"}
UNBOUNDED = 10**6  # a width no table reaches: measures its natural (unwrapped) width


def render_family(console: Console, family: FamilyResult) -> None:
    family = printable_fields(family)
    params = f" ({format_params(family.params)})" if family.params else ""
    console.print(Text(f"{family.name}{params}", "table.title"))
    wide = _family_table(family, WIDE)
    compact = console.measure(wide, options=console.options.update_width(UNBOUNDED)).maximum \
        > console.width
    console.print(_family_table(family, COMPACT) if compact else wide)
    precisions = {v.roofs.precision: v.roofs for v in family.variants if v.roofs}
    for roofs in precisions.values():
        console.print(f"{escape(roofs_line(roofs))}; bound = at >= {100 * BOUND_THRESHOLD:.0f}% of a "
                      f"roof; DRAM and FLOP/s as % of their roofs")
    console.print(_notes_grid(family, top_move=compact))


# Names up to this long stay on one line; longer ones (a library kernel's generated name)
# fold rather than push every other column off the screen.
WHOLE_NAME = 48


def _family_table(family: FamilyResult, columns: tuple[str, ...]) -> Table:
    table = Table(box=HEAD_RULE, show_edge=False, pad_edge=False, collapse_padding=True)
    whole = max((len(v.name) for v in family.variants), default=0) <= WHOLE_NAME
    for column in columns:
        table.add_column(column, justify="right" if column in NUMERIC else "left",
                         no_wrap=column == "variant" and whole, overflow="fold")
    for v in family.variants:
        cells = _cells(v)
        if "top move" not in columns:
            cells.setdefault("verdict", cells["status"])
        table.add_row(*(cells.get(column, "") for column in columns))
    return table


def _short(action: str) -> str:
    """The lead phrase of a move ("more bytes in flight: 16-byte ..." -> "more bytes in flight")."""
    return action.split(":")[0].split(" (")[0]


def _cells(v: VariantResult) -> dict[str, Text]:
    """One variant's row, by column; a variant that was not timed has only name and status."""
    name = Text(shortened(v.name))
    if v.baseline:
        name.append(" (baseline)", "dim")
    cells = {"variant": name, "status": Text(v.status.upper(), STATUS_STYLE[v.status])}
    if not v.time or not v.point:
        return cells
    p = v.point
    time = f"{format_time(v.time.median_s)} ±{100 * v.time.spread:.0f}%"
    verdict = Text(v.verdict.bound, BOUND_STYLE[v.verdict.bound])
    if v.expect.get("bound") not in (None, v.verdict.bound):
        verdict.append(f" (expected {v.expect['bound']})", "red")
    top = v.verdict.moves[0] if v.verdict.moves else None
    return cells | {
        "time": Text(f"{time} noisy", "bold yellow") if v.time.noisy else Text(time),
        "DRAM": Text(f"{format_rate(p.achieved_bandwidth, 'B/s')} {pct(p.dram_fraction)}"),
        "FLOP/s": Text(f"{format_rate(p.achieved_flops, '')} {pct(p.compute_fraction)}"
                       if p.flops else "-"),
        "AI obs/alg": Text(f"{_ai(p.observed_ai)}/"
                           f"{_ai(p.algorithmic_ai) if p.algorithmic_known else '-'}"
                           if p.flops else "-"),
        "verdict": verdict,
        "top move": Text(f"{top.direction}: {_short(top.action)}" if top else ""),
    }


def _notes_grid(family: FamilyResult, top_move: bool) -> Padding:
    """Each variant's notes, one per row behind its name (see _labelled)."""
    baseline = next((v for v in family.variants if v.name == family.baseline), None)
    return _labelled([(shortened(v.name), note) for v in family.variants
                      for note in _notes(v, top_move, baseline)])


def _notes(v: VariantResult, top_move: bool,
           baseline: VariantResult | None = None) -> list[Text]:
    """What the table has no room for; with ``top_move`` the move leads its reason."""
    notes = []
    if v.status != "ok":
        notes.append(Text(v.message, STATUS_STYLE[v.status]))
    if v.share and v.share.origins:
        notes.append(Text("launched by " + "; ".join(
            f"{o.words} ({counted(o.launches, 'launch', 'launches')})" for o in v.share.origins)))
    if v.share and v.message:
        notes.append(Text(v.message, "yellow"))
    if v.time and v.time.noisy:
        notes.append(Text(f"noisy time: {v.time.noise}; its median is uncertain", "yellow"))
    if v.counters:
        notes.append(Text(_counter_summary(v), "dim"))
    if v.levels:
        notes.append(Text(_levels_line(v), "dim"))
    notes += [Text(note) for note in v.notes]
    if v.verdict:
        notes += [Text(f"{c.name}: {c.detail}") for c in v.verdict.causes]
        if v.verdict.moves:
            top = v.verdict.moves[0]
            lead = (f"move {top.direction}: {_short(top.action)}; why" if top_move
                    else f"why {top.direction}")
            notes.append(Text(f"{lead}: {top.reason}; expect {top.expect}"))
            if v.source_lines:
                rule = rule_for(top.id)
                notes += [Text(f"  {line}", "cyan") for line in supporting(
                    v.source_lines, rule.lines if rule else "stall_samples")]
        notes += [Text(text) for text in v.verdict.ruled_out]
    if v.gpm:
        shown = ", ".join(f"{k.removesuffix('_util').replace('_', ' ')} {x:.0f}%"
                          for k, x in v.gpm.items())
        notes.append(Text(f"GPM utilization (NVML, back-to-back runs): {shown}", "dim"))
    if v.speed_vs_baseline:
        note = Text(f"{v.speed_vs_baseline:.2f}x the speed of the baseline")
        if baseline and baseline.time and baseline.time.noisy:
            note.append(f" (a noisy baseline: {baseline.name} spreads "
                        f"±{100 * baseline.time.spread:.0f}%)", "yellow")
        notes.append(note)
    if v.expectation_mismatch:
        notes.append(Text.assemble(("prediction missed", "red"), f": {v.expectation_mismatch}"))
    if v.versus:
        notes.append(Text(v.versus))
    limits = [r for r in v.clocks.throttle_reasons if r in THROTTLING]
    if limits:
        sm = f"SM clock {statistics.median(v.clocks.sm_mhz):.0f} MHz, " if v.clocks.sm_mhz else ""
        notes.append(Text(f"{sm}clocks held down by {', '.join(limits)}", "yellow"))
    return notes


def _counter_summary(v: VariantResult) -> str:
    c = v.counters
    flops = ", ".join(f"{format_rate(x, 'FLOP')} {p}" for p, x in c.flops.items()
                      if x >= 0.01 * c.counted_flops) or "no FLOPs"
    return (f"ncu: DRAM read {format_bytes(c.dram_read)}, write {format_bytes(c.dram_write)}; "
            f"L2 {format_bytes(c.l2_bytes)}; counted {flops}"
            + (f" (model {format_rate(v.flops['model'], 'FLOP')})" if "model" in v.flops else "")
            + f"; occupancy {c.occupancy_pct:.0f}%, "
            f"{c.registers_per_thread} registers, {c.waves:.3g} waves")


def _levels_line(v: VariantResult) -> str:
    """The hierarchical roofline in one line: each level's bandwidth, the intensity it
    gives, and how close it ran to its roof; the binding level marked."""
    binding = v.verdict.level if v.verdict else None

    def one(level: Level) -> str:
        of_roof = (f" ({pct(level.fraction)} of {'its peak' if level.name == 'l1' else 'roof'})"
                   if level.fraction is not None else "")
        mark = " (binds)" if level.name == binding else ""
        return (f"{level.name.upper()} {format_rate(level.bandwidth, 'B/s')}{of_roof}, "
                f"AI {_ai(level.intensity)}{mark}")
    return "levels: " + "; ".join(one(level) for level in v.levels)


def render_run(console: Console, result: RunResult) -> None:
    result = printable_fields(result)
    render_run_header(console, result)
    for family in result.families:
        if result.settings.get("mode") == "profile":
            render_upside(console, result, family)
        render_family(console, family)


def render_timings(console: Console, result: RunResult) -> None:
    """Where the run's seconds went, by phase, per family and in all (``rooflint run
    --timings``). The counter pass's own worker phases are in the result document."""
    result = printable_fields(result)
    shown = [p for p in PHASES if result.timings.get(p)]
    table = Table(title="seconds per phase", title_justify="left", box=HEAD_RULE,
                  show_edge=False, pad_edge=False)
    table.add_column("phase")
    columns = [(f.name, f.timings) for f in result.families] + [("run", result.timings)]
    for name, _ in columns:
        table.add_column(name, justify="right", overflow="fold")
    for phase in shown:
        table.add_row(phase, *(f"{seconds.get(phase, 0.0):.1f}" for _, seconds in columns))
    table.add_row("total", *(f"{sum(seconds.get(p, 0.0) for p in shown):.1f}"
                             for _, seconds in columns))
    console.print(table)


NAME_WIDTH = 30          # a kernel's name in the application table: one line at 100 columns
NAME_TAIL = 9            # kept after the ellipsis: cuBLAS's layout letters, a kernel's number
ORIGIN_COLUMNS = 137     # the table has room for "launched from" from this width (else the notes)
ORIGIN_WIDTH = 26        # its line there (file:line function); the operator in the notes


def shortened(name: str, width: int = NAME_WIDTH) -> str:
    """``name`` in at most ``width`` characters, its head and tail around an ellipsis
    (cuDNN's and cuBLAS's kernel names run to 90 characters; the whole name is in the
    kernel's notes and the result document)."""
    if len(name) <= width:
        return name
    return f"{name[:width - 1 - NAME_TAIL]}…{name[-NAME_TAIL:]}"


def origin_cell(line: str | None) -> str:
    """``train_step.py:37 in Block.forward`` as the table has room for it: the file and
    line, then the function's own name (``forward``, not its class or enclosing
    functions), shortened only if the file's name is long."""
    if not line:
        return ""
    place, _, function = line.partition(" in ")
    return shortened(f"{place} {function.rsplit('.', 1)[-1]}".strip(), ORIGIN_WIDTH)


def render_upside(console: Console, result: RunResult, family: FamilyResult) -> None:
    """The application view: each profiled kernel's share of the GPU time, how near its
    roof it runs, and the most a fix could save, the biggest saving first."""
    from rooflint.commands.profile import is_done
    result, family = printable_fields((result, family))
    region = result.settings.get("gpu_time_s") or 0.0
    # The heading is a line of its own, as wide as the screen: a table title would wrap at
    # the width of a table of one short kernel.
    console.print(Text(f"{family.name}: {format_time(region)} of GPU time in "
                       f"{counted(result.settings.get('kernels', 0), 'kernel')}; where "
                       f"a fix could save the most"))
    table = Table(box=HEAD_RULE, show_edge=False, pad_edge=False, collapse_padding=True)
    traced = (any(v.share and v.share.origins for v in family.variants)
              and console.width >= ORIGIN_COLUMNS)
    columns = ("kernel", "what", *(("launched from",) if traced else ()), "share", "launches",
               "verdict", "at roof", "upside")
    for column in columns:
        table.add_column(column, justify="right" if column in ("share", "launches", "at roof",
                                                               "upside") else "left",
                         no_wrap=column != "what" or traced,
                         overflow="ellipsis" if column == "what" else "fold",
                         ratio=1 if column == "what" else None)
    for v in family.variants:
        s = v.share
        if not s:
            continue
        verdict = Text(v.verdict.bound, BOUND_STYLE[v.verdict.bound]) if v.verdict else Text("-")
        upside = ("done" if is_done(v) else
                  f"{format_time(s.upside_s)} ({pct(s.upside_s / region)})" if s.upside_s
                  is not None and region else "-")
        origin = [Text(origin_cell(s.origins[0].line) if s.origins else "")] if traced else []
        table.add_row(Text(shortened(v.name)), Text(s.library or ""), *origin, pct(s.share),
                      str(s.launches), verdict,
                      pct(s.best_fraction) if s.best_fraction is not None else "-", upside)
    console.print(table)
    other = result.settings.get("other_kernels")
    if other:
        console.print(Text(f"  not profiled: {other} more kernels, "
                           f"{pct(result.settings.get('other_share', 0.0))} of the GPU time"))
    top = next((v for v in family.variants if v.share and v.share.upside_s
                and not is_done(v) and v.verdict and v.verdict.moves), None)
    if top:
        move = top.verdict.moves[0]
        console.print(Text(f"  biggest upside: {shortened(top.name)}, {pct(top.share.share)} of GPU time, "
                           f"{top.verdict.bound}-bound at {pct(top.share.best_fraction)} of its "
                           f"roof: {move.direction}: {_short(move.action)}; up to "
                           f"{format_time(top.share.upside_s)} of {format_time(region)}"))


def only_variants(result: RunResult, names: list[str], path: Path) -> RunResult:
    """The result cut down to the named variants (all with no names), families in order;
    a name the file does not hold is bad input, answered with the names it does hold."""
    if not names:
        return result
    held = {v.name for f in result.families for v in f.variants}
    unknown = [n for n in names if n not in held]
    if unknown:
        listing = "; ".join(f"{f.name}: {', '.join(v.name for v in f.variants)}"
                            for f in result.families)
        raise RooflintError(f"{path} has no variant {', '.join(unknown)}; it has {listing}")
    families = [replace(f, variants=[v for v in f.variants if v.name in names])
                for f in result.families]
    return replace(result, families=[f for f in families if f.variants])


class RunDisplay:
    """What `run` and `gate` show while they measure.

    One progress line per family at work names it, the phase and the variant ("gemm_fp32:
    timing tiled 3/6"); it appears with the phase's first variant (so a phase that does
    not run, such as counters with ``--counters off``, never shows) and goes when the
    phase's last variant is done. With ``--devices`` each GPU's family has its own line.
    With ``tables`` (run), the header is printed once the device is known and each
    family's table as soon as that family is done: with counters, once every family is
    timed and profiled (Nsight Compute gives its counters when its session ends).
    """

    def __init__(self, console: Console, tables: bool) -> None:
        self.console = console
        self.tables = tables
        self.timed: list[str] = []         # families in the result (written, with --json)
        self.done: list[str] = []          # of those, the complete ones (counters taken)
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                            TimeElapsedColumn(), console=console, transient=True)
        self._lines: dict[str, tuple[str, TaskID]] = {}   # family -> (phase, its line)
        self._lock = threading.Lock()      # lanes report from their own threads

    def __enter__(self) -> "RunDisplay":
        self.bar.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.bar.stop()

    def listener(self) -> Listener:
        return Listener(started=self.started, progress=self.progress, timed=self.timed_family,
                        finished=self.finished, warn=self.warn)

    def started(self, result: RunResult) -> None:
        if self.tables:
            render_run_header(self.console, result)

    def progress(self, family: str, phase: str, total: int) -> Callable[[str, str], None]:
        begun = measured = 0

        def update(event: str, variant: str) -> None:
            nonlocal begun, measured
            if event == "start":
                begun += 1
                self._show(family, phase, total,
                           printable(f"{family}: {phase} {variant} {begun}/{total}"))
            else:
                measured += 1
                self._advance(family, phase, last=measured >= total)
        return update

    def _show(self, family: str, phase: str, total: int, description: str) -> None:
        with self._lock:
            line = self._lines.get(family)
            if line and line[0] != phase:
                self.bar.remove_task(line[1])
                line = None
            if line is None:
                self._lines[family] = (phase, self.bar.add_task(description, total=total))
            else:
                self.bar.update(line[1], description=description)

    def _advance(self, family: str, phase: str, last: bool) -> None:
        with self._lock:
            line = self._lines.get(family)
            if line and line[0] == phase:
                self.bar.advance(line[1])
        if last:
            self._end(family)

    def _end(self, family: str) -> None:
        with self._lock:
            line = self._lines.pop(family, None)
            if line:
                self.bar.remove_task(line[1])

    def timed_family(self, result: RunResult, family: FamilyResult) -> None:
        self._end(family.name)
        if family.name not in self.timed:
            self.timed.append(family.name)

    def finished(self, result: RunResult, family: FamilyResult) -> None:
        self._end(family.name)
        self.done.append(family.name)
        if self.tables:
            render_family(self.console, family)

    def warn(self, message: str) -> None:
        self.console.print(Text(f"rooflint: {printable(message)}", "yellow"))


def render_explanation(console: Console, e: Explanation) -> None:
    e = printable_fields(e)
    p, v = e.point, e.verdict
    console.print(f"[bold]{escape(e.spec.name)}[/]: {escape(roofs_line(e.roofs))}")
    console.print(f"  achieved {format_rate(p.achieved_flops, 'FLOP/s')} "
                  f"({pct(p.compute_fraction)} of compute), "
                  f"{format_rate(p.achieved_bandwidth, 'B/s')} ({pct(p.dram_fraction)} of DRAM)")
    console.print(f"  AI observed {_ai(p.observed_ai)} FLOP/B, algorithmic "
                  f"{_ai(p.algorithmic_ai)} FLOP/B; {'left' if p.limiting_roof == 'dram' else 'right'} "
                  f"of the ridge; at {pct(p.roof_fraction)} of the applicable roof")
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
    if move.gain is None:
        return ""
    basis = "its evidence" if move.gain_from == "evidence" else "the nearest roof"
    return f"; at most {move.gain:.3g}x faster (from {basis})"


def render_specs(console: Console, specs: list[GpuSpec]) -> None:
    table = Table(title="GPU specs: datasheet, dense peaks in TFLOP/s (* tensor cores)", title_justify="left", pad_edge=False,
                  box=box.SIMPLE_HEAD)
    for column in ("id", "SMs", "TB/s", "L2 MiB", "FP64", "FP32", "TF32*", "FP16*", "FP8*"):
        table.add_column(column, justify="left" if column == "id" else "right",
                         min_width=13 if column == "id" else None)
    for s in specs:
        def peak(key: str) -> str:
            return f"{s.peaks[key].flops_per_s / 1e12:.4g}" if key in s.peaks else "-"
        table.add_row(Text(s.id), str(s.sms), f"{s.dram_bandwidth / 1e12:.3g}",
                      f"{s.l2_bytes / 2**20:.0f}", peak("fp64"), peak("fp32"),
                      peak("tf32-tensor"), peak("fp16-tensor"), peak("fp8-tensor"))
    console.print(table)
    console.print("`rooflint specs ID` shows one GPU: its name, clocks, every peak and ridge point.")


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
    console.print(_labelled([(name, Text(ceiling.method)) for name, ceiling, _, _ in rows]))
    for name, why in calibration.skipped.items():
        console.print(Text(f"not calibrated: {name}: {why}", "yellow"))


def render_comparison(console: Console, c: Comparison) -> None:
    c = printable_fields(c)
    style = {"faster": "green", "slower": "red", "same": "cyan", "inconclusive": "yellow"}
    console.print(f"[bold {style[c.speedup.decision]}]{escape(c.sentence)}[/]")
    console.print(_labelled([("warning", f"[bold yellow]{escape(w)}[/]") for w in c.warnings]
                            + ([("where it came from", c.attribution.sentence)]
                               if c.attribution else [])
                            + [("movement", describe_movement(c.movement))]))
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


LABEL_WIDTH = 34   # a longer label (a library kernel's name) folds, leaving the text room


def _labelled(rows: list[tuple[str, str | Text]], indent: int = 2) -> Padding:
    """Label and text side by side, indented; a long text wraps under its own start (a
    hanging indent), so where one ends and the next begins stays visible. Labels are user
    text (variant names) and printed as written; a str text is rich markup."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", max_width=LABEL_WIDTH, overflow="fold")
    grid.add_column()
    for label, text in rows:
        grid.add_row(Text(f"{label}:"), text)
    return Padding(grid, (0, 0, 0, indent), expand=False)


GATE_STYLE = {"pass": "green", "improved": "green", "new": "cyan", "inconclusive": "yellow",
              "regressed": "bold red", "missing": "bold red"}


def _slowdown(row) -> str:
    return f"{100 * (row.slowdown - 1):+.1f}%" if row.slowdown is not None else "-"


def render_gate(console: Console, report: GateReport) -> None:
    report = printable_fields(report)
    table = Table(title="rooflint gate", title_justify="left", box=HEAD_RULE, pad_edge=False)
    whole = all(len(r.variant) <= WHOLE_NAME and len(r.family) <= WHOLE_NAME
                for r in report.rows)
    for column in ("family", "variant", "outcome", "time", "why"):
        # the outcome and the time always show; long names fold rather than hide them
        table.add_column(column, justify="right" if column == "time" else "left",
                         no_wrap=column in ("outcome", "time") or
                         (whole and column in ("family", "variant")),
                         overflow="fold", ratio=1 if column == "why" else None)
    for row in report.rows:
        why = Text("; ").join([Text(r) for r in row.reasons] +
                              [Text(w, "yellow") for w in row.warnings])
        table.add_row(Text(row.family), Text(row.variant),
                      Text(row.outcome, GATE_STYLE[row.outcome]), _slowdown(row), why)
    console.print(table)
    if report.gpu_note:
        console.print(Text(report.gpu_note, "yellow"))
    verdict = "[bold green]PASS[/]" if report.passed else "[bold red]FAIL[/]"
    counts = {o: sum(r.outcome == o for r in report.rows) for o in GATE_STYLE}
    console.print(f"{verdict}: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n))


# How a gate summary starts: `--markdown` replaces an existing file only if it starts so.
GATE_HEADING = "### rooflint gate:"


def gate_markdown(report: GateReport) -> str:
    """A GitHub-flavoured summary: one table row per variant."""
    report = printable_fields(report)
    lines = [f"{GATE_HEADING} {'PASS' if report.passed else 'FAIL'}", ""]
    if report.gpu_note:
        lines += [f"> {report.gpu_note}", ""]
    lines += ["| family | variant | outcome | time | why |", "|---|---|---|---|---|"]
    for row in report.rows:
        cells = [row.family, row.variant, row.outcome, _slowdown(row),
                 "; ".join(row.reasons + row.warnings)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def gate_junit(report: GateReport) -> str:
    """JUnit XML: one testcase per variant; those whose outcome fails the gate
    (gate.FAILING) fail. Names are printable: XML 1.0 cannot carry a control character,
    even escaped."""
    import xml.etree.ElementTree as ET
    report = printable_fields(report)
    failures = sum(r.outcome in FAILING for r in report.rows)
    suite = ET.Element("testsuite", name="rooflint gate", tests=str(len(report.rows)),
                       failures=str(failures), errors="0")
    for row in report.rows:
        case = ET.SubElement(suite, "testcase", classname=f"rooflint.{row.family}",
                             name=row.variant)
        if row.outcome in FAILING:
            failure = ET.SubElement(case, "failure", message="; ".join(row.reasons),
                                    type=row.outcome)
            failure.text = "; ".join(row.reasons + row.warnings)
        elif row.outcome == "inconclusive" or row.warnings:
            ET.SubElement(case, "system-out").text = "; ".join(row.reasons + row.warnings)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
