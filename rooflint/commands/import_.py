"""`rooflint import` as the command line runs it: the files read and judged as a profile's
passes (engine/imported.py), the result printed as `profile` prints it and written with
--json. The module is import_.py because ``import`` is Python's own word."""

from __future__ import annotations

from rooflint.commands import writing
from rooflint.commands.requests import ImportRequest
from rooflint.commands.stdio import console, errors
from rooflint.engine.imported import import_result
from rooflint.output.outputs import RESULT, STDOUT, Named, Output, guard_outputs
from rooflint.output.profile_view import render_result


def import_command(request: ImportRequest) -> None:
    """Judge the files; print the result (on standard error when --json is ``-``) and
    write it. --json never replaces one of the files imported, nor anything but a result."""
    json_path = request.json_path
    if json_path and json_path != STDOUT:
        guard_outputs([Output("--json", json_path, RESULT)],
                      [Named("FILE", path) for path in request.files], force=request.force)
    result = import_result(list(request.files), request.gpu)
    render_result(errors if json_path == STDOUT else console, result, result.fixes,
                  request.depth)
    if json_path:
        writing.write_result_document(result, json_path)
