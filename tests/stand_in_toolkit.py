"""A stand-in CUDA toolkit for the tests of what rooflint builds against CUPTI
(test_kernel_trace.py, test_rotation.py): CUPTI's header and library where a toolkit keeps
them, and an nvcc that is a shell script."""

from __future__ import annotations

import stat
from pathlib import Path


def stand_in_toolkit(root: Path, include: str, lib: str) -> Path:
    """A toolkit at ``root`` with cupti.h in ``include`` and libcupti in ``lib``."""
    (root / include).mkdir(parents=True)
    (root / lib).mkdir(parents=True)
    (root / include / "cupti.h").write_text("")
    (root / lib / "libcupti.so.13").write_text("")
    return root


def stand_in_nvcc(tmp_path: Path, script: str) -> Path:
    """``tmp_path``/cuda, a toolkit whose nvcc runs ``script`` (sh, its arguments in $@)."""
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\n" + script)
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IEXEC)
    stand_in_toolkit(tmp_path / "cuda", "include", "lib64")
    return nvcc
