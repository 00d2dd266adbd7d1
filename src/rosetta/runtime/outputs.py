"""Writing without destroying: the one way every command writes its output.

A command that writes keeps three promises, in the order it meets them:

1. **Claim the place before the long work** (``claim_file``, ``claim_folder``).
   The target may not be one of the command's inputs, nor a folder holding one;
   it may not be a training run or a checkpoint of one; an existing target is
   refused unless ``overwrite`` is given, and even then only if it is what this
   kind of command writes (a file, or a folder that carries the command's own
   marker). The parent folder is made and checked for writing, so a bad place
   fails in a second, not after an hour of translating.
2. **Write beside the target under a temporary name, then rename**
   (``write_text_atomic``, ``atomic_file``, ``atomic_folder``): a failure
   leaves the old target, or nothing, never half of one.
3. **Replace a folder by swapping**: the old one is renamed aside, the new one
   into place, and only then is the old one removed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rosetta.errors import RosettaError

RUN_MARKER = "checkpoints.json"  # a training run's index of checkpoints


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _overlap(target: Path, inputs: Iterable[str | Path]) -> Path | None:
    """The input that ``target`` is, or holds (replacing it would delete it)."""
    resolved = target.resolve()
    for item in inputs:
        source = Path(item).resolve()
        if source == resolved or resolved in source.parents:
            return Path(item)
    return None


def _check_parent(target: Path) -> None:
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RosettaError(
            f"{target}: cannot make its folder {parent} ({error.strerror})"
        ) from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise RosettaError(f"{target}: the folder {parent} is not writable")


def _refuse_inputs(target: Path, inputs: Iterable[str | Path]) -> None:
    source = _overlap(target, inputs)
    if source is not None:
        what = "is" if source.resolve() == target.resolve() else "holds"
        raise RosettaError(
            f"{target}: the output {what} the input {source}; write to another place"
        )


def claim_file(
    target: str | Path,
    *,
    inputs: Iterable[str | Path] = (),
    overwrite: bool = False,
) -> Path:
    """Check that ``target`` may receive a new file; returns it as a ``Path``.

    Refused: an input, a folder, an existing file unless ``overwrite``, a
    parent folder that cannot be made or written."""
    target = Path(target)
    _refuse_inputs(target, inputs)
    if target.is_dir():
        raise RosettaError(f"{target}: a folder; name a file to write")
    if target.exists() or target.is_symlink():
        if not overwrite:
            raise RosettaError(
                f"{target} exists; pass --overwrite to replace it, or choose "
                "another output"
            )
        if not target.is_file():
            raise RosettaError(f"{target}: not a regular file; not replaced")
    _check_parent(target)
    return target


def claim_folder(
    target: str | Path,
    *,
    inputs: Iterable[str | Path] = (),
    overwrite: bool = False,
    ours: Callable[[Path], bool],
    what: str,
) -> Path:
    """Check that ``target`` may become a new folder of the kind ``what``
    (e.g. "a CTranslate2 export"); returns it as a ``Path``.

    An existing folder is replaced only with ``overwrite`` and only if
    ``ours(folder)`` says this kind of command wrote it; a training run or
    one of its checkpoints never is."""
    target = Path(target)
    _refuse_inputs(target, inputs)
    if target.exists() or target.is_symlink():
        if not target.is_dir():
            raise RosettaError(f"{target} exists and is not a folder; not replaced")
        if (target / RUN_MARKER).exists():
            raise RosettaError(f"{target} is a training run; it is never replaced")
        if not ours(target):
            raise RosettaError(
                f"{target} exists and is not {what}; choose a new folder "
                "(nothing was written)"
            )
        if not overwrite:
            raise RosettaError(
                f"{target} holds {what}; pass --overwrite to replace it, or "
                "choose another folder"
            )
    _check_parent(target)
    return target


def temporary_name(target: Path, suffix: str = "") -> Path:
    """A name beside ``target`` that no user file has: hidden, with our PID."""
    return target.with_name(f".{target.name}.{os.getpid()}.tmp{suffix}")


@contextmanager
def atomic_file(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target`` (same suffix) to write; renamed to
    ``target`` when the block ends without an error, removed otherwise."""
    target = Path(target)
    tmp = temporary_name(target, target.suffix)
    try:
        yield tmp
        fsync_path(tmp)
        os.replace(tmp, target)
        fsync_path(target.parent)
    except OSError as error:
        raise RosettaError(
            f"{target}: not written ({error.strerror or error})"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8), all or nothing."""
    with atomic_file(Path(path)) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` as JSON, all or nothing."""
    write_text_atomic(path, json.dumps(data, indent=1))


def replace_folder(tmp: Path, target: Path) -> None:
    """Move the finished folder ``tmp`` to ``target``: an old ``target`` is
    renamed aside first and removed only once the new one is in place."""
    aside = None
    if target.exists():
        aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old", dir=target.parent))
        os.replace(target, aside / target.name)
    try:
        os.replace(tmp, target)
    except OSError:
        if aside is not None:  # put the old folder back
            os.replace(aside / target.name, target)
            aside.rmdir()
        raise
    fsync_path(target.parent)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


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
def atomic_folder(target: Path, replace: bool = True) -> Iterator[Path]:
    """A new temporary folder beside ``target`` to fill; it takes ``target``'s
    place (``replace_folder``; with ``replace=False`` only if there is none,
    ``move_unless_there``) when the block ends without an error, and is
    removed otherwise."""
    target = Path(target)
    tmp = temporary_name(target)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
        (replace_folder if replace else move_unless_there)(tmp, target)
    except OSError as error:
        raise RosettaError(
            f"{target}: not written ({error.strerror or error})"
        ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
