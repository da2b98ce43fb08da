"""The gate's report in each form it is written: the terminal table, the Markdown summary
(``--markdown``, $GITHUB_STEP_SUMMARY) and JUnit XML (``--junit``). One row per variant,
read from the record judge/gate.py fills (formats/gate_outcomes.py).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rooflint.common.printable import printable_fields
from rooflint.common.units import counted
from rooflint.formats.gate_outcomes import FAILING, Outcome, Report, Row
from rooflint.formats.thresholds import as_percent
from rooflint.output.depth import Depth
from rooflint.output.terminal import HEAD_RULE, WHOLE_NAME


GATE_STYLE = {Outcome.PASS: "green", Outcome.IMPROVED: "green", Outcome.NEW: "cyan",
              Outcome.INCONCLUSIVE: "yellow", Outcome.REGRESSED: "bold red",
              Outcome.MISSING: "bold red"}


def _slowdown(row: Row) -> str:
    return f"{100 * (row.slowdown - 1):+.1f}%" if row.slowdown is not None else "-"


def render_gate(console: Console, report: Report, depth: Depth = Depth.DEFAULT) -> None:
    """The verdict on the terminal at ``depth``: a line for each variant that did not simply
    pass (summary), the table of every variant (default), the table with each time's
    interval and the limits the variants were judged by (detail); then the verdict."""
    report = printable_fields(report)
    if depth is Depth.SUMMARY:
        for row in report.rows:
            if row.outcome != Outcome.PASS:
                console.print(_row_line(row))
    else:
        console.print(_table(report.rows, interval=depth is Depth.DETAIL))
    if depth is Depth.DETAIL:
        for limits, rows in _by_limits(report.rows).items():
            console.print(f"limits of {counted(len(rows), 'variant')}: {limits}", markup=False)
    if report.gpu_note:
        console.print(Text(report.gpu_note, "yellow"))
    verdict = "[bold green]PASS[/]" if report.passed else "[bold red]FAIL[/]"
    counts = {o: sum(r.outcome == o for r in report.rows) for o in GATE_STYLE}
    console.print(f"{verdict}: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n))


def _why(row: Row) -> Text:
    return Text("; ").join([Text(r) for r in row.reasons] +
                           [Text(w, "yellow") for w in row.warnings])


def _row_line(row: Row) -> Text:
    """One variant in a line: ``w4a16_gemv cublas_fp16: regressed -47.2% (why)``."""
    line = Text(f"{row.family} {row.variant}: ").append(row.outcome, GATE_STYLE[row.outcome])
    line.append(f" {_slowdown(row)}" if row.slowdown is not None else "")
    return line.append(" (").append(_why(row)).append(")") if row.reasons or row.warnings \
        else line


def _table(rows: list[Row], interval: bool) -> Table:
    """The table of every variant (``interval``: with its time's interval)."""
    table = Table(title="rooflint gate", title_justify="left", box=HEAD_RULE, pad_edge=False)
    whole = all(len(r.variant) <= WHOLE_NAME and len(r.family) <= WHOLE_NAME for r in rows)
    columns = ("family", "variant", "outcome", "time") + (("interval",) if interval else ()) \
        + ("why",)
    for column in columns:
        # the outcome and the time always show; long names fold rather than hide them
        table.add_column(column, justify="right" if column in ("time", "interval") else "left",
                         no_wrap=column in ("outcome", "time", "interval") or
                         (whole and column in ("family", "variant")),
                         overflow="fold", ratio=1 if column == "why" else None)
    for row in rows:
        cells = [Text(row.family), Text(row.variant),
                 Text(row.outcome, GATE_STYLE[row.outcome]), _slowdown(row)]
        table.add_row(*cells, *([_interval(row)] if interval else []), _why(row))
    return table


def _interval(row: Row) -> str:
    """The time change's interval, as the gate's reasons write it: ``-1.2% to +3.0%``."""
    if row.interval is None:
        return "-"
    fast, slow = row.interval
    return f"{100 * (fast - 1):+.1f}% to {100 * (slow - 1):+.1f}%"


LIMIT_NAMES = {"max_slowdown": "time", "max_bytes_growth": "DRAM bytes",
               "max_flops_growth": "counted FLOPs"}


def _by_limits(rows: list[Row]) -> dict[str, list[Row]]:
    """The variants judged (those with limits), by the limits they were judged by, written
    ``time 5%, DRAM bytes 2%, counted FLOPs 2%``: once for all of them unless a manifest
    or an option set other limits for some."""
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        if row.thresholds:
            limits = ", ".join(f"{LIMIT_NAMES[key]} {as_percent(value)}"
                               for key, value in row.thresholds.items())
            grouped.setdefault(limits, []).append(row)
    return grouped


# How a gate summary starts: `--markdown` replaces an existing file only if it is one
# (output/outputs.py parses it: this heading, then the table gate_markdown writes).
GATE_HEADING = "### rooflint gate:"


def gate_markdown(report: Report) -> str:
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


def gate_junit(report: Report) -> str:
    """JUnit XML: one testcase per variant; those whose outcome fails the gate
    (FAILING) fail. Names are printable: XML 1.0 cannot carry a control character,
    even escaped."""
    # Imported here for start-up time: run and profile load this module (outputs.py, their
    # guard, takes GATE_HEADING from it) and never write XML.
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
        elif row.outcome == Outcome.INCONCLUSIVE or row.warnings:
            ET.SubElement(case, "system-out").text = "; ".join(row.reasons + row.warnings)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
