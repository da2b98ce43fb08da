"""`rooflint explain` as the command line runs it: the typed numbers parsed and checked,
the point judged against the cached calibration or the datasheet, then printed as text
or JSON.

Apart from judge/explain.py, which judges a point for any caller: this is only what the
`explain` command adds around it. The notebook's ``rooflint.explain`` reads its numbers as
the command does (``explained``), and shows the verdict in its own way.
"""

from __future__ import annotations

from rooflint.formats import calibration as calibrations
from rooflint.judge.explain import explain as explain_point
from rooflint.commands.requests import ExplainRequest
from rooflint.commands.writing import write_json
from rooflint.commands.stdio import console, status
from rooflint.common.errors import RooflintError
from rooflint.formats.explanation import Explanation
from rooflint.output.outputs import EXPLANATION, STDOUT, guard_json
from rooflint.common.units import parse_bytes, parse_count, parse_time
from rooflint.engine.named_gpu import option_spec
from rooflint.common.vocabularies import Precision
from rooflint.output.roofs import render_explanation

MOVES_BYTES = "a kernel reads its inputs and writes its outputs"


def explain_command(request: ExplainRequest) -> None:
    """Explain the point as `rooflint explain` was asked, and print the verdict (and
    write it as JSON to its --json; ``-``: print that instead)."""
    json_path = request.json_path
    guard_json(json_path, EXPLANATION, request.force)
    explanation = explained(request)
    if json_path != STDOUT:
        render_explanation(console, explanation)
    if json_path and (said := write_json(explanation.to_json(), json_path, "explanation")):
        status(said)


def explained(request: ExplainRequest) -> Explanation:
    """The point ``request`` types, placed and judged against the cached calibration or the
    datasheet; RooflintError, naming the option, for numbers it cannot place. The notebook
    API's rooflint.explain asks the same."""
    precision, algorithmic_bytes = request.precision, request.algorithmic_bytes
    if precision not in tuple(Precision):
        raise RooflintError(f"unknown precision {precision!r}; use one of "
                            f"{', '.join(Precision)}")
    spec = option_spec(request.gpu)
    work, moved = parse_count(request.flops), parse_bytes(request.dram_bytes)
    compulsory = parse_bytes(algorithmic_bytes) if algorithmic_bytes else None
    check_placeable(work, moved)
    if compulsory == 0:
        raise RooflintError(f"--algorithmic-bytes {algorithmic_bytes}: {MOVES_BYTES}, so its "
                            f"compulsory bytes are more than 0; leave the option out to take "
                            f"--bytes")
    calibration = None if request.datasheet else calibrations.find(spec.id)
    return explain_point(spec, parse_time(request.time), work, moved, compulsory, precision,
                         calibration)


def check_placeable(flops: float, dram_bytes: float) -> None:
    """Refuse what the roofline cannot place. No FLOPs and no bytes is no work to place;
    FLOPs over 0 bytes is an intensity without end, off any chart (and Infinity, which
    JSON cannot hold) where every kernel moves some bytes. A copy, 0 FLOPs over some bytes,
    is placed: intensity 0, under the DRAM roof, as the roofline places a stream kernel."""
    if flops == 0 and dram_bytes == 0:
        raise RooflintError("--flops 0 and --bytes 0: nothing to place on the roofline, which "
                            "places a kernel's FLOPs against the bytes it moves")
    if dram_bytes == 0:
        raise RooflintError(f"--bytes 0: {MOVES_BYTES}, so it moves more than 0 bytes; FLOPs "
                            f"over 0 bytes is an intensity the roofline cannot place")
