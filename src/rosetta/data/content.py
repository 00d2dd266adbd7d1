"""What identifies a corpus's content, and whether a file still holds it:
the records a token store keeps of the corpora it was encoded from and of
its own arrays (``rosetta.data.store``)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rosetta.config.sections import CorpusFiles
from rosetta.data import hub
from rosetta.runtime.fingerprint import KIND, fingerprint
from rosetta.runtime.records import Record


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def file_record(path: Path) -> dict[str, Any]:
    status = path.stat()
    return {
        "path": str(path),
        "bytes": status.st_size,
        "mtime_ns": status.st_mtime_ns,
        KIND: fingerprint(path),
    }


def same_content(path: Path, record: dict[str, Any]) -> bool:
    """Whether ``path`` holds the bytes ``record`` describes: by its
    fingerprint (``rosetta.runtime.fingerprint``), or for a record made before
    fingerprints, its SHA-256; never by size and time alone."""
    if not path.is_file() or path.stat().st_size != record["bytes"]:
        return False
    if record.get(KIND):
        return fingerprint(path) == record[KIND]
    return bool(record.get("sha256")) and sha256_of(path) == record["sha256"]


def changed_file(record: dict[str, Any]) -> str | None:
    """Why a recorded corpus file no longer is what was encoded, if it is
    not: gone, or other content (an edit that kept its size and time
    included)."""
    path = Path(record["path"])
    if not path.is_file():
        return f"{path} is gone"
    if same_content(path, record):
        return None
    return f"{path} changed since it was encoded"


def corpus_paths(files: CorpusFiles) -> list[Path]:
    if files.tsv is not None:
        return [files.tsv]
    if files.text is not None:
        return [files.text]
    assert files.src is not None and files.tgt is not None
    return [files.src, files.tgt]


def corpus_records(files: CorpusFiles) -> list[dict[str, Any]]:
    """What identifies a corpus's content: its files, or a hub dataset's
    fingerprint."""
    if files.hf is not None:
        return [hub.record(files)]
    return [file_record(path) for path in corpus_paths(files)]


def changed_corpus(recorded: list[dict[str, Any]], files: CorpusFiles) -> str | None:
    """Why a corpus is not the one encoded, if it is not."""
    names = [r.get("path") for r in recorded]
    if files.hf is not None:
        same_source = names == [hub.describe(files)]
        return hub.changed(recorded[0], files) if same_source else "other corpora"
    if names != [str(path) for path in corpus_paths(files)]:
        return "it was made from other corpus files"
    for record in recorded:
        if (why := changed_file(record)) is not None:
            return why
    return None


class ArrayRecord(Record):
    """A file's size and content: its fingerprint, or (in stores made before
    fingerprints) its SHA-256."""

    bytes: int
    sha256: str | None = None
    xxh3_128: str | None = None


class FileRecord(ArrayRecord):
    path: str
