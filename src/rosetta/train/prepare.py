"""Everything a run needs before the first step: corpora, tokenizers, examples.

``rosetta prepare`` calls this alone (it trains and saves the tokenizers);
``rosetta train`` reuses the saved tokenizers, or trains them on the fly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rosetta.checkpoint import write_json_atomic
from rosetta.config import Config
from rosetta.data.batching import Example, encode_pairs, make_batches, padding_share
from rosetta.data.corpus import corpus_name, read_corpus
from rosetta.data.tokenizer import TokenizerPair
from rosetta.errors import RosettaError

TOKENIZER_FILE = "tokenizers.json"


@dataclass
class PreparedData:
    tokenizers: TokenizerPair
    train: list[Example]
    valid_pairs: list[tuple[str, str]]
    valid: list[Example]


def load_or_train_tokenizers(
    config: Config, run_dir: Path, train_pairs: list[tuple[str, str]], log=print
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
    layout = "joint" if tok.joint else "separate"
    log(
        f"tokenizers: training {tok.kind} "
        f"({tok.model_type}, {tok.vocab_size}, {layout})"
    )
    tokenizers = TokenizerPair.train(train_pairs, config.tokenizer)
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
    tokenizers = load_or_train_tokenizers(config, run_dir, train_pairs, log)
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
