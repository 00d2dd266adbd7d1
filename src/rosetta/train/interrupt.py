"""Training that survives a signal: Ctrl-C (SIGINT) or SIGTERM (a scheduler,
``kill``) ends the update under way, saves a checkpoint of exactly that
update (the state ``--resume`` continues from, with no validation), and stops
with the command that continues it. A second signal stops at once.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType

from rosetta.errors import speaks_for_the_run

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SignalStop:
    """While the ``with`` block runs, SIGINT and SIGTERM only set
    ``received`` (the signal's name) for the training loop to act on; a
    second one raises ``KeyboardInterrupt`` there and then.

    Outside the main thread, where Python cannot take signals, it does
    nothing."""

    def __init__(self) -> None:
        self.received: str | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> SignalStop:
        if threading.current_thread() is threading.main_thread():
            for number in SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = signal.Signals(number).name
        if not speaks_for_the_run():  # Ctrl-C reaches every process: one says it
            return
        print(
            f"\n{self.received}: finishing this update and saving a checkpoint "
            "(press Ctrl-C again to stop at once, saving nothing)",
            file=sys.stderr,
            flush=True,
        )

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        self._previous.clear()


def exit_status(name: str) -> int:
    """What a shell reports for a process ended by the signal ``name``."""
    return 128 + int(signal.Signals[name])
