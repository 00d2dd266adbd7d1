"""``rosetta import hf MODEL -o RUN`` of a MarianMT model (a local folder or
a Hugging Face Hub name, such as Helsinki-NLP/opus-mt-de-en) as an ordinary
Rosetta run: its configuration, its tokenizers and one checksummed
checkpoint, which every command reads like a run trained here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rosetta.config.reading import config_from_dict
from rosetta.data.piece_table import PieceTableTokenizer
from rosetta.data.tokenizer import TokenizerPair
from rosetta.errors import RosettaError, in_words
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.hf.convert import (
    IdTable,
    imported_ids,
    model_section,
    take_rows,
)
from rosetta.families.transformer.hf.folder import (
    MarianFolder,
    read_marian_folder,
)
from rosetta.families.transformer.hf.settings import (
    CONFIG_FILE,
    TARGET_VOCAB_FILE,
    VOCAB_FILE,
    MarianSettings,
)
from rosetta.families.transformer.hf.tensors import (
    Weights,
    check_positions,
    check_sizes,
    layer_tensors,
    output_tensors,
    token_tables,
)
from rosetta.families.transformer.imported_run import write_imported_run
from rosetta.runs.schemas import ImportedRecord
from rosetta.runtime.resources import refuse_beyond_memory


def import_marian(path: Path, source: str, folder: Path) -> None:
    """Fill the empty ``folder`` with the run of the MarianMT model in
    ``path`` (from ``source``)."""
    parts = read_marian_folder(path)
    config, tokenizers, tensors = converted(parts)
    imported = ImportedRecord(
        source=source,
        format="MarianMT (Hugging Face transformers)",
        generation=generation_settings(parts),
    )
    write_imported_run(folder, config, tokenizers, tensors, imported)


def converted(
    parts: MarianFolder,
) -> tuple[Any, TokenizerPair, dict[str, torch.Tensor]]:
    """The Rosetta configuration, tokenizers and tensors of a MarianMT model;
    its sizes are compared with the weights before any is used."""
    where, settings = parts.folder, parts.settings
    weights = Weights(parts.tensors, parts.weights, where / CONFIG_FILE)
    check_sizes(weights, settings)
    joint = parts.target_vocab is None
    check_fits(settings, weights, joint)
    model = model_section(settings, joint, str(where / CONFIG_FILE))
    source_table, target_table = token_tables(weights, settings)
    eos, pad = settings.eos_token_id, settings.pad_token_id
    source = imported_ids(
        parts.vocab, source_table.size(0), eos, pad, str(where / VOCAB_FILE)
    )
    target, stored = source, {}
    stored["encoder.embedding.token.weight"] = take_rows(source_table, source.rows)
    if not joint:
        vocab = parts.target_vocab or {}
        target = imported_ids(
            vocab,
            target_table.size(0),
            vocab.get("</s>", eos),
            vocab.get("<pad>", pad),
            str(where / TARGET_VOCAB_FILE),
        )
        stored["decoder.embedding.token.weight"] = take_rows(target_table, target.rows)
    bias, head = output_tensors(weights, settings)
    stored["output_proj.bias"] = take_rows(bias, target.rows)
    if head is not None:
        stored["output_proj.weight"] = take_rows(head, target.rows)
    stored |= layer_tensors(weights, settings)
    check_positions(weights, settings)
    weights.check_left_over()
    # float16, bfloat16 and float64 weights (checked floating) as Rosetta's
    stored = {name: t.float().contiguous() for name, t in stored.items()}
    languages = {
        "src_lang": parts.tokenizer.source_lang or "src",
        "tgt_lang": parts.tokenizer.target_lang or "tgt",
    }
    try:
        config = config_from_dict(
            {"data": languages, "model": model, "tokenizer": {"joint": joint}},
            (TransformerConfig,),
            f"{where}: the configuration made from it",
        )
    except RosettaError as error:  # one line, as every refusal here
        raise RosettaError(in_words(error)) from None
    tokenizers = TokenizerPair(
        piece_table(parts.source_spm, source, where / "source.spm"),
        piece_table(
            parts.target_spm,
            target,
            where / "target.spm",
            parts.source_spm if joint else None,  # transformers decodes so
        ),
    )
    return config, tokenizers, stored


def check_fits(settings: MarianSettings, weights: Weights, joint: bool) -> None:
    """The run loaded back holds the weights and a sinusoid table per
    embedding; the weights are in memory already, so the one size left to
    bound is ``max_position_embeddings``."""
    rows, width = settings.max_position_embeddings, settings.d_model
    tables = (1 if joint else 2) * rows * width
    count = sum(t.numel() for t in weights.tensors.values())
    refuse_beyond_memory(
        4 * (tables + count),  # float32
        f"{weights.config}: max_position_embeddings {rows}, d_model {width}: the model",
    )


def piece_table(
    model: bytes, table: IdTable, path: Path, decode_model: bytes | None = None
) -> PieceTableTokenizer:
    try:
        return PieceTableTokenizer(model, table.tokens, decode_model)
    except (RuntimeError, OSError) as error:
        reason = in_words(error)
        raise RosettaError(f"{path}: not a SentencePiece model ({reason})") from None


def generation_settings(parts: MarianFolder) -> dict[str, Any]:
    """The model's search settings (``generation_config.json``'s, or an older
    ``config.json``'s), kept with the import and written back on export."""
    keys = ("num_beams", "max_length", "length_penalty")
    settings: dict[str, Any] = {}
    for source in (parts.settings, parts.generation):  # the newer file last
        found = {key: getattr(source, key) for key in keys}
        settings |= {key: value for key, value in found.items() if value is not None}
    return settings
