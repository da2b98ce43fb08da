"""A variant's status: how its measurement went, in one word.

The worker answers it (formats.jobs.Measurement), the result document and the gate's
baseline keep it, and compare, gate and the printers read it. It is defined here, below
them all: results.py imports the worker's protocol, which could not import it from there.
"""

from __future__ import annotations

from typing import Annotated

from rooflint.common.sense import Vocabulary, one_of


class Status(Vocabulary):
    """How a variant's measurement went."""

    OK = "ok"                   # ran, and every output check passed
    FAIL = "fail"               # ran, but an output was wrong
    ERROR = "error"             # did not run through (a compile error, a CUDA fault, a timeout)
    SKIPPED = "skipped"         # not measured here (a Python module this machine lacks)


StatusWord = Annotated[str, one_of(Status)]     # a status in a document (Vocabulary)
