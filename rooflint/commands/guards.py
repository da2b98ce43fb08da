"""The guard every command runs before its work: nothing the user named is overwritten
unless it is the output asked for, of its kind, and each output can be written.

Apart from the commands' modules because run, profile, gate, calibrate and plot all run
it, first, so minutes of measuring never end in a file that cannot be written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from rooflint.formats.jsonfile import require_writable
from rooflint.output import outputs


def check_outputs(json_path: Optional[Path], picture: Optional[Path] = None,
                  logs: Optional[Path] = None, model: Optional[Path] = None,
                  tables: Sequence[outputs.Output] = ()) -> None:
    """`run`'s and `profile`'s outputs, checked before minutes of measuring, not after:
    --json replaces only a rooflint result, --svg only a picture rooflint drew, profile's
    --logs only its own earlier logs (pass 1's trace, Nsight Compute's logs), the --csv
    and --markdown ``tables`` only tables of their own format, none of them is --model,
    and all can be written (see rooflint.outputs)."""
    # here, not at the top: plot's guard needs no part of the measure layer
    from rooflint.measure.program import LOGS, TRACE_LOG
    asked = ([outputs.Output("--json", json_path, outputs.RESULT)] if json_path else []) + \
        ([outputs.Output("--svg", picture, outputs.PICTURE)] if picture else []) + \
        [outputs.Output("--logs", logs / name, outputs.PASS_ONE_TRACE if name == TRACE_LOG
                        else outputs.NCU_LOG) for name in LOGS if logs] + list(tables)
    guard_outputs(asked, [outputs.Named("--model", model)] if model else [])


def guard_outputs(asked: Sequence[outputs.Output], inputs: Sequence[outputs.Named] = (),
                  writable: bool = True) -> None:
    """The guard every command runs first: nothing the user named is overwritten unless it
    is the output asked for, of its kind (rooflint.outputs); with ``writable``, each
    replaced output can be written, too (jsonfile.require_writable)."""
    outputs.refuse_overwrites(asked, inputs)
    for output in asked if writable else ():
        if not output.appended:
            require_writable(output.path)
