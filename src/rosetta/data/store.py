"""A run's token store: its corpora encoded once, in the run folder's
``store/``, which every training process memory-maps.

``build_store`` streams each corpus (constant memory for any size), encodes
it in batches on several threads, drops empty and over-long pairs as it goes
and writes the arrays (``rosetta.data.encoded_pairs``) into a temporary
folder that takes the place of ``store/`` only when complete: a prepare that
is killed or fails (a full disk) leaves no store that training would use.

``manifest.json`` records what the arrays were made from (every corpus
file's path, size and fingerprint; the tokenizers' SHA-256; the length
filter) and each array file's size and fingerprint. At every
start the corpora and arrays are fingerprinted again (``rosetta.runtime.
fingerprint``: by content, an edit that keeps size and time included): a
changed corpus, tokenizer or array is refused, never silently trained on.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from rosetta.config.sections import CorpusFiles
from rosetta.data.content import (
    ArrayRecord,
    FileRecord,
    changed_corpus,
    corpus_records,
    same_content,
)
from rosetta.data.corpus import FilterReport, corpus_name, stream_corpus
from rosetta.data.encoded_pairs import (
    SIDES,
    EncodedPairs,
    SplitWriter,
    map_array,
    token_type,
)
from rosetta.data.tokenizer import TokenizerPair
from rosetta.errors import RosettaError
from rosetta.runtime.atomic import atomic_folder
from rosetta.runtime.fingerprint import KIND
from rosetta.runtime.records import Record, parse_record, read_checked

STORE_DIR = "store"
MANIFEST_FILE = "manifest.json"
FORMAT = 1
CHUNK_PAIRS = 8192  # pairs encoded per batched tokenizer call
TEXT_SIDE = "text"  # a text store's one side: the whole text, one sequence


@dataclass(frozen=True)
class StoreRecipe:
    """What a store is made from: the corpora by split, the tokenizers (and
    the SHA-256 of the file they are saved in) and the length limit."""

    splits: dict[str, CorpusFiles]
    tokenizers: TokenizerPair
    tokenizers_sha256: str
    max_len: int
    # the source's and target's language codes, where each side's texts start
    # with a language token (``LanguageTagged``)
    languages: list[str] | None = None

    @property
    def dtype(self) -> np.dtype:
        return token_type(max(len(self.tokenizers.src), len(self.tokenizers.tgt)))

    def header(self) -> dict[str, Any]:
        """The manifest's fields that must equal the recipe's."""
        return {
            "format": FORMAT,
            "tokenizers_sha256": self.tokenizers_sha256,
            "max_len": self.max_len,
            "token_type": self.dtype.str,
            "splits": sorted(self.splits),
            "languages": self.languages,
        }


class Manifest(Record):
    """A store's ``manifest.json``, as ``build_store`` writes it."""

    format: int
    tokenizers_sha256: str
    max_len: int
    token_type: str
    splits: list[str]
    languages: list[str] | None = None
    corpora: dict[str, list[dict[str, Any]]]
    arrays: dict[str, ArrayRecord]


def stale_reason(folder: Path, recipe: StoreRecipe) -> str | None:
    """Why the store in ``folder`` may not be used for ``recipe``, if not:
    its manifest, the corpora's content or the arrays' content differ."""
    try:
        manifest = read_checked(folder / MANIFEST_FILE, Manifest, "a store manifest")
        return _stale_reason(folder, manifest, recipe)
    except RosettaError as error:
        return str(error)


def _stale_reason(
    folder: Path, manifest: dict[str, Any], recipe: StoreRecipe
) -> str | None:
    header = recipe.header()
    for key, value in header.items():
        if manifest.get(key) != value:
            return f"it was made with another {key.replace('_', ' ')}"
    for split, files in recipe.splits.items():
        recorded = manifest["corpora"].get(split)
        if recorded is None:
            return f"its manifest has no corpus for {split}"
        if files.hf is None:
            where = str(folder / MANIFEST_FILE)
            for record in recorded:
                parse_record(record, FileRecord, where, "a corpus file's record")
        if (why := changed_corpus(recorded, files)) is not None:
            return why
    if (name := changed_array(folder, manifest)) is not None:
        return f"{name} is not what was encoded (missing, cut or changed)"
    return None


def refusal(folder: Path, why: str) -> RosettaError:
    """The error for a store that no longer matches the configuration."""
    return RosettaError(
        f"{folder}: the token store does not match the configuration: {why}; "
        "run `rosetta prepare` on this folder again to encode the corpora "
        "anew, or train into a new folder"
    )


def open_store(run_dir: Path, recipe: StoreRecipe) -> dict[str, EncodedPairs]:
    """Every split of the run's store, memory-mapped (checked beforehand:
    ``stale_reason``)."""
    folder = run_dir / STORE_DIR
    return {
        split: EncodedPairs.open(folder, split, recipe.dtype) for split in recipe.splits
    }


def open_text_store(run_dir: Path, recipe: StoreRecipe) -> dict[str, np.ndarray]:
    """Every split's token ids of a text store (one sequence per split),
    memory-mapped (checked beforehand: ``stale_reason``)."""
    folder = run_dir / STORE_DIR
    return {
        split: map_array(folder / f"{split}.{TEXT_SIDE}.tokens", recipe.dtype)
        for split in recipe.splits
    }


def changed_array(folder: Path, manifest: dict[str, Any]) -> str | None:
    """The first array file whose content is not what the manifest records
    (ids shuffled in place, offsets overwritten), if there is one."""
    for name, record in manifest["arrays"].items():
        if not same_content(folder / name, record):
            return name
    return None


def chunks(pairs: Iterator[tuple[str, str]]) -> Iterator[list[tuple[str, str]]]:
    while chunk := list(islice(pairs, CHUNK_PAIRS)):
        yield chunk


# fills a split's writer; returns what the manifest keeps of it (the filter report)
SplitEncoder = Callable[[str, CorpusFiles, SplitWriter], dict[str, Any]]


def pairs_encoder(
    recipe: StoreRecipe, threads: int, log: Callable[[str], None]
) -> SplitEncoder:
    """Encodes a parallel corpus into a split (``stream_pairs_into``), with
    a progress bar and its filter report."""

    def encode(split: str, files: CorpusFiles, writer: SplitWriter) -> dict[str, Any]:
        bar = tqdm(
            desc=f"encoding {split}",
            unit=" pairs",
            unit_scale=True,
            mininterval=1.0,
            disable=None,  # no bar where the output is not a terminal
        )
        try:
            report = stream_pairs_into(writer, files, recipe, threads, bar)
        finally:
            bar.close()
        log(f"{split}: {corpus_name(files)}: {report.summary()}")
        if split == "train" and not report.kept:
            raise RosettaError(
                f"{corpus_name(files)}: every pair was filtered out "
                f"({report.summary()})"
            )
        return vars(report)

    return encode


def stream_pairs_into(
    writer: SplitWriter,
    files: CorpusFiles,
    recipe: StoreRecipe,
    threads: int,
    progress: tqdm,
) -> FilterReport:
    """Stream a corpus into ``writer``: empty pairs and pairs whose source or
    target takes more than ``max_len`` tokens with its ``<eos>`` are dropped
    and counted, as everywhere in Rosetta."""
    report = FilterReport()
    tokenizers, limit = recipe.tokenizers, recipe.max_len
    too_long = f"longer than {limit} tokens"
    for chunk in chunks(stream_corpus(files)):
        report.read += len(chunk)
        texts = [(s, t) for s, t in chunk if s.strip() and t.strip()]
        for _ in range(len(chunk) - len(texts)):
            report.drop("empty")
        src = tokenizers.src.encode_many([s for s, _ in texts], threads)
        tgt = tokenizers.tgt.encode_many([t for _, t in texts], threads)
        kept = [
            i for i in range(len(src)) if len(src[i]) < limit and len(tgt[i]) < limit
        ]
        for _ in range(len(src) - len(kept)):
            report.drop(too_long)
        writer.add([src[i] for i in kept], [tgt[i] for i in kept])
        progress.update(len(chunk))
    report.kept = writer.count
    return report


def build_store(
    run_dir: Path,
    recipe: StoreRecipe,
    encode: SplitEncoder,
    sides: tuple[str, ...] = SIDES,
) -> None:
    """Encode every split of ``recipe`` into ``run_dir/store`` (``encode``
    fills each split's writer), replacing a store that was there only once
    the new one is complete."""
    target = run_dir / STORE_DIR
    for leftover in run_dir.glob(f".{STORE_DIR}.*.tmp"):  # a killed prepare's
        shutil.rmtree(leftover, ignore_errors=True)
    corpora = {  # recorded before reading: a file changed meanwhile is stale
        split: corpus_records(files) for split, files in recipe.splits.items()
    }
    arrays: dict[str, dict[str, Any]] = {}
    encoded: dict[str, dict[str, Any]] = {}
    with atomic_folder(target) as folder:
        for split, files in recipe.splits.items():
            writer = SplitWriter(folder, split, recipe.dtype, sides)
            try:
                encoded[split] = encode(split, files, writer)
            finally:
                digests = writer.close()
            for name, digest in digests.items():
                path = writer.paths[name]
                arrays[path.name] = {"bytes": path.stat().st_size, KIND: digest}
        manifest = {
            **recipe.header(),
            "corpora": corpora,
            "encoded": encoded,
            "arrays": arrays,
        }
        with open(folder / MANIFEST_FILE, "w", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
