"""Shared fixtures; GPU tests skip cleanly where there is no GPU."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest
from fake_ncu import stand_in

from rooflint.formats.gpus import load_specs

# pytest-xdist's workers start with COLUMNS=80 set, and a rich console made while COLUMNS is
# set keeps that width for good: the command line's consoles (made when its modules are
# first imported) would then ignore the width a test gives (env={"COLUMNS": "200"}).
os.environ.pop("COLUMNS", None)

# The tests are grouped by the package they test (core/, documents/, judge/, ...), and a
# test may take recorded data from another's module (from test_run import H100): each
# group's folder is on the path, as pytest puts a test's own folder there.
TESTS = Path(__file__).resolve().parent
sys.path[1:1] = [str(folder) for folder in sorted(TESTS.iterdir())
                 if folder.is_dir() and any(folder.glob("test_*.py"))]


@functools.cache
def _gpu_available() -> str | None:
    """None if a CUDA GPU is usable through CuPy, else the reason it is not."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:  # ImportError, no driver, no device
        return f"no GPU: {type(exc).__name__}: {exc}"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" in item.keywords:
            reason = _gpu_available()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """No test sees the user's calibrations; each starts with an empty cache."""
    monkeypatch.setenv("ROOFLINT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="session")
def specs():
    return load_specs()


@pytest.fixture
def fake_ncu(tmp_path):
    """The stand-in ``ncu`` on PATH (see fake_ncu.py): its environment and state folder."""
    return stand_in(tmp_path)
