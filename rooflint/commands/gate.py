"""`rooflint gate` as the command line runs it: its files guarded, the current result read
or measured, the baseline written or judged, the verdict printed and its reports written,
and the exit code.

Apart from judge/gate.py, which is the gate's judgement alone (a baseline and a result
in, a report out): this is only what the `gate` command adds around it.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from rooflint.judge.gate import evaluate, recheck as gate_recheck
from rooflint.commands.requests import GateRequest
from rooflint.engine.families import RunOptions, check_inputs, run as run_families
from rooflint.engine.compare_sides import remeasure_against
from rooflint.commands import writing
from rooflint.commands.stdio import console, emit, errors, fail, progress, say, status
from rooflint.common.errors import RooflintError
from rooflint.formats import baseline as baselines
from rooflint.formats.gate_outcomes import Report
from rooflint.formats.jsonfile import append_text, write_text
from rooflint.formats.results import read_result
from rooflint.formats.thresholds import threshold_option
from rooflint.output import outputs
from rooflint.output.gate_report import gate_junit, gate_markdown, render_gate
from rooflint.output.live import RunDisplay
from rooflint.output.outputs import STDOUT
from rooflint.output.written import baseline_written, written_to


def gate_command(request: GateRequest) -> None:
    """Gate as `rooflint gate` was asked: exit 1 when the gate fails, 2 when a report
    could not be written."""
    baseline_path, targets, current = request.baseline_path, list(request.targets), request.current
    update, markdown, junit = request.update, request.markdown, request.junit
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    summary_path = Path(step_summary) if step_summary else None
    piped = writing.to_stdout(("--markdown", markdown), ("--junit", junit),
                              ("--baseline", baseline_path if update else None))
    guard_gate_files(baseline_path, current, update, markdown, junit, summary_path,
                     request.force)
    if current and targets:
        fail(f"--current {current} is judged instead of measuring, so TARGET "
             f"{' '.join(targets)} would be ignored: drop the targets, or drop --current")
    unjudged = [option for option, path in (("--markdown", markdown), ("--junit", junit)) if path]
    if update and unjudged:
        fail(f"--update writes the baseline and judges nothing: drop {' and '.join(unjudged)}")
    overrides = {key: threshold_option(f"--{key.replace('_', '-')}", value) for key, value in (
        ("max_slowdown", request.max_slowdown), ("max_bytes_growth", request.max_bytes_growth),
        ("max_flops_growth", request.max_flops_growth)) if value is not None}
    if current is None and not update and baseline_path != STDOUT and not baseline_path.exists():
        fail(f"no baseline at {baseline_path}; make one with: rooflint gate --update "
             f"--baseline {baseline_path}")
    if current:
        result = read_result(current)
    else:
        options = RunOptions(targets=targets, variants=[], sizes={}, counters=request.counters)
        manifests = check_inputs(options, progress)
        with RunDisplay(errors if piped else console, tables=False, messages=errors) as display:
            result = run_families(options, display.listener(), manifests=manifests)
    measured = baselines.from_result(result)
    if update:
        writing.write_json(baselines.document(measured), baseline_path, "baseline")
        if baseline_path != STDOUT:
            status(baseline_written(baseline_path, len(measured.entries), measured.gpu,
                                    measured.driver))
        return
    reference = baselines.read(baseline_path)
    report = evaluate(reference, measured, overrides, request.gpu_mismatch)
    if request.recheck:
        report = gate_recheck(report, remeasure_against(reference, result))
    render_gate(errors if piped else console, report, request.depth)
    written = write_gate_reports(report, markdown, junit, summary_path)
    if not report.passed:
        raise typer.Exit(1)
    if not written:
        raise typer.Exit(2)


def guard_gate_files(baseline: Path, current: Path | None, update: bool, markdown: Path | None,
                     junit: Path | None, step_summary: Path | None, force: bool) -> None:
    """The gate's files, guarded: with --update it writes the baseline (from --current, if
    given); otherwise it reads the baseline (and --current) and writes the reports. With
    --current, a report that cannot be written is said after the verdict; measuring takes
    minutes, so then every path must work first. ``force``: replace files of other kinds."""
    read = [outputs.Named("--current", current)] if current else []
    if update:
        written = ([] if baseline == STDOUT else
                   [outputs.Output("--baseline", baseline, outputs.BASELINE)])
    else:
        read.append(outputs.Named("--baseline", baseline))
        written = [outputs.Output(option, path, kind, appended)
                   for option, path, kind, appended in (
                       ("--markdown", markdown, outputs.GATE_SUMMARY, False),
                       ("--junit", junit, outputs.JUNIT, False),
                       ("GITHUB_STEP_SUMMARY", step_summary, outputs.STEP_SUMMARY, True))
                   if path and path != STDOUT]
    outputs.guard_outputs(written, read, writable=current is None, force=force)


def write_gate_reports(report: Report, markdown: Path | None, junit: Path | None,
                       step_summary: Path | None) -> bool:
    """Write every report the gate was asked for, after its verdict is on the screen (one
    named ``-`` printed on standard output, the verdict then on standard error); one that
    cannot be written is one line on stderr, and neither stops the others nor hides the
    verdict; each file written is said. False if any failed."""
    summary = gate_markdown(report)
    writes = [(write_text, summary, markdown, "gate summary"),
              (append_text, summary, step_summary, None),
              (write_text, gate_junit(report), junit, "JUnit report")]
    written = True
    for write, text, path, what in writes:
        try:
            if path == STDOUT:
                emit(text.rstrip("\n"))
            elif path:
                write(text, path)
                if what:        # the step summary is the runner's, shown on the run's page
                    status(written_to(what, path))
        except RooflintError as exc:
            say(str(exc))
            written = False
    return written
