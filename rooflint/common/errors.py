"""The one exception type the CLI turns into a one-line message and exit code 2."""


class RooflintError(Exception):
    """A user-facing problem: bad input, missing GPU, unreadable file.

    The message is printed as is, on one line, so it must say what is wrong and,
    where possible, what to do about it.
    """
