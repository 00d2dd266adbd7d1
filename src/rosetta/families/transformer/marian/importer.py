"""``rosetta import hf MODEL -o RUN``: a MarianMT model (a local folder or a
Hugging Face Hub name, such as Helsinki-NLP/opus-mt-de-en) as an ordinary
Rosetta run: its configuration, its tokenizers and one checksummed
checkpoint, which every command reads like a run trained here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import yaml

from rosetta.config.reading import config_from_dict, config_to_dict
from rosetta.data.piece_table import PieceTableTokenizer
from rosetta.data.tokenizer import TokenizerPair
from rosetta.errors import RosettaError
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.marian.convert import (
    IdTable,
    imported_ids,
    layer_names,
    model_section,
    take_rows,
)
from rosetta.families.transformer.marian.hf_folder import (
    CONFIG_FILE,
    TARGET_VOCAB_FILE,
    VOCAB_FILE,
    MarianFolder,
    fetch_from_hub,
    read_marian_folder,
)
from rosetta.nn.positional import positional_encoding
from rosetta.runs import checkpoint as ckpt
from rosetta.runtime.atomic import write_json_atomic
from rosetta.train.prepare import write_tokenizer_file

CHECKPOINT = "checkpoint-0000000"
RUN_CONFIG = "config.yaml"  # the run's configuration, for users to start from
POSITIONS = (
    "model.encoder.embed_positions.weight",
    "model.decoder.embed_positions.weight",
)
TOLERANCE = 1e-4  # a stored position table further from the formula is refused


def marian_source(source: str) -> Path:
    """A local folder as it is; anything else, a Hub repository name."""
    local = Path(source)
    if local.is_dir():
        return local
    if local.exists() or source.count("/") != 1 or source.startswith((".", "/")):
        raise RosettaError(
            f"{source}: neither a MarianMT folder nor a Hub name (owner/model)"
        )
    return fetch_from_hub(source)


def import_marian(source: str, folder: Path, log: Callable[[str], None]) -> None:
    """Fill the empty ``folder`` with the run of the MarianMT model
    ``source``."""
    path = marian_source(source)
    log(f"import: reading {path}")
    parts = read_marian_folder(path)
    config, tokenizers, tensors = converted(parts)
    meta = {
        "config": config_to_dict(config),
        "tokenizers": tokenizers.to_dict(),
        "imported": {
            "from": source,
            "format": "MarianMT (Hugging Face transformers)",
            "generation": generation_settings(parts),
        },
    }
    (folder / CHECKPOINT).mkdir()
    ckpt.write_checkpoint_files(folder / CHECKPOINT, tensors, None, meta)
    write_tokenizer_file(folder, config.tokenizer, meta["tokenizers"])
    index = {"checkpoints": [CHECKPOINT], "latest": CHECKPOINT, "best": None}
    write_json_atomic(folder / ckpt.INDEX_FILE, index)
    (folder / RUN_CONFIG).write_text(run_config_text(meta["config"], source))
    count = sum(t.numel() for t in tensors.values())
    log(f"import: {count / 1e6:.1f}M parameters, vocabulary {len(tokenizers.src):,}")


def converted(
    parts: MarianFolder,
) -> tuple[Any, TokenizerPair, dict[str, torch.Tensor]]:
    """The Rosetta configuration, tokenizers and tensors of a MarianMT model."""
    where = parts.folder
    raw = parts.config
    tensors = dict(parts.tensors)
    joint = parts.target_vocab is None
    model = model_section(raw, joint, str(where / CONFIG_FILE))
    for key in ("pad_token_id", "eos_token_id", "vocab_size"):
        if not isinstance(raw.get(key), int):
            raise RosettaError(f"{where / CONFIG_FILE}: {key} missing")
    shared = take(tensors, "model.shared.weight", "model.encoder.embed_tokens.weight")
    eos, pad = raw["eos_token_id"], raw["pad_token_id"]
    source = imported_ids(
        parts.vocab, shared.size(0), eos, pad, str(where / VOCAB_FILE)
    )
    target, stored = source, {}
    stored["encoder.embedding.token.weight"] = take_rows(shared, source.rows)
    if not joint:
        decoder = take(tensors, "model.decoder.embed_tokens.weight")
        vocab = parts.target_vocab or {}
        target = imported_ids(
            vocab,
            decoder.size(0),
            vocab.get("</s>", eos),
            vocab.get("<pad>", pad),
            str(where / TARGET_VOCAB_FILE),
        )
        stored["decoder.embedding.token.weight"] = take_rows(decoder, target.rows)
    stored |= output_tensors(tensors, model["tie_output"], target, where)
    for theirs, ours in layer_names(raw).items():
        stored[ours] = take(tensors, theirs)
    check_positions(tensors, model, where)
    for name in (
        "model.encoder.embed_tokens.weight",
        "model.decoder.embed_tokens.weight",
    ):
        tensors.pop(name, None)  # the shared table under other names
    if tensors:
        raise RosettaError(
            f"{where}: weights Rosetta's Transformer has no place for: "
            f"{', '.join(sorted(tensors)[:3])}"
        )
    stored = {name: t.float().contiguous() for name, t in stored.items()}
    languages = {
        "src_lang": str(parts.tokenizer_config.get("source_lang") or "src"),
        "tgt_lang": str(parts.tokenizer_config.get("target_lang") or "tgt"),
    }
    config = config_from_dict(
        {"data": languages, "model": model, "tokenizer": {"joint": joint}},
        (TransformerConfig,),
        f"{where}: the configuration made from it",
    )
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


def take(tensors: dict[str, torch.Tensor], *names: str) -> torch.Tensor:
    """The first of ``names`` present, taken out of ``tensors``."""
    for name in names:
        if name in tensors:
            return tensors.pop(name)
    raise RosettaError(f"the weights have no {names[0]}")


def output_tensors(
    tensors: dict[str, torch.Tensor], tied: bool, target: IdTable, where: Path
) -> dict[str, torch.Tensor]:
    """The output projection's bias (MarianMT's ``final_logits_bias``) and,
    untied, its weight, in Rosetta's id order."""
    bias = tensors.pop("final_logits_bias", None)
    head = tensors.pop("lm_head.weight", None)
    rows = len(target.tokens) - 1  # MarianMT's vocabulary size
    if bias is None:
        bias = torch.zeros(rows)
    bias = bias.reshape(-1)
    if bias.numel() != rows:
        raise RosettaError(
            f"{where}: final_logits_bias has {bias.numel()} entries, the target "
            f"vocabulary {rows}"
        )
    out = {"output_proj.bias": take_rows(bias, target.rows)}
    if not tied:
        if head is None:
            raise RosettaError(f"{where}: tie_word_embeddings false, no lm_head.weight")
        out["output_proj.weight"] = take_rows(head, target.rows)
    return out


def check_positions(
    tensors: dict[str, torch.Tensor], model: dict[str, Any], where: Path
) -> None:
    """A position table in the file must be the sinusoids Rosetta computes."""
    expected = positional_encoding(model["max_positions"], model["d_model"], "halves")
    for name in POSITIONS:
        table = tensors.pop(name, None)
        if table is None:
            continue
        if table.shape != expected.shape or not torch.allclose(
            table.float(), expected, atol=TOLERANCE, rtol=0
        ):
            raise RosettaError(
                f"{where}: {name} is not MarianMT's sinusoid table (every sine, "
                "then every cosine); Rosetta computes its positions so"
            )


def piece_table(
    model: bytes, table: IdTable, path: Path, decode_model: bytes | None = None
) -> PieceTableTokenizer:
    try:
        return PieceTableTokenizer(model, table.tokens, decode_model)
    except (RuntimeError, OSError) as error:
        reason = " ".join(str(error).split())
        raise RosettaError(f"{path}: not a SentencePiece model ({reason})") from None


def generation_settings(parts: MarianFolder) -> dict[str, Any]:
    """The model's search settings (``generation_config.json``, or an older
    ``config.json``'s), kept with the import and written back on export."""
    keys = ("num_beams", "max_length", "length_penalty")
    settings = {key: parts.config[key] for key in keys if key in parts.config}
    settings |= {key: parts.generation[key] for key in keys if key in parts.generation}
    return settings


def run_config_text(config: dict[str, Any], source: str) -> str:
    """``config.yaml``: the run's configuration as a start for fine-tuning."""
    header = (
        f"# The configuration of {source}, imported by rosetta import hf.\n"
        "# A fine-tuning configuration needs only data and train sections\n"
        "# (the model section is the starting run's):\n"
        "#   rosetta train FINETUNE.yaml --init RUN_FOLDER -o NEW_RUN\n"
    )
    kept = {key: config[key] for key in ("data", "tokenizer", "model")}
    kept["data"] = {k: v for k, v in kept["data"].items() if v is not None}
    return header + yaml.safe_dump(kept, sort_keys=False)
