"""A command stopped by SIGTERM (a scheduler's, ``kill``'s) says in one line
what happened and what it kept, and ends with the status a shell reports for
the signal (143), rather than ending without a word.

Training handles the signal itself (``rosetta.train.interrupt``: it saves
the update under way). Another long command (an import, a distillation)
stops where it is: what it was doing unwinds as after any error (its
temporary folder removed; its finished lines kept, as they are whenever it
is killed), and the command line prints ``Stopped``'s message.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from rosetta.errors import Stopped

SIGTERM_STATUS = 128 + int(signal.SIGTERM)  # as a shell reports it


class Terminated(BaseException):
    """SIGTERM, raised in the main thread where it is: a ``BaseException``,
    so that no ``except Exception`` on the way takes it for its own error."""


@contextmanager
def said_on_sigterm(kept: Callable[[], str]) -> Iterator[None]:
    """While the block runs, SIGTERM stops it with ``Stopped`` ("stopped by
    SIGTERM; " and what ``kept()`` says, when it is stopped, was kept and
    what to do) and status 143. A second SIGTERM, while the first unwinds,
    ends the process at once. Outside the main thread, where Python takes
    no signals, it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(number: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except Terminated:
        said = f"stopped by SIGTERM; {kept()}"
        raise Stopped(said, SIGTERM_STATUS) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
