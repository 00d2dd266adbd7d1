"""The one exception type users see: a message, never a traceback."""

import os


class RosettaError(Exception):
    """A problem with the user's input (file, config, model) that Rosetta explains.

    The command line prints the message and exits with status 2; library callers
    can catch it like any exception.
    """


def speaks_for_the_run() -> bool:
    """Whether this process says what happened: the only one, or the first
    of the processes ``torchrun`` started (the others would repeat it)."""
    return os.environ.get("RANK", "0") == "0"


# what str.splitlines() breaks a line at (by code point, as str.translate
# reads it), each written as its escape
LINE_BREAKS = {
    ord(char): char.encode("unicode_escape").decode("ascii")
    for char in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
}


def one_line(message: object) -> str:
    """``message`` on one line: a line break inside it (a file name may hold
    one) written as its escape, so an error is always one line."""
    return str(message).translate(LINE_BREAKS)


def in_words(error: BaseException) -> str:
    """A library's error message as one line of words (its lines and runs
    of spaces joined by one space), to quote after what Rosetta was doing."""
    return " ".join(str(error).split())


def where(path: object, line: int | None = None) -> str:
    """Format a location as ``path`` or ``path:line`` for error messages."""
    return f"{path}:{line}" if line is not None else str(path)


class Stopped(Exception):
    """A command stopped by a signal after saving its work; the command line
    prints the message (how to continue) and exits with ``status``."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
