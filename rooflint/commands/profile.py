"""`rooflint profile` as the command line runs it: its options checked, the program
profiled with SIGTERM taken as Ctrl-C, then the result printed, written and drawn, and
what a stopped pass 2 leaves said.

Apart from engine/program.py, which profiles a program for any caller: this is only what the
`profile` command adds around it.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Optional

from rooflint.commands.requests import ProfileRequest
from rooflint.commands import writing
from rooflint.engine.program import ProfileOptions, profile_program
from rooflint.commands.stdio import console, errors, fail, progress, status
from rooflint.formats.results import RunResult
from rooflint.output.exports import Export
from rooflint.common.errors import RooflintError
from rooflint.formats.ranks import rank_path
from rooflint.judge.ranks import job_of
from rooflint.output.outputs import (RESULT, STDOUT, Named, Output, check_outputs,
                                     export_outputs, guard_outputs)
from rooflint.output.rank_view import render_job
from rooflint.output.profile_words import pass2_stopped_words
from rooflint.output.profile_view import render_result


def profile_command(request: ProfileRequest) -> None:
    """Profile the program as `rooflint profile` was asked; exit 2 (130 if interrupted)
    when pass 2 stopped, after what pass 1 measured is printed and written."""
    json_path, svg, logs, model = request.json_path, request.svg, request.logs, request.model
    _check_filters(request.nvtx, request.kernel)
    if logs:
        _check_logs_folder(logs)
    tables = writing.asked(request.exports)
    piped = writing.to_stdout(("--json", json_path), ("--svg", svg),
                              *((t.option, t.path) for t in tables))
    check_outputs(None if json_path == STDOUT else json_path,
                  picture=None if svg == STDOUT else svg,
                  logs=logs if logs and logs.is_dir() else None,   # else made once ncu is found
                  model=model, tables=export_outputs(tables), force=request.force)
    screen = errors if piped else console
    terminate = signal.signal(signal.SIGTERM, _interrupt)
    try:
        profiled = profile_program(
            ProfileOptions(command=list(request.command), coverage=request.coverage,
                           top=request.top, nvtx=request.nvtx, kernel=request.kernel,
                           skip=request.skip, stop_after=request.stop_after, gpu=request.gpu,
                           logs=str(logs) if logs else None,
                           model=str(model) if model else None,
                           counter_cache=request.counter_cache), progress)
    finally:
        signal.signal(signal.SIGTERM, terminate)
    result, stopped = profiled.result, profiled.stopped
    try:
        render_result(screen, result, result.fixes, request.depth)
        if profiled.ranks:
            render_job(screen, job_of(profiled.ranks, [r.rank.label for r in profiled.ranks]),
                       request.depth)
    finally:   # minutes of profiling: kept when nobody reads the table (`| head`)
        _write_outputs(result, json_path, tables, svg, stopped is None, screen)
        if json_path and json_path != STDOUT:
            _write_ranks(profiled.ranks, json_path,
                         [Named(o.option, o.path) for o in export_outputs(tables)]
                         + [Named(option, path) for option, path
                            in (("--svg", svg), ("--model", model)) if path and path != STDOUT])
    if stopped:       # pass 2 failed or was interrupted: pass 1's times are all there is
        fail(pass2_stopped_words(stopped.why, json_path, json_path == STDOUT, svg),
             130 if stopped.interrupted else 2)


def _write_outputs(result: RunResult, json_path: Optional[Path], tables: list[Export],
                   svg: Optional[Path], drawn: bool, screen) -> None:
    """The result document, the tables and the roofline picture (``drawn``: there are
    counters to draw), each said as it is written."""
    if json_path:
        writing.write_result_document(result, json_path)
    named = json_path if json_path and json_path != STDOUT else "rooflint profile"
    for said in writing.write(tables, [result], named):
        status(said)
    if svg and drawn and (said := writing.draw([result], svg)):
        status(said)


def _write_ranks(ranks: list[RunResult], json_path: Path, others: list[Named]) -> None:
    """Each rank's own document beside the job's (``r.json``: ``r.rank0.json``, ...), for
    `show` to merge with the documents of ranks profiled elsewhere. Their paths are known
    only once pass 1 has found the ranks, so one that would replace a file that is not a
    rooflint result, or one of ``others`` (the profile's other files, read or written), is
    not written, and said: the job's document and the rest are kept."""
    for rank in ranks:
        path = rank_path(json_path, rank.rank)
        try:
            guard_outputs([Output(f"{rank.rank.label}'s document", path, RESULT)], others)
        except RooflintError as refused:
            status(f"not written: {refused}")
            continue
        writing.write_result_document(rank, path)


def _check_logs_folder(logs: Path) -> None:
    """--logs' folder is one, or can be made, said before ncu is looked for but made only
    once every check has passed (profile.logs_folder): a refused profile leaves nothing
    behind. Where it does not exist, its nearest existing parent must be a directory
    rooflint may write in."""
    if logs.exists():
        if not logs.is_dir():
            fail(f"--logs {logs}: not a directory")
        return
    parent = next(p for p in logs.absolute().parents if p.exists())
    if not parent.is_dir():
        fail(f"--logs {logs}: cannot make the directory ({parent} is not a directory)")
    if not os.access(parent, os.W_OK | os.X_OK):
        fail(f"--logs {logs}: cannot make the directory ({parent} may not be written in)")


def _check_filters(nvtx: Optional[str], kernel: Optional[str]) -> None:
    """--nvtx and --kernel, before ncu is looked for: an empty one would quietly profile
    every launch of the program, which is what leaving it out says."""
    if nvtx == "":
        fail("--nvtx '': name the NVTX range whose launches to profile (the name the program "
             "pushes), or leave --nvtx out")
    if kernel == "":
        fail("--kernel '': an empty pattern matches every kernel; give a regular expression "
             "on kernel names, or leave --kernel out")
    if kernel:
        try:
            re.compile(kernel)
        except re.error as exc:
            fail(f"--kernel {kernel!r} is not a regular expression: {exc}")


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM while a program is profiled (``timeout``, a batch scheduler's limit) is
    handled as Ctrl-C is: pass 1's times are kept, and pass 2's early-started program, in
    a session of its own that the signal does not reach, is stopped, not left waiting."""
    raise KeyboardInterrupt
