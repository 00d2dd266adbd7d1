"""Everything a run needs before the first step: corpora, tokenizers, examples
(translation) or token ids (a language model's text).

``rosetta prepare`` calls this alone (it trains and saves the tokenizers);
``rosetta train`` reuses the saved tokenizers, or trains them on the fly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rosetta.data.batching import Example, encode_pairs, make_batches, padding_share
from rosetta.data.corpus import corpus_name, read_corpus
from rosetta.data.text import encode_text, read_text
from rosetta.data.tokenizer import TokenizerPair, train_tokenizer
from rosetta.errors import RosettaError
from rosetta.runtime.outputs import write_json_atomic

if TYPE_CHECKING:
    from rosetta.config.schema import Config

TOKENIZER_FILE = "tokenizers.json"


@dataclass
class PreparedData:
    tokenizers: TokenizerPair
    train: list[Example]
    valid_pairs: list[tuple[str, str]]
    valid: list[Example]


@dataclass
class PreparedText:
    tokenizers: TokenizerPair  # one tokenizer, joint
    train: list[int]
    valid: list[int]


def load_or_train_tokenizers(
    config: Config, run_dir: Path, train: Callable[[], TokenizerPair], log=print
) -> TokenizerPair:
    path = run_dir / TOKENIZER_FILE
    if path.is_file():
        state = json.loads(path.read_text(encoding="utf-8"))
        if state.get("config") != config.tokenizer.model_dump(mode="json"):
            raise RosettaError(
                f"{path} was made with other tokenizer settings; delete it or "
                "use another output folder"
            )
        log(f"tokenizers: loaded from {path}")
        return TokenizerPair.from_dict(state["tokenizers"])
    tok = config.tokenizer
    if tok.kind == "char":
        log("tokenizers: collecting the characters")
    else:
        layout = "joint" if tok.joint else "separate"
        log(
            f"tokenizers: training {tok.kind} "
            f"({tok.model_type}, {tok.vocab_size}, {layout})"
        )
    tokenizers = train()
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        path,
        {
            "config": config.tokenizer.model_dump(mode="json"),
            "tokenizers": tokenizers.to_dict(),
        },
    )
    return tokenizers


def prepare_data(config: Config, run_dir: Path, log=print) -> PreparedData:
    train_pairs = read_corpus(config.data.train)
    tokenizers = load_or_train_tokenizers(
        config, run_dir, lambda: TokenizerPair.train(train_pairs, config.tokenizer), log
    )
    log(f"vocabulary: source {len(tokenizers.src)}, target {len(tokenizers.tgt)}")
    train, report = encode_pairs(train_pairs, tokenizers, config.data.max_len)
    log(f"train: {corpus_name(config.data.train)}: {report.summary()}")
    if not train:
        raise RosettaError(
            f"{corpus_name(config.data.train)}: every pair was filtered out "
            f"({report.summary()})"
        )
    batches = make_batches(train, config.train.batch_tokens)
    log(
        f"train: {len(batches)} batches of <= {config.train.batch_tokens} tokens, "
        f"padding {padding_share(train, batches):.1%}"
    )
    valid_pairs: list[tuple[str, str]] = []
    valid: list[Example] = []
    if config.data.valid is not None:
        valid_pairs = [p for p in read_corpus(config.data.valid) if p[0].strip()]
        valid, report = encode_pairs(valid_pairs, tokenizers, config.data.max_len)
        log(f"valid: {corpus_name(config.data.valid)}: {report.summary()}")
    return PreparedData(tokenizers, train, valid_pairs, valid)


def prepare_text(config: Config, run_dir: Path, log=print) -> PreparedText:
    """A language model's data: its tokenizer and the token ids of the
    training and validation texts."""
    assert config.data.train.text is not None
    text = read_text(config.data.train.text)
    if not text.strip():
        raise RosettaError(f"{config.data.train.text}: the text is empty")

    def train() -> TokenizerPair:
        # characters include the line break; pieces and words are per line
        pieces = [text] if config.tokenizer.kind == "char" else text.splitlines()
        tokenizer = train_tokenizer(pieces, config.tokenizer)
        return TokenizerPair(tokenizer, tokenizer)

    tokenizers = load_or_train_tokenizers(config, run_dir, train, log)
    log(f"vocabulary: {len(tokenizers.tgt)}")
    ids = encode_text(tokenizers.tgt, text)
    log(
        f"train: {config.data.train.text}: {len(text):,} characters, "
        f"{len(ids):,} tokens"
    )
    valid: list[int] = []
    if config.data.valid is not None:
        assert config.data.valid.text is not None
        valid_text = read_text(config.data.valid.text)
        valid = encode_text(tokenizers.tgt, valid_text)
        log(
            f"valid: {config.data.valid.text}: {len(valid_text):,} characters, "
            f"{len(valid):,} tokens"
        )
    return PreparedText(tokenizers, ids, valid)
