"""Versioned JSON documents on disk: written atomically, read with their schema checked.

Results, calibrations and (later) baselines are all such files; an interrupted write must
never leave a truncated file that a later command would trust.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from rooflint.errors import RooflintError


def write_atomic(data: dict[str, Any], path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=1)
        handle.write("\n")
    os.replace(temporary, path)


def read_versioned(path: Path, schema: str, what: str) -> dict[str, Any]:
    """The document at ``path``; RooflintError unless it parses and declares ``schema``."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise RooflintError(f"cannot read {what} {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != schema:
        raise RooflintError(f"{path} is not a rooflint {what} ({schema})")
    return data
