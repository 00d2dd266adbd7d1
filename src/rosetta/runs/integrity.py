"""Checksums that cannot be switched off.

A checkpoint's ``checkpoint.json`` lists the SHA-256 of each of its tensor
files and carries the SHA-256 of its own content (``meta_sha256``): the
config, the tokenizers and those file checksums are all covered, so an edited
architecture, a swapped tokenizer or a flipped weight is found before any of
it is used. A missing checksum is an error, never a reason to skip the check,
and the files named are plain names inside the checkpoint folder: nothing
elsewhere is read. This guards against corruption and careless edits; anyone
who can write the folder can also rewrite the checksums.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rosetta.errors import RosettaError

META_DIGEST = "meta_sha256"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def meta_digest(meta: dict[str, Any]) -> str:
    content = {key: value for key, value in meta.items() if key != META_DIGEST}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with the checksum of its own content: config, tokenizers and
    the files' checksums are then all covered."""
    return {**meta, META_DIGEST: meta_digest(meta)}


def verify_sealed(meta: dict[str, Any], meta_path: Path) -> None:
    """``meta`` carries the checksum of its own content, and it matches."""
    if meta.get(META_DIGEST) != meta_digest(meta):
        reason = "missing" if META_DIGEST not in meta else "mismatch"
        raise RosettaError(
            f"{meta_path}: checksum of the metadata {reason} (edited or corrupted)"
        )


def verify_files(
    meta: dict[str, Any], folder: Path, known: Sequence[str], required: str
) -> None:
    """Each of the ``known`` files in ``folder`` is listed in ``meta["sha256"]``
    and matches; ``required`` must be there; nothing else may be listed."""
    where = folder / "checkpoint.json"
    sums = meta.get("sha256")
    if not isinstance(sums, dict) or required not in sums:
        raise RosettaError(f"{where}: no checksum of {required}")
    unknown = set(sums) - set(known)
    if unknown:
        raise RosettaError(f"{where}: checksums of unknown files {sorted(unknown)}")
    for name in known:
        path = folder / name
        if name not in sums:
            if path.exists():
                raise RosettaError(f"{path}: not covered by the checkpoint's checksums")
            continue
        if path.is_symlink():  # the checkpoint's own file, never another's
            raise RosettaError(f"{path}: a symbolic link, not the checkpoint's file")
        if not path.is_file():
            raise RosettaError(f"{path}: missing from the checkpoint")
        if sha256_file(path) != sums[name]:
            raise RosettaError(f"{path}: checksum mismatch (truncated or corrupted)")
