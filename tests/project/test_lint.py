"""The code is clean under the linter pyproject.toml configures (ruff: pyflakes,
pycodestyle, bugbear at 100 columns; issue 46), so a finding in a change is the change's."""

import subprocess
import sys

import pytest

from rooflint.common.paths import REPO_ROOT

pytest.importorskip("ruff", reason="ruff comes with the test extra: pip install -e '.[test]'")


def test_ruff_finds_nothing():
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", str(REPO_ROOT)],
                             cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
