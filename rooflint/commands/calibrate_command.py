"""`rooflint calibrate` as the command line runs it: the GPU's ceilings measured under a
progress bar, then kept where run and explain find them, and printed.

The measuring itself is rooflint.measure.runner's and the record rooflint.analysis
.calibration's: this is only what the `calibrate` command adds around them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from rooflint.analysis import calibration as calibrations
from rooflint.commands.guards import guard_outputs
from rooflint.commands.judge import device_spec
from rooflint.commands.streams import console
from rooflint.commands.named_gpu import check_gpu_option
from rooflint.formats.gpus import load_specs
from rooflint.measure.runner import calibrate as measure_ceilings
from rooflint.output.outputs import CALIBRATION, Output
from rooflint.output.roofs import render_calibration


def calibrate_command(gpu: Optional[str], output: Optional[Path]) -> None:
    """Calibrate as `rooflint calibrate` was asked: measure, save, print."""
    check_gpu_option(gpu)     # a typo is said now, not after the measuring
    if output:
        guard_outputs([Output("--output", output, CALIBRATION)])
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("calibrating", total=None)

        def update(step: str, total: int) -> None:
            if bar.tasks[task].total is None:
                bar.update(task, total=total)
            else:
                bar.advance(task)
            bar.update(task, description=f"calibrating: {step}")
        device, steps, skipped = measure_ceilings(update)
    spec = device_spec(device, gpu, load_specs())
    calibration = calibrations.from_steps(device, spec, steps, skipped)
    path = calibrations.default_path(spec.id, device.driver)
    calibrations.save(calibration, path)
    if output:
        calibrations.save(calibration, output)
    render_calibration(console, calibration, spec)
    console.print(f"saved to {path}" + (f" and {output}" if output else ""))
