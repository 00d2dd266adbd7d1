"""Rosetta's own files, read back as untrusted input: the one rule for every
lock, journal, record and folder that Rosetta made and later opens again.

What Rosetta wrote may since have been edited, replaced or linked elsewhere
(by hand, by a tool, by a copy that kept links). So such a file is opened
only as what Rosetta made: the name itself, never a symbolic link it holds
(``O_NOFOLLOW``); a plain file, never a FIFO (which would block the reader)
or a device; small, as Rosetta's records are; and, before it is written in
place, a file of one name only (a hard link would carry the write to the
user's file it shares its content with). A folder Rosetta removes is a real
folder inside the one it belongs to, never a link out of it.

Every refusal is one line naming the path: the command stops before it
trusts, writes or deletes anything through it.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from rosetta.errors import RosettaError

RECORD_LIMIT = 64 * 2**20  # bytes: a record, a journal, an index, a lock
_SAFE = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def not_own(path: Path, why: str) -> RosettaError:
    return RosettaError(
        f"{path}: {why}, not a file Rosetta wrote; nothing was read or written "
        "through it (move it away if it is yours)"
    )


def open_own(
    path: Path,
    flags: int,
    *,
    writing: bool = False,
    follow_links: bool = False,
    limit: int | None = RECORD_LIMIT,
) -> int:
    """A descriptor of ``path``, opened without following a link and only if
    it is a plain file (and, for ``writing``, one of a single name).

    ``flags`` are ``os.open``'s (``O_RDONLY``, ``O_RDWR | O_CREAT``, ...);
    ``follow_links`` is for files Rosetta reads but did not write (a model
    folder downloaded into a cache of links), which keep the other checks;
    ``limit`` (bytes) is None for an output Rosetta grows (a partial one)."""
    safe = _SAFE & ~os.O_NOFOLLOW if follow_links else _SAFE
    try:
        fd = os.open(path, flags | safe, 0o666)  # less the umask, as the shell
    except OSError:
        if os.path.islink(path):  # O_NOFOLLOW's ELOOP
            raise not_own(path, "a symbolic link") from None
        if os.path.lexists(path) and not os.path.isfile(path):  # a FIFO, no reader
            raise not_own(path, "not a plain file") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise not_own(path, "not a plain file")
        if writing and info.st_nlink != 1:
            raise not_own(path, f"a file with {info.st_nlink} names (hard links)")
        if limit is not None and info.st_size > limit:
            raise not_own(path, f"{info.st_size} bytes, more than any record")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_own(path: Path, *, follow_links: bool = False) -> bytes:
    """The bytes of Rosetta's own file ``path`` (``open_own``'s checks);
    ``FileNotFoundError`` if there is none."""
    fd = open_own(Path(path), os.O_RDONLY, follow_links=follow_links)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            if sum(map(len, chunks)) > RECORD_LIMIT:  # grew while read
                raise not_own(Path(path), "more bytes than any record")
        return b"".join(chunks)
    finally:
        os.close(fd)


def append_own(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8) to Rosetta's own log ``path``, made if missing;
    a link or a file of several names is refused, never written through."""
    fd = open_own(Path(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, writing=True)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def is_real_folder_in(folder: Path, parent: Path) -> bool:
    """Whether ``folder`` is a folder (not a link to one) directly inside
    ``parent`` once both are resolved."""
    return (
        not folder.is_symlink()
        and folder.is_dir()
        and folder.resolve().parent == Path(parent).resolve()
    )


def remove_own_folder(folder: Path, parent: Path) -> bool:
    """Remove ``folder`` with everything in it if it is a real folder inside
    ``parent`` (links inside it are removed as links, never followed);
    returns whether it did."""
    if not is_real_folder_in(folder, parent):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()
