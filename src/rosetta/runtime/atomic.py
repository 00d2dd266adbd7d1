"""Writing all or nothing: files and folders appear whole under their real
name, or not at all, whenever the process is stopped.

- A file is written under a temporary name beside it, fsynced, and renamed
  (``atomic_file``).
- A folder is filled under a temporary name beside it and moved into place
  (``atomic_folder``). Replacing an existing folder takes two renames (old
  aside, new in), so the swap is first written down in a journal beside the
  target (``.NAME.swap.json``): a process killed at any instant leaves the
  old folder or the new one under the real name, or a journal from which
  ``finish_swap`` (run by the next command on that output) completes the
  swap. The journal holds only a random token; the two folders it can lead
  to are the hidden names that carry that token beside the target, and each
  holds the token inside (``SWAP_MARK``), so an edited journal can never
  lead to a user's folder, even one given such a name.
- Temporary names are made by ``tempfile`` (``mkstemp``, ``mkdtemp``): a name
  that exists is never taken, so no user file is ever written over or
  removed as "ours"; only what this process created is cleaned up.
- What ``tempfile`` makes is private (0600, 0700); before it takes its real
  name it gets the permissions any file the user creates gets (0666 or
  0777 less the umask), so a translation written on a shared machine reads
  like one the shell wrote.

``ROSETTA_TEST_SWAP_PAUSE`` (seconds) pauses between the two renames of a
swap, so that tests can kill a process exactly there.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

from pydantic import StringConstraints

from rosetta.errors import RosettaError
from rosetta.runtime.fingerprint import fingerprint
from rosetta.runtime.own_files import read_own
from rosetta.runtime.records import Record, read_record

LEDGER_FILE = ".rosetta-output.json"  # what a folder output holds: see outputs
SWAP_SUFFIX = ".swap.json"
SWAP_MARK = ".rosetta-swap"  # inside a swap's folders: the swap's token


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def umask() -> int:
    """The process's umask, read without changing it where Linux says it
    (``os.umask`` can only be read by setting it, for a moment, for every
    thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def users_mode(folder: bool) -> int:
    """The permissions a file (0666) or folder (0777) the user makes gets,
    less the umask: what everything Rosetta writes gets."""
    return (0o777 if folder else 0o666) & ~umask()


def as_the_user_makes(path: Path) -> None:
    """``users_mode`` for ``path``, made private first (a temporary folder)
    or by a library that makes its files private (safetensors: 0600)."""
    os.chmod(path, users_mode(os.path.isdir(path)))


def _not_written(target: Path, error: OSError) -> RosettaError:
    return RosettaError(f"{target}: not written ({error.strerror or error})")


@contextmanager
def atomic_file(target: Path) -> Iterator[Path]:
    """A new temporary path beside ``target`` (same suffix) to write; renamed
    to ``target`` when the block ends without an error, removed otherwise."""
    target = Path(target)
    try:
        fd, name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent
        )
    except OSError as error:
        raise _not_written(target, error) from None
    try:
        os.fchmod(fd, users_mode(folder=False))
    finally:
        os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        fsync_path(tmp)
        os.replace(tmp, target)
        fsync_path(target.parent)
    except OSError as error:
        raise _not_written(target, error) from None
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8), all or nothing."""
    with atomic_file(Path(path)) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_json_atomic(path: Path, data: object) -> None:
    """Replace ``path`` with ``data`` as JSON, all or nothing."""
    write_text_atomic(path, json.dumps(data, indent=1))


def journal_path(target: Path) -> Path:
    return target.with_name(f".{target.name}{SWAP_SUFFIX}")


def _pause_for_tests() -> None:
    pause = os.environ.get("ROSETTA_TEST_SWAP_PAUSE")
    if pause:
        time.sleep(float(pause))


def swap_places(target: Path, token: str) -> tuple[Path, Path]:
    """Where a swap onto ``target`` keeps the new folder and the old one:
    hidden names beside it that carry the swap's random ``token``, so a
    journal can only ever name folders its own swap made."""
    return (
        target.with_name(f".{target.name}.{token}.new"),
        target.with_name(f".{target.name}.{token}.old"),
    )


def replace_folder(tmp: Path, target: Path) -> None:
    """Move the finished folder ``tmp`` (beside ``target``) to ``target``.

    With no ``target``, one rename. Otherwise a swap: the new folder is
    renamed to a name carrying a new random token, the journal records that
    token, then old aside, new in, old removed, journal removed.
    ``finish_swap`` completes a swap that was stopped anywhere in between."""
    finish_swap(target)
    if not (target.exists() or target.is_symlink()):
        os.replace(tmp, target)
        fsync_path(target.parent)
        return
    token = secrets.token_hex(16)
    new, aside = swap_places(target, token)
    aside.mkdir()  # never there before: the token is new
    journal = journal_path(target)
    try:
        for folder in (aside, tmp):  # what the journal may lead to: marked
            (folder / SWAP_MARK).write_text(token, encoding="ascii")
        os.replace(tmp, new)
        write_json_atomic(journal, {"token": token, "target": target.name})
        os.replace(target, aside / target.name)
    except OSError:
        if new.is_dir():
            os.replace(new, tmp)  # the caller cleans up its own folder
        shutil.rmtree(aside)
        journal.unlink(missing_ok=True)
        raise
    _pause_for_tests()
    try:
        os.replace(new, target)
    except OSError:
        os.replace(aside / target.name, target)  # put the old folder back
        os.replace(new, tmp)
        shutil.rmtree(aside)
        journal.unlink()
        raise
    (target / SWAP_MARK).unlink()
    fsync_path(target.parent)
    shutil.rmtree(aside, ignore_errors=True)
    journal.unlink()
    fsync_path(target.parent)


class SwapJournal(Record):
    token: Annotated[str, StringConstraints(pattern="^[0-9a-f]{32}$")]
    target: str


def _refused(journal: Path, why: str) -> RosettaError:
    return RosettaError(
        f"{journal}: {why}; nothing was changed (remove the journal if it is "
        "not Rosetta's)"
    )


def _marked(folder: Path, token: str) -> bool:
    """Whether ``folder`` is a real folder that a swap with ``token`` made."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    try:
        return read_own(folder / SWAP_MARK) == token.encode("ascii")
    except (OSError, RosettaError):
        return False


def _journal_token(journal: Path, target: Path) -> str:
    """The token of ``target``'s journal, once the journal is known to be
    Rosetta's and to be about ``target``; its two folders, where present,
    must be the folders that swap made (they carry its token inside)."""
    entry = read_record(journal, SwapJournal, "a swap journal Rosetta wrote")
    if entry.target != target.name:
        raise _refused(journal, f"a journal of {entry.target!r}, not {target.name!r}")
    for place in swap_places(target, entry.token):
        there = place.exists() or place.is_symlink()
        if there and not _marked(place, entry.token):
            raise _refused(journal, f"{place.name} is not the folder the swap made")
    return entry.token


def finish_swap(target: Path) -> str | None:
    """Complete a folder swap onto ``target`` that a killed process left
    (see ``replace_folder``); returns what was done, or None if nothing was
    pending. Whatever instant the kill came at, the result is the new folder
    (once the old one had been moved aside) or the old one (before that).

    The journal is untrusted input: it only ever leads to the two hidden
    folders named by its token (``swap_places``), beside ``target``."""
    target = Path(target)
    journal = journal_path(target)
    if not (journal.exists() or journal.is_symlink()):
        return None
    token = _journal_token(journal, target)
    new, aside = swap_places(target, token)
    old = aside / target.name
    if target.exists() or target.is_symlink():
        if new.is_dir():  # stopped before the old one moved: keep it
            shutil.rmtree(new)
            done = "undone"
        else:
            done = "completed"
    elif new.is_dir():
        os.replace(new, target)
        done = "completed"
    elif old.exists() or old.is_symlink():
        os.replace(old, target)
        done = "undone"
    else:
        raise RosettaError(
            f"{journal}: neither the old nor the new {target.name} is left; "
            "the journal is kept for inspection"
        )
    mark = target / SWAP_MARK  # the new folder's, if it moved in
    if target.is_dir() and not target.is_symlink() and _marked(target, token):
        mark.unlink()
    fsync_path(target.parent)
    if aside.is_dir():
        shutil.rmtree(aside, ignore_errors=True)
    journal.unlink()
    return f"{target}: a swap stopped midway was {done}"


def finish_swaps(folder: Path) -> list[str]:
    """``finish_swap`` for every journal in ``folder`` (a run's checkpoints)."""
    if not folder.is_dir():
        return []
    done = []
    for journal in sorted(folder.glob(f".*{SWAP_SUFFIX}")):
        name = journal.name[1 : -len(SWAP_SUFFIX)]
        if name in ("", ".", ".."):
            raise _refused(journal, "a journal of no folder")
        if what := finish_swap(folder / name):
            done.append(what)
    return done


def folder_files(folder: Path) -> list[str]:
    """Every file and link below ``folder``, as sorted relative paths."""
    found = []
    for root, dirs, files in os.walk(folder):
        base = Path(root).relative_to(folder)
        for name in files + [d for d in dirs if (Path(root) / d).is_symlink()]:
            found.append((base / name).as_posix())
    return sorted(found)


def move_unless_there(tmp: Path, target: Path) -> None:
    """Move the finished folder ``tmp`` to ``target`` unless a ``target``
    exists: where processes write the same content, the first one wins."""
    try:
        os.rename(tmp, target)
    except OSError:
        if not target.is_dir():
            raise
    else:
        fsync_path(target.parent)


@contextmanager
def atomic_folder(
    target: Path, replace: bool = True, kind: str | None = None
) -> Iterator[Path]:
    """A new temporary folder beside ``target`` to fill; it takes ``target``'s
    place (``replace_folder``; with ``replace=False`` only if there is none,
    ``move_unless_there``) when the block ends without an error, and is
    removed otherwise. With ``kind``, the folder records what it holds
    (``LEDGER_FILE``: its kind, and each file's fingerprint), so that a later
    ``--overwrite`` replaces only that, unchanged."""
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(
            tempfile.mkdtemp(
                prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
            )
        )
    except OSError as error:
        raise _not_written(target, error) from None
    try:
        as_the_user_makes(tmp)
        yield tmp
        if kind is not None:
            files = {name: fingerprint(tmp / name) for name in folder_files(tmp)}
            ledger = {"kind": kind, "files": files}
            (tmp / LEDGER_FILE).write_text(json.dumps(ledger, indent=1))
        (replace_folder if replace else move_unless_there)(tmp, target)
    except OSError as error:
        raise _not_written(target, error) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
