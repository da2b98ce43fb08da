"""`rooflint calibrate` as the command line runs it: the GPU's ceilings measured under a
progress bar, then kept where run and explain find them, printed, and written as JSON when
asked (``--json FILE``, or ``-`` for standard output, the table then on standard error).

The measuring itself is measure/runner.py's and the record formats/calibration.py's:
this is only what the `calibrate` command adds around them.
"""

from __future__ import annotations

from rich.progress import BarColumn, TextColumn, TimeElapsedColumn

from rooflint.formats import calibration as calibrations
from rooflint.commands.requests import CalibrateRequest
from rooflint.commands.writing import write_json
from rooflint.judge.measurement import device_spec
from rooflint.engine.named_gpu import check_gpu_option
from rooflint.commands.stdio import console, errors, status
from rooflint.formats.gpus import load_specs
from rooflint.measure.runner import calibrate as measure_ceilings
from rooflint.output.live import progress_bar
from rooflint.output.outputs import CALIBRATION, STDOUT, guard_json
from rooflint.output.roofs import render_calibration
from rooflint.output.written import calibration_saved


def calibrate_command(request: CalibrateRequest) -> None:
    """Calibrate as `rooflint calibrate` was asked: measure, save, print."""
    gpu, json_path = request.gpu, request.json_path
    check_gpu_option(gpu)     # a typo is said now, not after the measuring
    guard_json(json_path, CALIBRATION, request.force)
    screen = errors if json_path == STDOUT else console   # standard output holds the JSON alone
    with progress_bar(screen, TextColumn("{task.description}"), BarColumn(),
                      TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn()) as bar:
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
    copy = json_path if json_path != STDOUT else None
    if copy:
        calibrations.save(calibration, copy)
    render_calibration(screen, calibration, spec)
    status(calibration_saved(path, copy))
    if json_path == STDOUT:
        write_json(calibration.to_json(), STDOUT, "calibration")
