"""Encoded pairs in flat arrays: what ``rosetta prepare`` writes once and
training memory-maps.

A split (``train``, ``valid``) of a store folder is four raw little-endian
arrays, like the ``.bin``/``.idx`` pairs of fairseq's indexed datasets:

- ``SPLIT.src.tokens``, ``SPLIT.tgt.tokens``: every pair's token ids, one
  after another, in the smallest integer type the vocabulary fits
  (``uint16`` up to 65,536 entries, else ``int32``);
- ``SPLIT.src.offsets``, ``SPLIT.tgt.offsets``: ``int64``, pair i's tokens
  are ``tokens[offsets[i]:offsets[i + 1]]``.

Opening a split maps the files: nothing is read until a batch asks, and the
processes of one training run share the pages. ``manifest.json`` says what
the arrays were made from (``rosetta.data.store``).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import BinaryIO

import numpy as np
import xxhash

from rosetta.data.batching import Batch, Example, collate_flat

OFFSET_TYPE = np.dtype("<i8")
SIDES = ("src", "tgt")


def token_type(vocabulary_size: int) -> np.dtype:
    """The smallest integer type that holds every id of the vocabulary."""
    return np.dtype("<u2") if vocabulary_size <= 2**16 else np.dtype("<i4")


class EncodedPairs:
    """Pairs of token-id sequences held in flat arrays (mapped or in memory).

    ``rows``, if given, selects and orders pairs of the arrays: pair i is
    array pair ``rows[i]``. Indexing gives an ``Example``; ``src_lengths``
    and ``tgt_lengths`` are every pair's token counts, for batching.
    """

    def __init__(
        self,
        tokens: dict[str, np.ndarray],
        offsets: dict[str, np.ndarray],
        rows: np.ndarray | None = None,
    ):
        self.tokens, self.offsets, self.rows = tokens, offsets, rows
        lengths = {side: np.diff(offsets[side]).astype(np.int32) for side in SIDES}
        if rows is not None:
            lengths = {side: lengths[side][rows] for side in SIDES}
        self.src_lengths, self.tgt_lengths = lengths["src"], lengths["tgt"]

    @classmethod
    def from_examples(cls, examples: Sequence[Example]) -> EncodedPairs:
        """The same pairs in memory (tests, small synthetic corpora)."""
        tokens, offsets = {}, {}
        for side in SIDES:
            sequences = [getattr(e, side) for e in examples]
            lengths = np.array([len(s) for s in sequences], dtype=OFFSET_TYPE)
            offsets[side] = np.concatenate([[0], np.cumsum(lengths)]).astype(
                OFFSET_TYPE
            )
            tokens[side] = np.fromiter(
                chain.from_iterable(sequences), np.int64, int(offsets[side][-1])
            )
        return cls(tokens, offsets)

    @classmethod
    def open(cls, folder: Path, split: str, dtype: np.dtype) -> EncodedPairs:
        """A split of a store folder, memory-mapped read-only."""
        tokens, offsets = {}, {}
        for side in SIDES:
            offsets[side] = map_array(folder / f"{split}.{side}.offsets", OFFSET_TYPE)
            tokens[side] = map_array(
                folder / f"{split}.{side}.tokens", dtype, random_access=True
            )
        return cls(tokens, offsets)

    def __len__(self) -> int:
        return len(self.src_lengths)

    def __getitem__(self, index: int) -> Example:
        row = int(index if self.rows is None else self.rows[index])
        src, tgt = (self._sequence(side, row) for side in SIDES)
        return Example(src, tgt)

    def __iter__(self) -> Iterator[Example]:
        return (self[i] for i in range(len(self)))

    def collate(self, indices: Sequence[int] | np.ndarray) -> Batch:
        """``collate([self[i] for i in indices])``, the ids of all the pairs
        gathered from the arrays at once rather than a list per pair."""
        rows = np.asarray(indices, dtype=np.int64)
        if self.rows is not None:
            rows = self.rows[rows]
        (src_ids, src_lengths), (tgt_ids, tgt_lengths) = (
            self._gather(side, rows) for side in SIDES
        )
        return collate_flat(src_ids, src_lengths, tgt_ids, tgt_lengths)

    def _gather(self, side: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the ids of array pairs ``rows`` one after another, their lengths)."""
        offsets = self.offsets[side]
        starts = offsets[rows]
        lengths = offsets[rows + 1] - starts
        # the position of every id: its row's start plus its place in the row
        within = np.arange(lengths.sum()) - np.repeat(
            np.cumsum(lengths) - lengths, lengths
        )
        return self.tokens[side][np.repeat(starts, lengths) + within], lengths

    def _sequence(self, side: str, row: int) -> list[int]:
        start, end = self.offsets[side][row : row + 2]
        return self.tokens[side][start:end].tolist()

    def subset(self, keep: np.ndarray) -> EncodedPairs:
        """The pairs where the boolean ``keep`` is True, in their order."""
        rows = np.flatnonzero(keep)
        if self.rows is not None:
            rows = self.rows[rows]
        return EncodedPairs(self.tokens, self.offsets, rows)


def map_array(path: Path, dtype: np.dtype, random_access: bool = False) -> np.ndarray:
    """A whole raw array file, mapped read-only (an empty file: no pages).

    ``random_access`` tells the kernel not to read ahead: batches gather
    pairs from all over the token arrays, and reading ahead around each
    would read from disk many times the bytes a batch needs.
    """
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if random_access and hasattr(mmap, "MADV_RANDOM"):  # not on Windows
        mapped.madvise(mmap.MADV_RANDOM)
    return np.frombuffer(mapped, dtype=dtype)


class SplitWriter:
    """Appends encoded pairs to a split's four files, then closes them
    flushed to disk; ``close`` gives the files' fingerprints
    (``rosetta.runtime.fingerprint``), hashed as they are written."""

    def __init__(
        self,
        folder: Path,
        split: str,
        dtype: np.dtype,
        sides: tuple[str, ...] = SIDES,
    ):
        self.dtype, self.sides = dtype, sides
        self.paths = {
            f"{side}.{kind}": folder / f"{split}.{side}.{kind}"
            for side in sides
            for kind in ("tokens", "offsets")
        }
        self.files: dict[str, BinaryIO] = {
            name: open(path, "xb")  # noqa: SIM115 (closed by close())
            for name, path in self.paths.items()
        }
        self.hashes = {name: xxhash.xxh3_128() for name in self.paths}
        self.ends = {side: 0 for side in sides}
        self.count = 0
        for side in sides:
            self._write(f"{side}.offsets", np.zeros(1, OFFSET_TYPE))

    def add(self, *by_side: Sequence[Sequence[int]]) -> None:
        """Sequences of every side (for pairs: sources, targets), appended in
        order: item i of each side belongs together."""
        for side, sequences in zip(self.sides, by_side, strict=True):
            lengths = np.fromiter(map(len, sequences), OFFSET_TYPE, len(sequences))
            offsets = self.ends[side] + np.cumsum(lengths, dtype=OFFSET_TYPE)
            total = int(lengths.sum())
            ids = np.fromiter(chain.from_iterable(sequences), self.dtype, total)
            self._write(f"{side}.tokens", ids)
            self._write(f"{side}.offsets", offsets)
            self.ends[side] += total
        self.count += len(by_side[0])

    def _write(self, name: str, array: np.ndarray) -> None:
        data = array.tobytes()
        self.files[name].write(data)
        self.hashes[name].update(data)

    def close(self) -> dict[str, str]:
        """Flushed and synced; the files' fingerprints by name (``src.tokens``
        ...)."""
        for handle in self.files.values():
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        return {name: digest.hexdigest() for name, digest in self.hashes.items()}
