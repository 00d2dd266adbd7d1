"""Reference fertilities for training a non-autoregressive model: how many
target tokens each source token accounts for, read from word alignments of
the training pairs on the model's own tokens (``rosetta.families.nat.align``), found
once and kept in the run folder (``alignments.txt``).

The fertilities themselves are kept too, in flat arrays beside the token
store (``fertilities/``, ``stored_fertilities``), so that a training start
maps them instead of reading every pair and alignment again."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rosetta.data.batching import Example
from rosetta.data.content import sha256_of
from rosetta.data.encoded_pairs import EncodedPairs, SplitWriter, map_array
from rosetta.data.store import MANIFEST_FILE, STORE_DIR
from rosetta.data.store_checks import rows_problem
from rosetta.errors import RosettaError
from rosetta.families.nat.align import align, fertilities_from_links, parse_links
from rosetta.families.nat.config import ALIGNMENTS_FILE, FERTILITY_DIR
from rosetta.runtime.atomic import atomic_folder, write_text_atomic
from rosetta.runtime.own_files import is_real_folder_in, remove_own_folder
from rosetta.runtime.records import read_record

FERTILITY = ("fertility",)  # the arrays' one side


def token_lines(examples: list[Example]) -> tuple[list[str], list[str]]:
    """The pairs as the aligner reads them: token ids separated by spaces."""
    return (
        [" ".join(map(str, e.src)) for e in examples],
        [" ".join(map(str, e.tgt)) for e in examples],
    )


def reference_fertilities(
    examples: list[Example],
    max_fertility: int,
    run_dir: Path,
    log: Callable[[str], None] = print,
) -> list[list[int]]:
    """Each pair's source-token fertilities, from alignments kept in
    ``run_dir`` (made with eflomal when missing or made for other pairs)."""
    sources, targets = token_lines(examples)
    digest = hashlib.sha256(
        "\n".join(f"{s}\t{t}" for s, t in zip(sources, targets, strict=True)).encode()
    ).hexdigest()
    path = run_dir / ALIGNMENTS_FILE
    lines: list[str] | None = None
    if path.is_file() and not path.is_symlink():  # a link is not followed
        header, *rest = path.read_text(encoding="utf-8").splitlines() or [""]
        if alignments_made_for(header) == digest and len(rest) == len(examples):
            lines = rest
            log(f"alignments: loaded from {path}")
    if lines is None:  # written in place of what was there, never through it
        log(f"alignments: aligning {len(examples):,} pairs with eflomal")
        links = align(sources, targets)
        lines = [" ".join(f"{i}-{j}" for i, j in pair) for pair in links]
        header = json.dumps({"pairs_sha256": digest, "aligner": "eflomal"})
        write_text_atomic(path, "\n".join([header, *lines]) + "\n")
    found = []
    for number, (line, example) in enumerate(
        zip(lines, examples, strict=True), start=2
    ):
        where = f"{path}, line {number}"
        try:
            found.append(
                fertilities_from_links(
                    parse_links(line, where),
                    len(example.src),
                    len(example.tgt),
                    max_fertility,
                )
            )
        except ValueError as error:  # a link outside its pair: an edited file
            raise RosettaError(f"{where}: {error}; delete it to align again") from None
    return found


def fits(
    src_lengths: np.ndarray, tgt_lengths: np.ndarray, max_fertility: int
) -> np.ndarray:
    """Which pairs' source tokens can account for their whole target."""
    return tgt_lengths <= src_lengths * max_fertility


class Fertilities:
    """Every pair's fertilities, one per source token, in flat arrays."""

    def __init__(self, values: np.ndarray, offsets: np.ndarray):
        self.values, self.offsets = values, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> list[int]:
        start, end = self.offsets[index : index + 2]
        return self.values[start:end].tolist()


def stored_fertilities(
    train: EncodedPairs,
    valid: EncodedPairs,
    max_fertility: int,
    run_dir: Path,
    log: Callable[[str], None] = print,
) -> tuple[Fertilities, Fertilities]:
    """The fertilities of ``train`` and ``valid`` (pairs of the run's token
    store that fit ``max_fertility``), mapped from ``run_dir/fertilities``;
    found from the alignments (``reference_fertilities``) and stored there
    first when missing, made for another store or limit, or damaged."""
    folder = run_dir / FERTILITY_DIR
    made_for = {
        "store_manifest_sha256": sha256_of(run_dir / STORE_DIR / MANIFEST_FILE),
        "max_fertility": max_fertility,
    }
    dtype = np.dtype(np.uint8 if max_fertility < 2**8 else "<i4")
    pairs = {"train": train, "valid": valid}
    found = None
    if made_for_this(folder, made_for):
        found = mapped_fertilities(folder, pairs, dtype, max_fertility)
    if found is None:  # missing, made for another store or limit, or damaged
        if made_for_this(folder, made_for):  # damaged: found again
            remove_own_folder(folder, folder.parent)
        both = reference_fertilities([*train, *valid], max_fertility, run_dir, log)
        splits = {"train": both[: len(train)], "valid": both[len(train) :]}
        store_once(folder, splits, dtype, made_for)
        found = mapped_fertilities(folder, pairs, dtype, max_fertility)
    if found is None:
        raise RosettaError(
            f"{folder}: the fertilities there do not fit the pairs; delete the "
            "folder to find them again"
        )
    return found["train"], found["valid"]


def mapped_fertilities(
    folder: Path,
    pairs: dict[str, EncodedPairs],
    dtype: np.dtype,
    max_fertility: int,
) -> dict[str, Fertilities] | None:
    """Each split's fertilities mapped from ``folder``, if they are what
    ``store_once`` wrote for ``pairs``: one per source token, each at most
    ``max_fertility``, adding up to the target's length; None otherwise
    (a checked manifest does not vouch for arrays changed beside it)."""
    found = {}
    for split, rows in pairs.items():
        why, count = rows_problem(
            folder, f"{split}.fertility", dtype, max_fertility + 1
        )
        if why is not None or count != len(rows):
            return None
        offsets = map_array(folder / f"{split}.fertility.offsets", np.dtype("<i8"))
        values = map_array(
            folder / f"{split}.fertility.tokens", dtype, random_access=True
        )
        if not np.array_equal(np.diff(offsets), rows.src_lengths):
            return None
        totals = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
        sums = totals[offsets[1:]] - totals[offsets[:-1]]  # each pair's total
        if not np.array_equal(sums, rows.tgt_lengths):
            return None
        found[split] = Fertilities(values, offsets)
    return found


def alignments_made_for(header: str) -> str | None:
    """The pairs an alignments file was made for (None: not a header we
    wrote; the alignments are then made again)."""
    try:
        record = json.loads(header)
    except (ValueError, RecursionError):  # nested past the parser's stack
        return None
    return record.get("pairs_sha256") if isinstance(record, dict) else None


def made_for_this(folder: Path, made_for: dict[str, Any]) -> bool:
    if not is_real_folder_in(folder, folder.parent):
        return False
    try:
        return read_record(folder / MANIFEST_FILE, Any, "a record") == made_for
    except (OSError, RosettaError):  # missing or damaged: made again
        return False


def store_once(
    folder: Path,
    splits: dict[str, list[list[int]]],
    dtype: np.dtype,
    made_for: dict[str, Any],
) -> None:
    """Write the arrays beside ``folder``, then move them there. Every
    process of a run finds the same fertilities: the first to finish stores
    them, and the others keep what it stored."""
    stale = folder.exists() or folder.is_symlink()
    stale = stale and not made_for_this(folder, made_for)  # for another store
    if stale and not remove_own_folder(folder, folder.parent):
        raise RosettaError(f"{folder}: not a folder of the run; move it away")
    with atomic_folder(folder, replace=False) as writing:
        for split, rows in splits.items():
            writer = SplitWriter(writing, split, dtype, FERTILITY)
            writer.add(rows)
            writer.close()
        with open(writing / MANIFEST_FILE, "w", encoding="utf-8") as handle:
            json.dump(made_for, handle)
            handle.flush()
            os.fsync(handle.fileno())
