"""Parallel corpora from the Hugging Face hub, through the ``datasets``
library (an optional extra: ``pip install 'rosetta-nmt[datasets]'``).

A corpus section ``{hf: wmt14, config: de-en, split: train}`` names a hub
dataset; ``hf`` may also be a folder written by ``Dataset.save_to_disk``.
Each row holds the pair either in a ``translation`` column (a mapping from
language code to sentence, as WMT and OPUS datasets on the hub do) or in two
columns; ``columns`` names the two keys (by default ``data.src_lang`` and
``data.tgt_lang``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosetta.errors import RosettaError

if TYPE_CHECKING:
    from rosetta.config.sections import CorpusFiles

ROWS_PER_READ = 10_000


def describe(files: CorpusFiles) -> str:
    parts = [files.hf, files.config, files.split]
    return "hf:" + "/".join(part for part in parts if part)


def load(files: CorpusFiles) -> Any:
    """The split as a ``datasets.Dataset`` (Arrow files, memory-mapped)."""
    try:
        import datasets
    except ImportError:
        raise RosettaError(
            f"{describe(files)}: reading a Hugging Face dataset needs the "
            "datasets package: pip install 'rosetta-nmt[datasets]'"
        ) from None
    assert files.hf is not None
    try:
        if Path(files.hf).is_dir():
            loaded = datasets.load_from_disk(files.hf)
        else:
            loaded = datasets.load_dataset(files.hf, files.config, split=files.split)
    except Exception as error:  # not found, offline, a broken cache
        raise RosettaError(f"{describe(files)}: cannot be loaded: {error}") from None
    if isinstance(loaded, datasets.DatasetDict):
        if files.split not in loaded:
            raise RosettaError(
                f"{describe(files)}: choose a split ('split'): {', '.join(loaded)}"
            )
        loaded = loaded[files.split]
    return loaded


def stream_hf(files: CorpusFiles) -> Iterator[tuple[str, str]]:
    """The dataset's (source, target) pairs, a batch of rows at a time."""
    dataset = load(files)
    assert files.columns is not None
    src_key, tgt_key = files.columns
    nested = "translation" in dataset.column_names
    if not nested and not {src_key, tgt_key} <= set(dataset.column_names):
        raise RosettaError(
            f"{describe(files)}: no 'translation' column and no columns "
            f"'{src_key}' and '{tgt_key}' (it has {', '.join(dataset.column_names)}); "
            "name them with 'columns'"
        )
    if not len(dataset):
        raise RosettaError(f"{describe(files)}: empty corpus")
    for start in range(0, len(dataset), ROWS_PER_READ):
        rows = dataset[start : start + ROWS_PER_READ]
        if nested:
            for number, pair in enumerate(rows["translation"], start=start):
                yield pair_of(pair, src_key, tgt_key, files, number)
        else:
            pairs = zip(rows[src_key], rows[tgt_key], strict=True)
            for number, (src, tgt) in enumerate(pairs, start=start):
                yield two_strings(src, tgt, files, number)


def pair_of(
    pair: dict[str, str], src_key: str, tgt_key: str, files: CorpusFiles, row: int
) -> tuple[str, str]:
    if not isinstance(pair, dict) or src_key not in pair or tgt_key not in pair:
        keys = ", ".join(pair) if isinstance(pair, dict) else repr(pair)
        raise RosettaError(
            f"{describe(files)}, row {row}: its translation has "
            f"{keys}, not '{src_key}' and '{tgt_key}'; name the keys "
            "with 'columns' or set data.src_lang and data.tgt_lang"
        )
    return two_strings(pair[src_key], pair[tgt_key], files, row)


def two_strings(src: Any, tgt: Any, files: CorpusFiles, row: int) -> tuple[str, str]:
    """A row's pair, which must be two strings (not a missing cell, None, a
    number)."""
    for side, value in (("source", src), ("target", tgt)):
        if not isinstance(value, str):
            raise RosettaError(
                f"{describe(files)}, row {row}: its {side} is {value!r}, not text"
            )
    return src, tgt


def record(files: CorpusFiles) -> dict[str, Any]:
    """What identifies the split's content: the dataset's fingerprint."""
    dataset = load(files)
    return {
        "path": describe(files),
        "rows": len(dataset),
        "fingerprint": dataset._fingerprint,
    }


def changed(recorded: dict[str, Any], files: CorpusFiles) -> str | None:
    if record(files) != recorded:
        return f"{describe(files)} changed since it was encoded"
    return None
