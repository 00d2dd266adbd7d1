"""``rosetta export hf`` of a run in NLLB-200's, M2M100's or mBART-50's
layout (an import of one, fine-tuned or not): a folder that transformers'
``AutoModelForSeq2SeqLM`` and ``AutoTokenizer`` load, whose
``generation_config.json`` searches as ``rosetta translate`` does.

The ids go back as the import took them: ``<s>``, ``<pad>``, ``</s>``,
``<unk>``, then every other token in Rosetta's order; ``</s>`` is both the
decoder's start and its end (the run's ``start_token: eos``), so Rosetta's
``<bos>`` row, which such a run never reads, is not written. The tokenizer:
M2M100's ``vocab.json`` and its list of codes; mBART-50's SentencePiece
model, which transformers numbers itself; NLLB's ``tokenizer.json``, made
with transformers (``pip install transformers``), which reads no NLLB
tokenizer from the SentencePiece model alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from rosetta.data.piece_table import PieceTableTokenizer
from rosetta.data.vocab import EOS_ID, PAD_ID, UNK_ID
from rosetta.errors import RosettaError
from rosetta.families.transformer.hf.convert import (
    hf_sizes,
    layer_names,
    take_rows,
)
from rosetta.families.transformer.hf.multilingual.vocabulary import (
    FAIRSEQ_SPECIALS,
    M2M100_CODES,
    WRAPPED,
)
from rosetta.families.transformer.positions.base import scheme_of
from rosetta.runs import checkpoint as ckpt

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "silu"}


def refusal(model: Any) -> str | None:
    """Why neither M2M100's nor mBART's layout holds the ``model`` section,
    or None."""
    scheme = scheme_of(model.positions) if model.arch == "transformer" else None
    mbart = scheme is not None and scheme.exports_to("mbart")
    wanted = {
        "arch": "transformer",
        "norm": "pre",
        "share_embeddings": True,
        "tie_output": True,
        "sinusoids": "fairseq",
        "first_position": 2,
        "start_token": "eos",
        "embedding_norm": mbart,
        "output_bias": mbart,
    }
    found = {key: getattr(model, key) for key in wanted}
    if scheme is not None and not mbart and not scheme.exports_to("m2m100"):
        wanted["positions"], found["positions"] = "sinusoidal", model.positions
    for key, value in wanted.items():
        if found[key] != value:
            return (
                f"model.{key} is {found[key]}, not {value}: not the "
                "layout of an NLLB-200, M2M100 or mBART-50 model"
            )
    return None


def hf_ids(tokens: list[str]) -> tuple[list[str], list[int]]:
    """Their table (``<s> <pad> </s> <unk>``, then Rosetta's other tokens)
    and, for each of their ids, the Rosetta row it takes."""
    rest = list(range(4, len(tokens)))
    start = rest.pop(0) if tokens[4:5] == ["<s>"] else EOS_ID  # an unread row
    rows = [start, PAD_ID, EOS_ID, UNK_ID, *rest]
    return [*FAIRSEQ_SPECIALS, *(tokens[i] for i in rest)], rows


def exported_tensors(
    tensors: dict[str, torch.Tensor], model: Any, rows: list[int]
) -> dict[str, torch.Tensor]:
    """Their names and id order for Rosetta's tensors."""
    sizes = {
        "encoder_layers": model.encoder_layers,
        "decoder_layers": model.decoder_layers,
    }
    out = {theirs: tensors[ours] for theirs, ours in layer_names(sizes).items()}
    out["model.shared.weight"] = take_rows(
        tensors["encoder.embedding.token.weight"], rows
    )
    for side in ("encoder", "decoder"):
        for kind in ("weight", "bias"):
            out[f"model.{side}.layer_norm.{kind}"] = tensors[
                f"{side}.final_norm.{kind}"
            ]
            if model.embedding_norm:
                norm = tensors[f"{side}.embedding.norm.{kind}"]
                out[f"model.{side}.layernorm_embedding.{kind}"] = norm
        if scheme_of(model.positions).exports_to("mbart"):  # two rows before
            table = tensors[f"{side}.embedding.positions"]
            out[f"model.{side}.embed_positions.weight"] = torch.cat(
                [table.new_zeros(2, table.size(1)), table]
            )
    if model.output_bias:
        out["final_logits_bias"] = take_rows(tensors["output_proj.bias"], rows)[None]
    return {name: t.contiguous() for name, t in out.items()}


def hf_config(model: Any, size: int) -> dict[str, Any]:
    """``config.json`` of the ``model`` section, ``size`` ids."""
    mbart = scheme_of(model.positions).exports_to("mbart")
    config = {
        "architectures": [
            "MBartForConditionalGeneration"
            if mbart
            else "M2M100ForConditionalGeneration"
        ],
        "model_type": "mbart" if mbart else "m2m_100",
        "vocab_size": size,
        **hf_sizes(model),
        "activation_function": ACTIVATIONS[model.activation],
        "activation_dropout": 0.0,
        "scale_embedding": model.scale_embeddings,
        "pad_token_id": 1,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "decoder_start_token_id": 2,
        "tie_word_embeddings": True,
        "is_encoder_decoder": True,
        "init_std": 0.02,
    }
    if mbart:
        config |= {"normalize_before": True, "add_final_layer_norm": True}
    return config


def write_multilingual(restored: Any, folder: Path, quantization: str | None) -> None:
    """The checkpoint ``restored`` as an NLLB-200, M2M100 or mBART-50
    folder in the empty ``folder``."""
    model = restored.config.model
    why = refusal(model)
    if why is not None:
        raise RosettaError(f"{restored.folder}: {why}")
    tokenizer = restored.tokenizers.src
    if not isinstance(tokenizer, PieceTableTokenizer) or not tokenizer.languages:
        raise RosettaError(
            f"{restored.folder}: its tokenizer has no language codes; this "
            "layout's tokenizer numbers SentencePiece's pieces and the codes"
        )
    table, rows = hf_ids(tokenizer.vocab.tokens)
    tensors = {
        name: t.detach().float().cpu()
        for name, t in ckpt.model_tensors(restored.model).items()
    }
    ckpt.save_tensors(
        exported_tensors(tensors, model, rows), folder / "model.safetensors"
    )
    write(folder / "config.json", hf_config(model, len(table)))
    meta = ckpt.read_meta(restored.folder)
    imported = ckpt.imported_record(meta)
    generation = imported.generation if imported is not None else {}
    write(
        folder / "generation_config.json",
        {
            "bos_token_id": 0,
            "decoder_start_token_id": 2,
            "eos_token_id": 2,
            "pad_token_id": 1,
            "bad_words_ids": [[1]],  # as Rosetta's search, never <pad>
            # a model trained here searches as rosetta translate does by
            # default (greedy); an imported one keeps the settings it came with
            "num_beams": generation.get("num_beams", 1),
            "max_length": generation.get("max_length", model.max_positions),
        },
    )
    (folder / "sentencepiece.bpe.model").write_bytes(tokenizer.model_bytes)
    write_tokenizer(folder, tokenizer, table, restored.config.data)


def write_tokenizer(
    folder: Path, tokenizer: PieceTableTokenizer, table: list[str], data: Any
) -> None:
    """The tokenizer files of the codes' layout: ``__de__`` (M2M100),
    ``de_DE`` (mBART-50) or ``deu_Latn`` (NLLB-200)."""
    tokens = list(tokenizer.languages.values())
    codes = {
        key: value
        for key, value in (("src_lang", data.src_lang), ("tgt_lang", data.tgt_lang))
        if value in tokenizer.languages
    }
    if all(WRAPPED.fullmatch(token) for token in tokens):
        listed = [
            code
            for code, codes_ in M2M100_CODES.items()
            if codes_ == list(tokenizer.languages)
        ]
        if not listed:
            raise RosettaError(
                f"{folder}: the run's M2M100 language codes are not one of "
                "M2M100's lists (m2m100, wmt21)"
            )
        first = table.index(tokens[0])
        vocab = {piece: i for i, piece in enumerate(table[:first])}
        write(folder / "vocab.json", vocab)
        config = {"tokenizer_class": "M2M100Tokenizer", "language_codes": listed[0]}
        write(folder / "tokenizer_config.json", config | codes)
        return
    if all(len(t) == 5 and t[2] == "_" for t in tokens):  # mBART-50's de_DE
        first = table.index(tokens[0])  # the codes and <mask>, with their ids
        added = {
            str(i): {"content": token, "special": True}
            for i, token in enumerate(table)
            if i >= first and not token.startswith("<unused")
        }
        config = {"tokenizer_class": "MBart50Tokenizer", "added_tokens_decoder": added}
        write(folder / "tokenizer_config.json", config | codes)
        return
    from rosetta.families.transformer.hf.multilingual.nllb_tokenizer import (
        write_nllb_tokenizer,
    )

    write_nllb_tokenizer(folder, tokenizer, table, codes)


def write(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
