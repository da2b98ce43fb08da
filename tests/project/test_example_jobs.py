"""The example jobs' own options (examples/apps/ddp_train.py, fsdp_train.py): a bad value is
refused in one line, exit 2, before any GPU or process group is asked for. Where PyTorch is
importable (the scripts import it first)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from edges import REPO

APPS = REPO / "examples" / "apps"


@pytest.mark.parametrize("script, option", [
    ("fsdp_train.py", ["--accumulate", "0"]), ("fsdp_train.py", ["--prefetch", "-1"]),
    ("fsdp_train.py", ["--dim", "100"]), ("fsdp_train.py", ["--prefetch", "two"]),
    ("ddp_train.py", ["--accumulate", "0"]), ("ddp_train.py", ["--bucket-mb", "0"])])
def test_a_bad_option_is_one_line_before_any_gpu(script, option):
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(APPS / script), *option], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert option[0] in errors[0] or "must be" in errors[0]
