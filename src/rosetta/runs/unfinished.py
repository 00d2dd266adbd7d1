"""A model folder that is not where it was named: absent, or caught between
the two renames of a swap (``rosetta.runtime.atomic.replace_folder``: the old
folder moved aside, the new one not yet moved in), which a kill leaves
behind, its journal ``.NAME.swap.json`` beside it.

Reading never completes such a swap (the command that writes the folder may
still be running); the command that writes it completes it before anything
else, and a reader is told which command that is, not "no such model"."""

from __future__ import annotations

from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.runtime.atomic import SwapJournal, journal_path, swap_places
from rosetta.runtime.outputs import RUN_MARKER, read_ledger
from rosetta.runtime.records import read_record

# What a folder output records it is (``rosetta.runtime.atomic.LEDGER_FILE``),
# and the command that writes it. Their owners live above this layer
# (``rosetta.jobs.importers``, ``rosetta.runs.average``, each export);
# tests/runs/test_unfinished.py checks that the names here are theirs.
WRITERS = {
    "an imported model": "rosetta import",
    "an averaged checkpoint": "rosetta average",
    "a CTranslate2 export": "rosetta export",
    "a transformers export": "rosetta export",
}


def _new_kind(target: Path, journal: Path) -> str | None:
    """What the swap was putting in ``target``'s place, as its folder (the
    new one, else the old one) records it; None where nothing says."""
    try:
        token = read_record(journal, SwapJournal, "a swap journal").token
    except (RosettaError, OSError):
        return None
    new, aside = swap_places(target, token)
    for folder in (new, aside / target.name):
        ledger = read_ledger(folder) if folder.is_dir() else None
        if ledger is not None:
            return ledger["kind"]
    return None


def unfinished_swap(folder: Path) -> str | None:
    """Why ``folder`` is missing, in one line, when a swap onto it was
    stopped between its two renames, with what completes it; None when no
    swap onto it is pending (or it is there)."""
    journal = journal_path(folder)
    if folder.exists() or not (journal.exists() or journal.is_symlink()):
        return None
    if (folder.parent / RUN_MARKER).is_file():  # a checkpoint of a run
        return (
            f"{folder}: a rewrite of this checkpoint was stopped midway "
            f"({journal.name} beside it records it); rosetta train --resume "
            f"on {folder.parent} completes it"
        )
    kind = _new_kind(folder, journal)
    command = WRITERS.get(kind or "")
    doing = f"running {command} again" if command else "the command that wrote it"
    return (
        f"{folder}: its replacement by {kind or 'a new folder'} was stopped "
        f"midway, between the two renames ({journal.name} beside it records "
        f"it); {doing} with -o {folder} completes it before anything else "
        "(if that command is still running, wait for it)"
    )


def refuse_missing(path: Path) -> None:
    """Nothing if ``path`` is there; otherwise one line: a swap stopped
    midway (``unfinished_swap``), or no such model."""
    if path.exists():
        return
    raise RosettaError(unfinished_swap(path) or f"{path}: no such model file or folder")
