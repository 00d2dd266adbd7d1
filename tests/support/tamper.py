"""The chaos test's tamperer: between two commands it edits, links or
replaces one of Rosetta's own files (a run's lock, index and log, a folder
output's record, the record of written files, a swap journal, a checkpoint
folder), as a careless tool, a copy that kept links or a hand edit could.
The commands after it must still keep the invariant (``tests/support/chaos.py``):
Rosetta reads its own files back as untrusted input
(``rosetta.runtime.own_files``) and never writes or deletes through them.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
from pathlib import Path

USERS = ("notes.txt", "mine/thesis.tex", "in.txt")  # files a tamper aims at
USER_FOLDERS = ("mine", "other", ".avg.tmp")
RECORD_NAMES = (
    ".rosetta-run.lock",
    ".rosetta-output.json",
    ".rosetta-written.json",
    "checkpoints.json",
    "metrics.jsonl",
)


def records(workspace: Path) -> list[Path]:
    """Rosetta's own files in ``workspace`` (not in the protected ``other``
    run, whose files nothing may change), and the places they go."""
    found = [
        path
        for path in workspace.rglob("*")
        if path.name in RECORD_NAMES or path.name.endswith(".swap.json")
    ]
    found += [workspace / "run" / ".rosetta-run.lock"]  # made by a tamper too
    return sorted({p for p in found if p.relative_to(workspace).parts[0] != "other"})


def swap_targets(workspace: Path) -> list[Path]:
    """Folders a journal could be about: outputs and the run's checkpoints."""
    outputs = [p.parent for p in workspace.rglob(".rosetta-output.json")]
    checkpoints = list((workspace / "run").glob("checkpoint-*"))
    return sorted(p for p in outputs + checkpoints if "other" not in p.parts)


def _clear(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _journal(target: Path, workspace: Path, rng: random.Random) -> str:
    """A journal for ``target`` that names what no swap made."""
    token = secrets.token_hex(16)
    folder = rng.choice(USER_FOLDERS)
    relative = os.path.relpath(workspace / folder, target.parent)
    kind = rng.choice(["old form", "links", "other target", "garbage"])
    journal = target.with_name(f".{target.name}.swap.json")
    if kind == "old form":
        entry = {"new": relative, "aside": rng.choice([relative, "run", "in.txt"])}
    elif kind == "links":  # the token's folders made links to a user's folder
        for suffix in ("new", "old"):
            place = target.with_name(f".{target.name}.{token}.{suffix}")
            _clear(place)
            place.symlink_to(workspace / folder, target_is_directory=True)
        entry = {"token": token, "target": target.name}
    elif kind == "other target":
        entry = {"token": token, "target": relative}
    else:
        journal.write_text(rng.choice(["[" * 20_000, '{"token": 1', "null"]))
        return f"{journal.relative_to(workspace)}: garbage"
    _clear(journal)
    journal.write_text(json.dumps(entry))
    return f"{journal.relative_to(workspace)}: {kind}"


def _edit(path: Path, workspace: Path, rng: random.Random) -> str:
    """Rewrite a record to claim a user's files, or to lead out of the run."""
    name = path.name
    if name == ".rosetta-output.json":
        users = {u: "0" * 32 for u in (*USERS, "notes-1.txt")}
        entry: object = {"kind": "a CTranslate2 export", "files": users}
    elif name == ".rosetta-written.json":
        entry = {u.split("/")[-1]: {"by": "translate", "xxh3_128": "0"} for u in USERS}
    elif name == "checkpoints.json":
        entry = {"checkpoints": ["../other/checkpoint-0000060"], "latest": "../mine"}
    else:
        entry = rng.choice([[1] * 3, "a user's text", {"x": [[[[]]]]}])
    _clear(path)
    path.write_text(json.dumps(entry))
    return f"{path.relative_to(workspace)}: edited"


def tamper(workspace: Path, rng: random.Random) -> str:
    """Damage one of Rosetta's own files in ``workspace``; what was done."""
    kind = rng.choice(["link", "hard link", "fifo", "edit", "journal", "checkpoint"])
    if kind == "journal" and (targets := swap_targets(workspace)):
        return _journal(rng.choice(targets), workspace, rng)
    if kind == "checkpoint":
        ours = sorted((workspace / "run").glob("checkpoint-*"))
        theirs = sorted((workspace / "other").glob("checkpoint-*"))
        if ours and theirs:
            place = rng.choice(ours)
            _clear(place)
            place.symlink_to(rng.choice(theirs), target_is_directory=True)
            return f"{place.relative_to(workspace)}: a link into another run"
    path = rng.choice(records(workspace))
    if not path.parent.is_dir():
        return "nothing to tamper with"
    if kind in ("edit", "journal", "checkpoint"):
        return _edit(path, workspace, rng)
    user = workspace / rng.choice(USERS)
    _clear(path)
    if kind == "link":
        path.symlink_to(user)
    elif kind == "hard link":
        os.link(user, path)
    else:
        os.mkfifo(path)
    return f"{path.relative_to(workspace)}: {kind}"
