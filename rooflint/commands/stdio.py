"""The command line's doors to the terminal, shared by every command: standard output
guarded, an error as one line on stderr, and the exit codes that go with them.

Every text rooflint writes on standard output or error passes one of these doors, and each
makes it :func:`printable_lines` (issue 45): the consoles every table and message is
printed with, emit for plain output (JSON, CSV, Markdown, a page), say for errors. So a
name's or a path's escape sequence never drives the terminal, whichever call site shows
it; and the streams themselves write what their encoding cannot spell as an escape, so no
text fails to print. Files keep the user's text as written.

Apart from cli.py so that each command's module (commands/run.py, commands/gate.py, ...) prints
and fails the same way without importing the typer app that calls it.
Exit codes: 0 ok, 1 a correctness failure, 2 usage or environment error (bad input,
no GPU), 130 interrupted, 141 a reader that stopped reading.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import sys

import typer
from collections.abc import Iterable

from rich.console import Console, ConsoleDimensions, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment

from rooflint.common.errors import RooflintError
from rooflint.common.printable import printable, printable_lines


# The width text is laid out in when it goes to a pipe or a file and COLUMNS does not say
# one: wide enough that no line is wrapped (`rooflint show r.json | grep naive` had lost
# every line's continuation at rich's 80).
UNWRAPPED_WIDTH = 10_000


class PrintableConsole(Console):
    """A rich console whose every piece of text is made printable_lines as it is rendered,
    before rich adds its own styles and cursor moves (which it marks as control segments,
    left alone): a name in a table or a path in a message cannot reach the terminal raw
    even where its call site forgot to escape it. Into a pipe or a file, lines are not
    wrapped (unless COLUMNS sets a width) and carry no trailing spaces (a table pads its
    last column), so that grep, diff and cut see each line whole and as written."""

    def render(self, renderable: RenderableType,
               options: ConsoleOptions | None = None) -> RenderResult:
        for segment in super().render(renderable, options):
            yield segment if segment.control else Segment(printable_lines(segment.text),
                                                          segment.style)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        text = super()._render_buffer(buffer)
        return text if self.is_terminal else TRAILING_SPACES.sub("\n", text)

    @property
    def size(self) -> ConsoleDimensions:
        found = super().size
        if self.is_terminal or self._width is not None or "COLUMNS" in os.environ:
            return found
        return ConsoleDimensions(UNWRAPPED_WIDTH, found.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)


TRAILING_SPACES = re.compile(r" +\n")


# NO_COLOR (no-color.org): no colour, and no bold either (rich alone drops only the
# colour): no escape sequence at all. Never rich's highlighter, which coloured the parts of
# plain text it took for numbers and paths (a driver version in two colours).
_PLAIN = bool(os.environ.get("NO_COLOR"))
console = PrintableConsole(color_system=None if _PLAIN else "auto", highlight=False)
errors = PrintableConsole(stderr=True, color_system=None if _PLAIN else "auto",
                          highlight=False)
_messages = PrintableConsole(stderr=True, color_system=None)   # errors and progress: lines
_quiet = False


def set_quiet(quiet: bool) -> None:
    """``--quiet``: no tables, live display, progress or warnings; errors (one line) and
    the outputs asked for on standard output (``--json -``, ``--csv -``) still appear. Set
    by every invocation, on or off, so a command run in the same process as an earlier one
    (a test, a notebook) starts as a fresh one would."""
    global _quiet
    _quiet = console.quiet = errors.quiet = quiet

SIGPIPE_STATUS = 141    # 128 + SIGPIPE, as a shell reports `yes | head`


class GuardedOutput:
    """Standard output whose failure is a RooflintError, so `rooflint specs > /dev/full` is
    one line and exit 2 like any other unwritable output. A reader that stopped reading
    (`rooflint show r.json | head`) is not an error: rooflint stops quietly with the
    status a shell gives a program ended by SIGPIPE. Once it has failed, the descriptor
    is pointed at /dev/null: the interpreter's last flush of what is still buffered then
    has nowhere to fail."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self._encodable_write, text)

    def _encodable_write(self, text: str) -> int:
        """Write ``text``; what the stream's encoding cannot spell (a surrogate from a file
        name where output is strict UTF-8, "→" on a Latin-1 terminal) written as a
        backslash escape, not an error. Nothing was written when the encoder failed: the
        whole text is encoded before any of it is buffered."""
        try:
            return self._stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(self._stream, "encoding", None) or "utf-8"
            return self._stream.write(
                text.encode(encoding, "backslashreplace").decode(encoding))

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call, *args):
        try:
            return call(*args)
        except OSError as exc:
            self._to_nowhere()
            if exc.errno == errno.EPIPE:
                raise typer.Exit(SIGPIPE_STATUS) from None
            raise RooflintError(f"cannot write to standard output: "
                                f"{exc.strerror or exc}") from None

    def _to_nowhere(self) -> None:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), self._stream.fileno())

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class GuardedErrors(GuardedOutput):
    """Standard error, whose reader may go (`rooflint profile ... 2>&1 | head`): from then
    on its lines (progress, warnings, the last error) are dropped and the work goes on, to
    the files it was asked to write: a profile's minutes are not thrown away for lines
    nobody reads."""

    def _guarded(self, call, *args):
        try:
            return call(*args)
        except OSError:
            self._to_nowhere()
            return len(args[0]) if args else None


def emit(text: str) -> None:
    """Plain output (JSON, the version, a table or page for ``-``) on standard output, made
    printable_lines (a name's escape sequence in a CSV is shown, not run), flushed now so a
    full disk or a closed pipe is reported by GuardedOutput, not lost at exit."""
    out = sys.stdout if isinstance(sys.stdout, GuardedOutput) else GuardedOutput(sys.stdout)
    out.write(printable_lines(text) + "\n")
    out.flush()


def say(message: str) -> None:
    """One line on stderr, as every rooflint error is printed: the one door for errors, so
    the names from files that messages quote are made printable here (an escape sequence
    in a variant's name would otherwise drive the terminal, a newline split the line)."""
    _messages.print(f"rooflint: {printable(message)}", markup=False, highlight=False,
                    soft_wrap=True)


def progress(message: str) -> None:
    """A line of progress (a long pass's seconds so far), as say prints it; none with
    --quiet."""
    if not _quiet:
        say(message)


def status(line: str) -> None:
    """A line saying what was done (a file written, a picture drawn), on standard error
    as every status line is: standard output holds only what a command was asked to
    print there (its tables, or the document ``-`` names); none under --quiet."""
    errors.print(line, markup=False, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> None:
    say(message)
    raise typer.Exit(code)


def one_line_errors(command):
    """User errors become one line on stderr and exit code 2, never a traceback; Ctrl-C
    becomes one line and exit code 130."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except KeyboardInterrupt:
            fail("interrupted; nothing written", 130)
        except RooflintError as exc:
            fail(str(exc))
        except Exception as exc:
            if os.environ.get("ROOFLINT_DEBUG"):
                raise
            fail(f"internal error: {type(exc).__name__}: {exc} "
                 "(set ROOFLINT_DEBUG=1 for the traceback)")
    return wrapper
