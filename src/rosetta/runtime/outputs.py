"""Writing without destroying: the one rule every command that writes obeys.

A command writes only the output it was given, and it claims that place
before the long work (``claim_file``, ``claim_folder``), so a bad place fails
in a second, not after an hour of translating:

- **Never inside what Rosetta keeps.** A training run, a checkpoint, a token
  store or an export (``kept_folder`` tells them by the files that make them)
  never receives a file, with or without ``--overwrite``; nor does one of the
  command's inputs, nor a folder holding one. Paths are compared resolved, so
  a symbolic link does not lead around the rule.
- **``--overwrite`` replaces only what the same kind of command wrote.** A
  folder output records the files it wrote (``LEDGER_FILE``); an existing
  folder is replaced only if it carries that record, of the same kind, and
  holds nothing else (a user's notes, a run trained inside it: refused,
  named). A file output is noted in its folder's ``WRITTEN_FILE`` with a
  fingerprint of its content; it is replaced only if the same kind of command
  wrote it and nobody changed it since.
- **All or nothing** (``rosetta.runtime.atomic``): files and folders are
  written under new temporary names and renamed into place; a folder swap is
  journaled, and a swap a kill interrupted is completed here, by the next
  command on that output, before anything else.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rosetta.errors import RosettaError
from rosetta.runtime.atomic import (
    LEDGER_FILE,
    SWAP_SUFFIX,
    finish_swap,
    folder_files,
    write_json_atomic,
)
from rosetta.runtime.fingerprint import KIND, fingerprint
from rosetta.runtime.records import Record, read_record

RUN_MARKER = "checkpoints.json"  # a training run's index of checkpoints
RUN_LOCK = ".rosetta-run.lock"  # held by the process training a run
WRITTEN_FILE = ".rosetta-written.json"  # the files commands wrote in a folder
# The files that make a folder something Rosetta keeps, and what it is then.
# Their owners live above this layer (a run's index and tokenizers, a
# checkpoint's record, the token store, each export format's marker);
# tests/runtime/test_outputs.py checks that the names here are theirs.
KEPT = (
    (RUN_MARKER, "a training run"),
    (RUN_LOCK, "a training run"),
    ("tokenizers.json", "a training run"),
    ("checkpoint.json", "a checkpoint"),
    ("store/manifest.json", "a training run"),
    ("rosetta.json", "a CTranslate2 export"),
    ("source.spm", "a MarianMT export"),
    ("sentencepiece.bpe.model", "an NLLB-200, M2M100 or mBART-50 export"),
)


def kept_folder(folder: Path) -> str | None:
    """What ``folder`` is, if Rosetta keeps it (a run, a checkpoint, a token
    store, an export)."""
    if folder.name == "store" and (folder / "manifest.json").is_file():
        return "a token store"
    for name, what in KEPT:
        if (folder / name).exists():
            return what
    return None


def _overlap(target: Path, inputs: Iterable[str | Path]) -> Path | None:
    """The input that ``target`` is, or holds (replacing it would delete it)."""
    resolved = target.resolve()
    for item in inputs:
        source = Path(item).resolve()
        if source == resolved or resolved in source.parents:
            return Path(item)
    return None


def _refuse_inputs(target: Path, inputs: Iterable[str | Path]) -> None:
    source = _overlap(target, inputs)
    if source is not None:
        what = "is" if source.resolve() == target.resolve() else "holds"
        raise RosettaError(
            f"{target}: the output {what} the input {source}; write to another place"
        )


def refuse_kept_places(target: Path) -> None:
    """Nothing is written inside a run, checkpoint, store or export."""
    for folder in target.resolve().parents:
        what = kept_folder(folder)
        if what is not None:
            raise RosettaError(
                f"{target}: inside {folder}, {what}; Rosetta never writes "
                "there (nothing was written): choose another place"
            )


def _refuse_bookkeeping(target: Path) -> None:
    """Rosetta's own records (of what was written, of a swap, of a run's
    writer) are never an output: writing one would lose what it records."""
    name = target.name
    if name in (WRITTEN_FILE, LEDGER_FILE, RUN_LOCK) or name.endswith(SWAP_SUFFIX):
        raise RosettaError(
            f"{target}: a name Rosetta keeps its own records under; choose another"
        )


# What Rosetta's temporary and swap names add to an output's name: ".",
# ".", a random token of up to 32 characters, ".new" or ".tmp", a suffix.
NAME_ROOM = 48


def _name_limit(path: Path) -> int:
    """The longest name, in bytes, the file system at ``path`` takes."""
    for folder in Path(os.path.abspath(path)).parents:
        try:
            return os.pathconf(folder, "PC_NAME_MAX")
        except (OSError, ValueError):  # not there (yet), or no answer
            continue
    return 255


def refuse_long_name(target: Path, room: int = NAME_ROOM) -> None:
    """Every name in ``target`` one the file system takes, the last with
    ``room`` for the temporary names made beside it; else one line now (not
    a traceback, nor an error at the rename after the long work)."""
    limit = _name_limit(Path(target))
    parts = Path(target).parts
    for index, part in enumerate(parts):
        size = len(os.fsencode(part)) + (room if index == len(parts) - 1 else 0)
        if size > limit:
            raise RosettaError(
                f"{part[:40]}...: a name of {len(os.fsencode(part))} bytes in "
                f"{target.name[:40]}...; this file system takes {limit}, and "
                f"Rosetta needs {room} more for the temporary names it writes "
                "beside an output: choose a shorter name"
            )


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


def claim_file(
    target: str | Path,
    *,
    inputs: Iterable[str | Path] = (),
    overwrite: bool = False,
    what: str,
) -> Path:
    """Check that ``target`` may receive a new file written by ``what`` (e.g.
    "rosetta translate"); returns it as a ``Path``.

    Refused: an input, a place inside a run, checkpoint, store or export, a
    folder, an existing file unless ``overwrite``, and even then a file that
    ``what`` did not write there (``record_written``) or that changed since,
    a parent folder that cannot be made or written."""
    target = Path(target)
    refuse_long_name(target)
    _refuse_bookkeeping(target)
    _refuse_inputs(target, inputs)
    refuse_kept_places(target)
    if target.is_dir():
        raise RosettaError(f"{target}: a folder; name a file to write")
    if target.exists() or target.is_symlink():
        if not overwrite:
            raise RosettaError(
                f"{target} exists; pass --overwrite to replace it, or choose "
                "another output"
            )
        if target.is_symlink() or not target.is_file() or not _wrote(target, what):
            raise RosettaError(
                f"{target} exists and is not a file {what} wrote (or it changed "
                "since); not replaced: remove it yourself, or choose another output"
            )
    _check_parent(target)
    return target


def _written(folder: Path) -> dict:
    """The folder's record of the files commands wrote there ({} if none, or
    if the record is not one Rosetta wrote: then nothing there is ours)."""
    try:
        return read_record(folder / WRITTEN_FILE, dict[str, Any], "a record")
    except (RosettaError, OSError):
        return {}


def _wrote(target: Path, what: str) -> bool:
    """Whether ``what`` wrote ``target`` and nobody changed it since."""
    entry = _written(target.parent).get(target.name)
    return (
        isinstance(entry, dict)
        and entry.get("by") == what
        and entry.get(KIND) == fingerprint(target)
    )


def record_written(target: Path, what: str) -> None:
    """Note in ``target``'s folder that ``what`` wrote it, as it is now, so
    that ``--overwrite`` may replace it later (and nothing else)."""
    ledger = _written(target.parent)
    ledger[target.name] = {"by": what, KIND: fingerprint(target)}
    write_json_atomic(target.parent / WRITTEN_FILE, ledger)


class Ledger(Record):
    """``LEDGER_FILE``: what a folder output is, and the fingerprint of each
    file it wrote."""

    kind: str
    files: dict[str, str]


def read_ledger(folder: Path) -> dict | None:
    """The record of what a folder output holds, or None if it has none (or
    one that is not Rosetta's)."""
    try:
        ledger = read_record(folder / LEDGER_FILE, Ledger, "a record")
    except (RosettaError, OSError):
        return None
    return {"kind": ledger.kind, "files": ledger.files}


def _not_written(target: Path, files: dict[str, str]) -> list[str]:
    """The files in ``target`` its record does not hold as they are: others,
    changed ones, links."""
    foreign = []
    for name in folder_files(target):
        path = target / name
        # a link, or a FIFO (whose opening would block), is never ours
        plain = path.is_file() and not path.is_symlink()
        if not plain or files.get(name) != fingerprint(path):
            foreign.append(name)
    return foreign


def _refuse_unless_ours(target: Path, what: str) -> None:
    """``target`` holds exactly an output of the kind ``what``, nothing else."""
    ledger = read_ledger(target)
    if ledger is None or ledger["kind"] != what:
        kept = kept_folder(target)
        if kept == "a training run":
            raise RosettaError(f"{target} is a training run; it is never replaced")
        raise RosettaError(
            f"{target} exists and is not {what}; choose a new folder "
            "(nothing was written)"
        )
    foreign = [n for n in _not_written(target, ledger["files"]) if n != LEDGER_FILE]
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise RosettaError(
            f"{target} holds files that Rosetta did not write there, or that "
            f"changed since ({shown}); not replaced: move them, or choose "
            "another folder"
        )


def claim_folder(
    target: str | Path,
    *,
    inputs: Iterable[str | Path] = (),
    overwrite: bool = False,
    what: str,
) -> Path:
    """Check that ``target`` may become a new folder of the kind ``what``
    (e.g. "a CTranslate2 export"); returns it as a ``Path``.

    An empty folder is taken as new; any other is replaced only with
    ``overwrite``, and only if it is an earlier output of the kind ``what``
    holding only the files that output wrote; a training run or one of its
    checkpoints never is."""
    target = Path(target)
    resolved = target.resolve()
    if resolved == Path.cwd() or resolved in Path.cwd().parents or not target.name:
        raise RosettaError(
            f"{target}: the current folder or one holding it; name a new folder"
        )
    refuse_long_name(target)
    _refuse_bookkeeping(target)
    _refuse_inputs(target, inputs)
    refuse_kept_places(target)
    finish_swap(target)
    empty = target.is_dir() and not target.is_symlink() and not any(target.iterdir())
    if (target.exists() or target.is_symlink()) and not empty:
        if target.is_symlink() or not target.is_dir():
            raise RosettaError(f"{target} exists and is not a folder; not replaced")
        _refuse_unless_ours(target, what)
        if not overwrite:
            raise RosettaError(
                f"{target} holds {what}; pass --overwrite to replace it, or "
                "choose another folder"
            )
    _check_parent(target)
    return target
