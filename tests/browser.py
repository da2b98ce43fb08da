"""A real browser for the HTML report's tests: headless Chromium from the system's packages
(Debian's ``chromium``; .ci/run installs it), driven by its command-line switches alone, so
the tests need no WebDriver and no new Python package:

- ``--dump-dom`` prints the DOM once the page has loaded and its scripts have run;
- ``--screenshot=FILE`` with ``--window-size`` draws the page into a PNG;
- ``--enable-logging=stderr --v=0`` writes what the page said on its console to stderr,
  a line with ``CONSOLE`` in it each: an uncaught JavaScript error and a violation of the
  page's Content-Security-Policy among them.

Each visit has a new, empty profile directory and every switch that would reach the
network (updates, sync, QUIC, background fetches) off: the report must draw with none.
Where no Chromium is installed, :func:`chromium` skips the test and says why.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser")
SWITCHES = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--enable-logging=stderr", "--v=0")
# A console message in Chromium's log: "[pid:tid:time:INFO:CONSOLE:12] "message", source: ..."
# (older versions write CONSOLE(12)).
CONSOLE = re.compile(r":CONSOLE[:(]")
WINDOW = (1400, 1000)


@dataclass
class Visit:
    """What a visit left: the DOM it printed (with --dump-dom) and the console's lines."""

    dom: str
    console: list[str]


def chromium() -> str:
    """The Chromium to drive; skips the calling test where there is none."""
    found = next((path for path in map(shutil.which, NAMES) if path), None)
    if found is None:
        pytest.skip(f"no Chromium ({' or '.join(NAMES)}) on PATH: apt-get install chromium "
                    f"(as .ci/run does) to run the browser tests")
    return found


def visit(page: Path, profile: Path, *switches: str) -> Visit:
    """Open ``page`` in headless Chromium with a new profile under ``profile``."""
    profile.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([chromium(), *SWITCHES, f"--user-data-dir={profile}", *switches,
                           page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return Visit(done.stdout, [line for line in done.stderr.splitlines() if CONSOLE.search(line)])


def dom_of(page: Path, profile: Path) -> Visit:
    """The page's DOM after its scripts ran, and what it logged."""
    return visit(page, profile, "--dump-dom")


def screenshot(page: Path, profile: Path, png: Path) -> Visit:
    """The first WINDOW of the page drawn into ``png``."""
    return visit(page, profile, f"--screenshot={png}", "--hide-scrollbars",
                 f"--window-size={WINDOW[0]},{WINDOW[1]}")
