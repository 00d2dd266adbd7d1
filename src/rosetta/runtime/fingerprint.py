"""Fingerprints of file contents, fast enough to check at every start.

A run's token store and the corpora it was encoded from are checked each
time training starts, by content, not by size and modification time (an
edit that keeps both must be seen). XXH3-128 (the ``xxhash`` package) hashes
memory at tens of GB/s, so the check costs little beside the start itself.
A file is read a block at a time into one buffer (a few tenths of a second
for 2.5 GB in the page cache): mapping it whole would count every page in
the process's resident memory. It finds corruption and edits, as a
checksum; it is not a cryptographic seal.
"""

from __future__ import annotations

from pathlib import Path

import xxhash

KIND = "xxh3_128"  # the key a record stores the fingerprint under
BLOCK = 1 << 24  # bytes read at once


def fingerprint(path: Path) -> str:
    """The XXH3-128 of the file's bytes, in hex."""
    digest = xxhash.xxh3_128()
    block = bytearray(BLOCK)
    view = memoryview(block)
    with open(path, "rb", buffering=0) as handle:
        while read := handle.readinto(block):
            digest.update(view[:read])
    return digest.hexdigest()
