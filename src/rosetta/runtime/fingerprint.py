"""Fingerprints of file contents, fast enough to check at every start.

A run's token store and the corpora it was encoded from are checked each
time training starts, by content, not by size and modification time (an
edit that keeps both must be seen). XXH3-128 (the ``xxhash`` package) hashes
memory at tens of GB/s, so the check costs little beside the start itself:
mapped, not read, the files are hashed straight from the page cache. It
finds corruption and edits, as a checksum; it is not a cryptographic seal.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import xxhash

KIND = "xxh3_128"  # the key a record stores the fingerprint under


def fingerprint(path: Path) -> str:
    """The XXH3-128 of the file's bytes, in hex."""
    digest = xxhash.xxh3_128()
    with open(path, "rb") as handle:
        if handle.seek(0, 2) == 0:  # an empty file cannot be mapped
            return digest.hexdigest()
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            digest.update(mapped)
    return digest.hexdigest()
