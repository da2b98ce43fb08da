"""NCCL's own log of every collective the profiled program calls, the sizes its kernels'
records lack (formats/nccl_log.py reads it, judge/collectives.py matches it): pass 1 asks
each process's NCCL to write one into a folder of rooflint's, one file a process, unless
the user set NCCL's logging already, which is left as it is. It costs one line a call,
written as the call is made."""

from __future__ import annotations

import os
from pathlib import Path

# NCCL expands %h to the host's name and %p to the process's id (its src/debug.cc).
LOG_FILE = "nccl.%h.%p.log"
USERS_OWN = ("NCCL_DEBUG", "NCCL_DEBUG_FILE")


def users_own() -> str | None:
    """The NCCL logging variable the user set (then left alone), None where none."""
    return next((name for name in USERS_OWN if os.environ.get(name)), None)


def log_environment(folder: Path) -> dict[str, str]:
    """What to add to pass 1's environment for NCCL to log each call into ``folder`` (made
    here: NCCL writes to standard output where it cannot open its file); nothing where
    the user set NCCL's logging."""
    if users_own():
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "COLL",
            "NCCL_DEBUG_FILE": str(folder / LOG_FILE)}


def logs_in(folder: Path, kept_in: Path | None = None) -> list[str] | None:
    """The logs NCCL wrote into ``folder``, one a process (none where the program ran no
    NCCL), each copied into ``kept_in`` where given (the profile's --logs); None where the
    user's own logging was left alone and nothing was asked."""
    if users_own():
        return None
    texts = []
    for path in sorted(folder.glob("nccl.*.log")):
        texts.append(path.read_text(errors="replace"))
        if kept_in:
            (kept_in / path.name).write_text(texts[-1])
    return texts
