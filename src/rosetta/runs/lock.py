"""One writer per run: ``train`` and ``prepare`` hold a lock in the run folder
while they write it, so two commands never train into one folder and leave
one's checkpoints under the other's index.

The lock is ``flock`` on ``.rosetta-run.lock``, which holds the holder's PID
for the message. The kernel releases it when the holder exits, however it
ends (even SIGKILL), so a dead holder's lock is simply taken over. The file
stays: it also marks the folder as a run (``rosetta.runtime.outputs``).

The lock is one of Rosetta's own files read back (``rosetta.runtime.own_files``):
a link, a FIFO, a device, a file of several names, or a file that holds
anything but a PID is refused, never truncated or written through.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.runtime.outputs import RUN_LOCK
from rosetta.runtime.own_files import not_own, open_own

PID_BYTES = 24  # what the lock holds: a PID and a newline (empty once made)
PID_TEXT = re.compile(rb"[0-9]*\s*")


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir``'s lock for the ``with`` block; a run another living
    process holds is refused with its PID."""
    path = Path(run_dir) / RUN_LOCK
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_own(path, os.O_RDWR | os.O_CREAT, writing=True)
    except OSError as error:
        raise RosettaError(f"{path}: cannot lock the run ({error.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise RosettaError(
            f"{run_dir} is being written by another process (PID {holder}); one "
            "command at a time trains or prepares a run: wait for it, or stop it"
        ) from None
    try:
        try:
            held = os.pread(fd, PID_BYTES + 1, 0)
            if len(held) > PID_BYTES or not PID_TEXT.fullmatch(held):
                raise not_own(path, "a file that holds more than a PID")
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        except OSError as error:
            raise RosettaError(
                f"{path}: cannot lock the run ({error.strerror})"
            ) from None
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
