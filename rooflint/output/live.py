"""The live display while `run` and `gate` measure, and the events it hears.

A run reports each step through a Listener (started, a phase's progress, a family timed,
a family finished, a warning); RunDisplay is the listener that draws progress lines with
rich and, for `run`, prints the header and each family's table (tables.py) as soon as it
is complete. The Listener is declared here, beside the display that implements it, so that
engine/families.py calls down into the printers and they never call back up.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from rich.console import Console
from rich.progress import (BarColumn, Progress, ProgressColumn, TaskID, TextColumn,
                           TimeElapsedColumn)
from rich.text import Text

from rooflint.common.printable import printable
from rooflint.formats.results import FamilyResult, RunResult
from rooflint.output.family_table import render_family, render_run_header
from rooflint.output.depth import Depth

if TYPE_CHECKING:
    from rooflint.measure import runner


def _silent(*_: object) -> None:
    """A hook that wants to hear nothing."""


def _no_progress(family: str, phase: str, total: int) -> runner.Progress:
    return _silent


@dataclass
class Listener:
    """What `run` tells its caller while it works, so that output can stream.

    ``started``: the device is known and the result begun (nothing measured yet).
    ``progress(family, phase, total)``: the (event, variant) callback for one phase of a
    family ("timing" over all its variants, "counters" over those that passed); a phase
    that does not run (``--counters off``) never calls it back.
    ``timed``: a family's timing is in the result (and, with a json path, written), judged
    on model bytes until its counters come. ``finished``: a family is complete, counters
    included. Without counters the two come together. ``warn``: once, why counters are
    off if they are.
    """

    started: Callable[[RunResult], None] = _silent
    progress: Callable[[str, str, int], runner.Progress] = _no_progress
    timed: Callable[[RunResult, FamilyResult], None] = _silent
    finished: Callable[[RunResult, FamilyResult], None] = _silent
    warn: Callable[[str], None] = _silent


class QuietProgress(Progress):
    """A progress display that, disabled, does nothing as it stops: rich before 15 prints
    an empty line there on a console that is not interactive, even a disabled display."""

    def stop(self) -> None:
        if not self.disable:
            super().stop()


def progress_bar(console: Console, *columns: ProgressColumn) -> Progress:
    """A progress display on ``console`` that leaves nothing behind, drawn only where it
    can be redrawn in place (an interactive terminal): elsewhere it draws nothing, and
    leaves no lone newline on the piped standard output of a command that had nothing else
    to say."""
    return QuietProgress(*columns, console=console, transient=True,
                     disable=not console.is_interactive)


class RunDisplay:
    """What `run` and `gate` show while they measure.

    One progress line per family at work names it, the phase and the variant ("gemm_fp32:
    timing tiled 3/6"); it appears with the phase's first variant (so a phase that does
    not run, such as counters with ``--counters off``, never shows) and goes when the
    phase's last variant is done. With ``--devices`` each GPU's family has its own line.
    With ``tables`` (run), the header is printed once the device is known and each
    family's table as soon as that family is done: with counters, once every family is
    timed and profiled (Nsight Compute gives its counters when its session ends).
    Warnings and notes (counters unavailable, counters from the cache) go to ``messages``,
    standard error at the command line, whose standard output holds only the tables.
    """

    def __init__(self, console: Console, tables: bool, depth: Depth = Depth.DEFAULT,
                 messages: Console | None = None) -> None:
        self.console = console
        self.messages = messages or console
        self.tables = tables
        self.depth = depth                 # how much of each family is printed
        self.timed: list[str] = []         # families in the result (written, with --json)
        self.done: list[str] = []          # of those, the complete ones (counters taken)
        self.bar = progress_bar(console, TextColumn("{task.description}"), BarColumn(),
                                TimeElapsedColumn())
        self._lines: dict[str, tuple[str, TaskID]] = {}   # family -> (phase, its line)
        self._lock = threading.Lock()      # lanes report from their own threads

    def __enter__(self) -> "RunDisplay":
        self.bar.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.bar.stop()

    def listener(self) -> Listener:
        return Listener(started=self.started, progress=self.progress, timed=self.timed_family,
                        finished=self.finished, warn=self.warn)

    def started(self, result: RunResult) -> None:
        if self.tables:
            render_run_header(self.console, result)

    def progress(self, family: str, phase: str, total: int) -> runner.Progress:
        begun = measured = 0

        def update(event: str, variant: str) -> None:
            nonlocal begun, measured
            if event == "start":
                begun += 1
                self._show(family, phase, total,
                           printable(f"{family}: {phase} {variant} {begun}/{total}"))
            else:
                measured += 1
                self._advance(family, phase, last=measured >= total)
        return update

    def _show(self, family: str, phase: str, total: int, description: str) -> None:
        with self._lock:
            line = self._lines.get(family)
            if line and line[0] != phase:
                self.bar.remove_task(line[1])
                line = None
            if line is None:
                self._lines[family] = (phase, self.bar.add_task(description, total=total))
            else:
                self.bar.update(line[1], description=description)

    def _advance(self, family: str, phase: str, last: bool) -> None:
        with self._lock:
            line = self._lines.get(family)
            if line and line[0] == phase:
                self.bar.advance(line[1])
        if last:
            self._end(family)

    def _end(self, family: str) -> None:
        with self._lock:
            line = self._lines.pop(family, None)
            if line:
                self.bar.remove_task(line[1])

    def timed_family(self, result: RunResult, family: FamilyResult) -> None:
        self._end(family.name)
        if family.name not in self.timed:
            self.timed.append(family.name)

    def finished(self, result: RunResult, family: FamilyResult) -> None:
        self._end(family.name)
        self.done.append(family.name)
        if self.tables:
            render_family(self.console, family, self.depth)

    def warn(self, message: str) -> None:
        self.messages.print(Text(f"rooflint: {printable(message)}", "yellow"))
