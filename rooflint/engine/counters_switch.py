"""Whether a command takes counters: asked (``--counters auto|ncu|off``), and able to.

``auto`` goes on with the manifests' model bytes when ncu cannot give counters (missing,
not permitted, failing), saying so once; ``ncu`` makes that the command's error. A run
decides by its CountersSwitch, never by what it wrote in its result's settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from rooflint.common.vocabularies import CountersMode
from rooflint.common.errors import RooflintError
from rooflint.formats.settings import Settings
from rooflint.measure import ncu
from rooflint.measure.ncu import CountersUnavailable



def counters_unavailable(mode: str) -> str | None:
    """Why counters cannot be taken at all (no ncu), found before anything starts."""
    if mode == CountersMode.OFF:
        return None
    try:
        ncu.ncu_path()
    except CountersUnavailable as exc:
        return without_counters(exc, mode)
    return None


def without_counters(exc: CountersUnavailable, mode: str) -> str:
    """The reason a command goes on with model bytes (``auto``); with ``--counters ncu``
    the command's error instead."""
    if mode == CountersMode.NCU:
        raise RooflintError(f"--counters ncu: {exc}") from None
    return str(exc)


@dataclass
class CountersSwitch:
    """Whether a run still takes counters: on unless asked off, until ncu cannot give them;
    then off for the rest of the run, said once and recorded in the result's settings."""

    on: bool
    settings: Settings
    warn: Callable[[str], None]

    def off(self, reason: str) -> None:
        self.on = False
        self.settings.counters = CountersMode.OFF
        self.settings.counters_unavailable = reason
        self.warn(f"counters unavailable: {reason}; continuing with the manifests' model bytes")
