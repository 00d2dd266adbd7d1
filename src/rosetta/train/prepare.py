"""Everything a run needs before the first step: tokenizers, and the
corpora encoded into the run's token store (``rosetta.data.store``): pairs
(translation) or token ids (a language model's text); a translation
corpus's languages, identified (``rosetta.train.corpus_census``).

``rosetta prepare`` calls this alone; ``rosetta train`` reuses the saved
tokenizers and store, or makes them on the fly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError
from tqdm import tqdm

from rosetta.config.sections import CorpusFiles, TokenizerConfig
from rosetta.data.batching import make_batches, padding_share
from rosetta.data.content import sha256_of
from rosetta.data.corpus import read_corpus, stream_corpus
from rosetta.data.encoded_pairs import EncodedPairs, SplitWriter
from rosetta.data.store import (
    STORE_DIR,
    TEXT_SIDE,
    StoreRecipe,
    build_store,
    open_store,
    open_text_store,
    pairs_encoder,
    refusal,
    stale_reason,
)
from rosetta.data.store_checks import store_problem
from rosetta.data.text import encode_text, text_blocks
from rosetta.data.tokenizer import TokenizerPair, train_tokenizer
from rosetta.errors import RosettaError
from rosetta.runtime.atomic import write_json_atomic
from rosetta.runtime.records import Record, read_checked
from rosetta.train.corpus_census import CorpusCensus

if TYPE_CHECKING:
    from rosetta.config.schema import Config

TOKENIZER_FILE = "tokenizers.json"


@dataclass(frozen=True)
class PrepareOptions:
    """How ``rosetta prepare`` asks for more than training does: ``workers``
    threads encode (None: every core); ``refresh`` encodes again a store
    that no longer matches the configuration (training refuses one)."""

    workers: int | None = None
    refresh: bool = False


@dataclass
class PreparedData:
    """A translation run's data: the tokenizers, the encoded training and
    validation pairs (memory-mapped from the run's token store), and the
    validation pairs as text, for BLEU."""

    tokenizers: TokenizerPair
    train: EncodedPairs
    valid_pairs: list[tuple[str, str]]
    valid: EncodedPairs


@dataclass
class PreparedText:
    tokenizers: TokenizerPair  # one tokenizer, joint
    train: np.ndarray  # the token ids, memory-mapped
    valid: np.ndarray


NO_TOKENS = np.zeros(0, dtype=np.int64)


class TokenizerFile(Record):
    """A run's ``tokenizers.json``: the settings and the tokenizers."""

    config: dict[str, Any]
    tokenizers: dict[str, Any]


def require_corpus(config: Config) -> None:
    """Training and ``prepare`` need ``data.train`` (an imported model's
    configuration has none)."""
    if config.data.train is None:
        raise RosettaError(
            "data.train: no training corpus in the configuration; training "
            "and prepare need one"
        )


def made_with(state: dict[str, Any]) -> TokenizerConfig | None:
    """The settings saved tokenizers were made with (keys added to Rosetta
    since then take their defaults), or None if they cannot be read."""
    try:
        return TokenizerConfig(**state.get("config", {}))
    except (TypeError, ValidationError):
        return None


def load_or_train_tokenizers(
    config: Config, run_dir: Path, train: Callable[[], TokenizerPair], log=print
) -> TokenizerPair:
    path = run_dir / TOKENIZER_FILE
    if path.is_file():
        state = read_checked(path, TokenizerFile, "a run's tokenizers file")
        if made_with(state) != config.tokenizer:
            raise RosettaError(
                f"{path} was made with other tokenizer settings; delete it or "
                "use another output folder"
            )
        log(f"tokenizers: loaded from {path}")
        return TokenizerPair.from_dict(state["tokenizers"], str(path))
    tok = config.tokenizer
    layout = "joint" if tok.joint else "separate"
    if tok.kind == "char":
        log("tokenizers: collecting the characters")
    elif tok.kind == "word":
        log(f"tokenizers: counting words (at most {tok.vocab_size:,}, {layout})")
    else:
        log(
            f"tokenizers: training {tok.kind} "
            f"({tok.model_type}, {tok.vocab_size:,}, {layout})"
        )
    tokenizers = train()
    smallest = min(len(tokenizers.src), len(tokenizers.tgt))
    if tok.kind != "char" and smallest < tok.vocab_size:
        log(
            f"tokenizers: {smallest:,} entries, fewer than tokenizer.vocab_size "
            f"({tok.vocab_size:,}): the corpus offers no more worth adding"
        )
    write_tokenizer_file(run_dir, config.tokenizer, tokenizers.to_dict())
    return tokenizers


def write_tokenizer_file(
    run_dir: Path, settings: TokenizerConfig, tokenizers: dict[str, Any]
) -> None:
    """A run's ``tokenizers.json`` (``TokenizerFile``): the settings and the
    tokenizers' record."""
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {"config": settings.model_dump(mode="json"), "tokenizers": tokenizers}
    write_json_atomic(run_dir / TOKENIZER_FILE, record)


def default_workers() -> int:
    """Every core this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


def log_batching(train: EncodedPairs, batch_tokens: int, log: Callable[[str], None]):
    lengths = train.src_lengths, train.tgt_lengths
    batches = make_batches(*lengths, batch_tokens)
    log(
        f"train: {len(train):,} pairs, {len(batches):,} batches of <= "
        f"{batch_tokens} tokens, padding {padding_share(*lengths, batches):.1%}"
    )


def prepare_data(
    config: Config,
    run_dir: Path,
    log: Callable[[str], None] = print,
    options: PrepareOptions = PrepareOptions(),
) -> PreparedData:
    """The tokenizers (trained on the streamed corpus, or loaded) and the
    run's token store (``rosetta.data.store``), encoded if missing, or if it
    no longer matches the configuration and ``options.refresh``; mapped,
    not read."""
    data = config.data
    census = CorpusCensus(run_dir)  # its identifier reads its model meanwhile
    tokenizers = load_or_train_tokenizers(
        config,
        run_dir,
        lambda: TokenizerPair.train_streamed(
            lambda: stream_corpus(data.train), config.tokenizer
        ),
        log,
    )
    log(f"vocabulary: source {len(tokenizers.src)}, target {len(tokenizers.tgt)}")
    splits = {"train": data.train}
    if data.valid is not None:
        splits["valid"] = data.valid
    tokenizers_sha256 = sha256_of(run_dir / TOKENIZER_FILE)
    # a multilingual model's corpus: each side starts with its language's token
    tagged = tokenizers.tagged(data.src_lang, data.tgt_lang)
    encoding, languages = tagged or (tokenizers, None)
    recipe = StoreRecipe(splits, encoding, tokenizers_sha256, data.max_len, languages)
    threads = options.workers or default_workers()
    encode = pairs_encoder(recipe, threads, log)
    sides = {"src": len(tokenizers.src), "tgt": len(tokenizers.tgt)}
    build = lambda: build_store(run_dir, recipe, encode)  # noqa: E731
    built = ensure_store(run_dir, recipe, options, build, log, sides)
    census.record(data, built, log)
    store = open_store(run_dir, recipe)
    train = store["train"]
    if built:
        log_batching(train, config.train.batch_tokens, log)
    else:
        log(f"train: {len(train):,} pairs from the token store")
    valid_pairs: list[tuple[str, str]] = []
    if data.valid is not None:  # the text itself, for BLEU
        valid_pairs = [p for p in read_corpus(data.valid) if p[0].strip()]
    valid = store.get("valid", EncodedPairs.from_examples([]))
    return PreparedData(tokenizers, train, valid_pairs, valid)


def prepare_text(
    config: Config,
    run_dir: Path,
    log: Callable[[str], None] = print,
    options: PrepareOptions = PrepareOptions(),
) -> PreparedText:
    """A language model's data: its tokenizer and the token ids of the
    training and validation texts, each encoded once into the run's token
    store, a block of lines at a time, and mapped from there (``options`` as
    for ``prepare_data``; a text is encoded on one thread)."""
    data = config.data
    texts = {"train": data.train}
    if data.valid is not None:
        texts["valid"] = data.valid

    def blocks(split: str) -> Iterator[str]:
        path = texts[split].text
        assert path is not None
        lines = config.tokenizer.kind != "char"
        if split != "train":
            return text_blocks(path, lines_only=lines)
        return not_blank(path, lines)

    def train() -> TokenizerPair:
        # characters include the line break; pieces and words are per line
        text = blocks("train")
        if config.tokenizer.kind != "char":
            text = (line for block in text for line in block.splitlines())
        tokenizer = train_tokenizer(text, config.tokenizer)
        return TokenizerPair(tokenizer, tokenizer)

    tokenizers = load_or_train_tokenizers(config, run_dir, train, log)
    log(f"vocabulary: {len(tokenizers.tgt)}")
    tokenizers_sha256 = sha256_of(run_dir / TOKENIZER_FILE)
    recipe = StoreRecipe(texts, tokenizers, tokenizers_sha256, max_len=0)

    def encode(split: str, files: CorpusFiles, writer: SplitWriter) -> dict[str, int]:
        characters = 0
        with tqdm(
            desc=f"encoding {split}", unit=" chars", unit_scale=True, disable=None
        ) as bar:
            for block in blocks(split):
                writer.add([encode_text(tokenizers.tgt, block)])
                characters += len(block)
                bar.update(len(block))
        tokens = writer.ends[TEXT_SIDE]
        log(f"{split}: {files.text}: {characters:,} characters, {tokens:,} tokens")
        return {"characters": characters, "tokens": tokens}

    store_text = lambda: build_store(run_dir, recipe, encode, (TEXT_SIDE,))  # noqa: E731
    sides = {TEXT_SIDE: len(tokenizers.tgt)}
    if not ensure_store(run_dir, recipe, options, store_text, log, sides):
        log("train: the token store's text")
    store = open_text_store(run_dir, recipe)
    return PreparedText(tokenizers, store["train"], store.get("valid", NO_TOKENS))


def not_blank(path: Path, lines: bool = False) -> Iterator[str]:
    """The text's blocks (``text_blocks``); an error at its end if all of
    it was blank."""
    blank = True
    for block in text_blocks(path, lines_only=lines):
        blank = blank and not block.strip()
        yield block
    if blank:
        raise RosettaError(f"{path}: the text is empty")


def ensure_store(
    run_dir: Path,
    recipe: StoreRecipe,
    options: PrepareOptions,
    build: Callable[[], None],
    log: Callable[[str], None],
    sides: dict[str, int],
) -> bool:
    """``build`` the run's token store if there is none, or if it no longer
    matches ``recipe`` or its arrays are damaged (``sides``: each side's
    vocabulary size, which its ids stay below), and ``options.refresh``;
    whether it did. Such a store without ``refresh`` is refused."""
    folder = run_dir / STORE_DIR
    why = stale_reason(folder, recipe) if folder.exists() else "there is none yet"
    if why is None:  # its manifest may have been rewritten to fit the arrays
        why = store_problem(folder, sorted(recipe.splits), sides, recipe.dtype)
    if why is None:
        return False
    if folder.exists() and not options.refresh:
        raise refusal(folder, why)
    log(f"token store: encoding the corpora into {folder} ({why})")
    build()
    return True
