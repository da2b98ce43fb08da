"""`rooflint run` as the command line runs it: its options checked, the lanes run under
the live display, then the result written, printed and drawn, and the exit code.

Apart from engine/families.py, which runs lanes and workers for run, gate and compare
alike: this is only what the `run` command adds around them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from rooflint.common.vocabularies import CountersMode
from rooflint.commands import writing
from rooflint.commands.requests import RunRequest
from rooflint.engine.families import RunOptions, check_inputs, parse_sizes, run as run_families
from rooflint.commands.stdio import console, emit, errors, fail, progress, status
from rooflint.formats.status import Status
from rooflint.measure import runner
from rooflint.measure.devices import device_indices, parse_devices, visible_devices
from rooflint.output.outputs import STDOUT, check_outputs, export_outputs
from rooflint.output.written import result_written


def run_command(request: RunRequest) -> None:
    """Measure, as `rooflint run` was asked; exit 1 if a variant failed or erred."""
    json_path, svg = request.json_path, request.svg
    tables = writing.asked(request.exports)
    to_stdout = writing.to_stdout(("--json", json_path), ("--svg", svg),
                                  *((t.option, t.path) for t in tables))
    if request.source and request.counters == CountersMode.OFF:
        fail("--source reads Nsight Compute's source counters: it cannot run with --counters off")
    check_outputs(None if json_path == STDOUT else json_path,
                  picture=None if svg == STDOUT else svg, tables=export_outputs(tables),
                  force=request.force)
    if request.devices is not None:
        device_indices(request.devices)    # nonsense is refused before any GPU is counted
    chosen = (parse_devices(request.devices, visible_devices())
              if request.devices is not None else None)
    options = RunOptions(targets=[] if request.target is None else [request.target],
                         variants=list(request.variants), sizes=parse_sizes(list(request.sizes)),
                         gpu=request.gpu, cache=request.cache, timeout_s=request.timeout_s,
                         json_path=None if json_path == STDOUT else json_path,
                         counters=request.counters, devices=chosen, gpm=request.gpm,
                         source=request.source, reference_cache=request.reference_cache,
                         counter_cache=request.counter_cache)
    manifests = check_inputs(options, progress)   # every input mistake, before any worker starts
    pools = runner.timing_pools(chosen)   # their start-up runs while the rest of rooflint loads
    try:
        # here, not at the top: loaded while the pools above start
        from rooflint.output.live import RunDisplay
        screen = errors if to_stdout else console
        display = RunDisplay(screen, tables=True, depth=request.depth, messages=errors)
        try:
            with display:
                result = run_families(options, display.listener(), pools, manifests)
        except KeyboardInterrupt:
            fail(interrupted_run(display.done, display.timed, options.json_path), 130)
    finally:
        for pool in pools:   # already closed by the run, unless it never began
            pool.kill()
    if request.timings:
        # here, not at the top: like RunDisplay, loaded once the pools are starting
        from rooflint.output.tables import render_timings
        render_timings(screen, result)
    if json_path == STDOUT:
        emit(json.dumps(result.to_json(), indent=1))
    elif json_path:
        status(result_written(json_path))
    for said in writing.write(tables, [result], options.json_path or "rooflint run"):
        status(said)
    if svg and (drawn := writing.draw([result], svg)):
        status(drawn)
    if any(v.status in (Status.FAIL, Status.ERROR) for f in result.families for v in f.variants):
        raise typer.Exit(1)


def interrupted_run(done: list[str], timed: list[str], json_path: Optional[Path]) -> str:
    """What an interrupted run leaves: the families already in the result file, if any
    (those timed but not yet profiled, with their timings and model bytes)."""
    if json_path and timed:
        partial = [name for name in timed if name not in done]
        kept = [", ".join(done)] if done else []
        kept += [f"{', '.join(partial)} timed only (counters not taken)"] if partial else []
        return f"interrupted; {json_path} keeps {'; '.join(kept)}"
    if json_path:
        return f"interrupted before a family finished; {json_path} not written"
    return "interrupted; nothing written"
