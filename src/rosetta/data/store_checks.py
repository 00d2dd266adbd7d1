"""Flat arrays Rosetta wrote and maps again (a token store's, the NAT
fertilities'), checked for what their content must be before any is used.

Their records hold fingerprints, but a record can be rewritten to fit, as a
careless tool would, and a wrong array fails nowhere near where it is read:
an offset out of order or past the end, or an id outside the vocabulary,
makes batches of other pairs' tokens, or an index error deep in training.
So each array must be a plain file of whole items (never a link, never a
FIFO), offsets must start at 0, never go back and end at the ids' count, and
ids must lie inside the vocabulary. Each check says why not, or None.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from rosetta.data.encoded_pairs import OFFSET_TYPE, map_array

IDS_LIMIT = 2**16  # ids a uint16 array can hold (its values cannot go past)


def file_problem(path: Path, dtype: np.dtype) -> str | None:
    """Why ``path`` cannot be mapped as an array of ``dtype``, if it cannot."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "is missing"
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link, not a file Rosetta wrote"
    if not stat.S_ISREG(info.st_mode):
        return "is not a plain file"
    if info.st_size % dtype.itemsize:
        return f"is cut short ({info.st_size} bytes, not whole {dtype} items)"
    return None


def offsets_problem(offsets: np.ndarray, count: int, ids: str) -> str | None:
    """Why ``offsets`` do not split the ``count`` ids of the file ``ids``
    into rows, if they do not."""
    if len(offsets) == 0:
        return "are empty"
    if offsets[0] != 0:
        return "do not start at 0"
    if len(offsets) > 1 and bool((offsets[1:] < offsets[:-1]).any()):
        return "go back (out of order)"
    if offsets[-1] != count:
        return f"end at {int(offsets[-1])}, not at the {count} ids of {ids}"
    return None


def ids_problem(ids: np.ndarray, limit: int) -> str | None:
    """Why ``ids`` are not all in ``0..limit - 1``, if they are not."""
    if not len(ids) or (ids.dtype.itemsize == 2 and limit >= IDS_LIMIT):
        return None
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= limit:
        return f"hold id {high if high >= limit else low}, outside 0..{limit - 1}"
    return None


def rows_problem(
    folder: Path, prefix: str, dtype: np.dtype, limit: int
) -> tuple[str | None, int]:
    """Why ``PREFIX.offsets`` and ``PREFIX.tokens`` in ``folder`` are not rows
    of ids below ``limit``, if they are not; and how many rows they hold."""
    for kind, kind_type in (("offsets", OFFSET_TYPE), ("tokens", dtype)):
        if why := file_problem(folder / f"{prefix}.{kind}", kind_type):
            return f"{prefix}.{kind} {why}", 0
    offsets = map_array(folder / f"{prefix}.offsets", OFFSET_TYPE)
    ids = map_array(folder / f"{prefix}.tokens", dtype)
    if why := offsets_problem(offsets, len(ids), f"{prefix}.tokens"):
        return f"{prefix}.offsets {why}", 0
    if why := ids_problem(ids, limit):
        return f"{prefix}.tokens {why}", 0
    return None, len(offsets) - 1


def store_problem(
    folder: Path, splits: list[str], limits: dict[str, int], dtype: np.dtype
) -> str | None:
    """Why the arrays of a token store in ``folder`` cannot be used, if they
    cannot: ``limits`` gives each side's vocabulary size (``src``, ``tgt``;
    a text store's one side)."""
    for split in splits:
        counts = set()
        for side, limit in limits.items():
            why, rows = rows_problem(folder, f"{split}.{side}", dtype, limit)
            if why is not None:
                return why
            counts.add(rows)
        if len(counts) > 1:
            return f"the sides of {split} hold different numbers of pairs"
    return None
