"""`rooflint --show-completion [SHELL]` and `--install-completion [SHELL]`.

typer declares both as flags that detect the shell rooflint runs under, so a shell named
after them was ignored (`--show-completion zsh` printed bash's script when bash ran it),
and an install that could not write its files (a read-only HOME) ended in typer's
traceback. The app's group reads the shell named after either option itself, refuses one
typer has no script for, and says a failed install in one line; the scripts, the shell's
detection and the install stay typer's, through its public module typer.completion.
"""

from __future__ import annotations

from pathlib import Path

import typer.completion
from typer.core import TyperGroup

from rooflint.commands.stdio import fail

SHOW, INSTALL = "--show-completion", "--install-completion"


class CompletingGroup(TyperGroup):
    """rooflint's top-level parser: typer's own, but the completion options answered
    first, with the shell they name (a shell's own completion call, which parses
    resiliently, is left to typer)."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            answer_completion(ctx, args)
        return super().parse_args(ctx, args)


def answer_completion(ctx, args: list[str]) -> None:
    """Show or install the completion script and exit, if ``args`` ask for it before any
    command; return otherwise. Without a shell named, typer detects it, as it always did."""
    asked = completion_asked(args)
    if asked is None:
        return
    option, shell = asked
    known = [str(each.value) for each in typer.completion.Shells]
    shells = ", ".join(known)
    if shell is not None and shell not in known:
        fail(f"{option} {shell}: unknown shell; rooflint completes {shells}")
    answer = {SHOW: typer.completion.show_callback, INSTALL: typer.completion.install_callback}
    try:
        answer[option](ctx, None, shell or True)   # True: the option alone, the shell detected
    except OSError as exc:
        if exc.filename is None:                   # shellingham's: no shell in the process tree
            fail(f"{option}: cannot tell which shell runs rooflint; name it: {option} SHELL, "
                 f"one of {shells}")
        fail(f"{option}: cannot write {exc.filename} ({exc.strerror}); is HOME "
             f"({Path.home()}) writable?")


def completion_asked(args: list[str]) -> tuple[str, str | None] | None:
    """(the completion option, the shell named after it or None) among the words before
    the first command, if one is there: ``--show-completion zsh``, ``--show-completion=zsh``
    or ``--install-completion`` alone."""
    for index, word in enumerate(args):
        if not word.startswith("-"):
            return None                     # a command: its own options follow
        option, equals, shell = word.partition("=")
        if option in (SHOW, INSTALL):
            following = args[index + 1] if index + 1 < len(args) else "-"
            return option, shell if equals else (None if following.startswith("-") else following)
    return None
