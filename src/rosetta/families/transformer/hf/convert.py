"""MarianMT <-> Rosetta Transformer: the configuration, the token ids and the
tensor names, each mapping written once for both directions.

The architectures are the same function: post-norm layers, no LayerNorm on
the embeddings nor after the last layer, q/k/v/out projections with biases,
embeddings scaled by sqrt(d_model), one table shared by the encoder, the
decoder and the output projection. What MarianMT has besides, Rosetta's
Transformer takes as options: the feed-forward activation (``activation``,
swish in OPUS-MT), sinusoids with every sine before every cosine
(``sinusoids: halves``) and a bias added to the logits (``output_bias``).

The ids differ. Rosetta's start with ``<pad> <unk> <bos> <eos>``; MarianMT
has ``</s>`` (Rosetta's ``<eos>``), ``<unk>``, ``<pad>`` (often the last id)
and no start token: its decoder starts from ``<pad>``. Imported, a MarianMT
table of V rows becomes V + 1 rows: ``<pad>`` and ``<bos>`` both get the
``<pad>`` row, the other pieces follow in MarianMT's order. Exported, the
``<bos>`` row becomes MarianMT's ``<pad>`` (the row its decoder starts from)
and Rosetta's padding row, which no computation reads, is left out; a
MarianMT model whose ``</s>``, ``<unk>`` and ``<pad>`` are its first, second
and last ids comes back exactly as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from rosetta.data.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID
from rosetta.errors import RosettaError
from rosetta.families.transformer.hf.settings import MarianSettings

# MarianMT's sub-layer names -> Rosetta's, in an encoder and a decoder layer
ENCODER_LAYER = {
    "self_attn": "self_attn",
    "self_attn_layer_norm": "attn_res.norm",
    "fc1": "ffn.linear1",
    "fc2": "ffn.linear2",
    "final_layer_norm": "ffn_res.norm",
}
DECODER_LAYER = {
    "self_attn": "self_attn",
    "self_attn_layer_norm": "self_res.norm",
    "encoder_attn": "cross_attn",
    "encoder_attn_layer_norm": "cross_res.norm",
    "fc1": "ffn.linear1",
    "fc2": "ffn.linear2",
    "final_layer_norm": "ffn_res.norm",
}
ATTENTION = ("q_proj", "k_proj", "v_proj", "out_proj")
ACTIVATIONS = {"swish": "swish", "silu": "swish", "gelu": "gelu", "relu": "relu"}


def layer_names(counts: dict[str, int]) -> dict[str, str]:
    """Every layer tensor's MarianMT name -> its Rosetta name, for
    ``encoder_layers`` and ``decoder_layers`` layers (``counts``)."""
    names = {}
    for side, count, layout in (
        ("encoder", counts["encoder_layers"], ENCODER_LAYER),
        ("decoder", counts["decoder_layers"], DECODER_LAYER),
    ):
        for i in range(count):
            for theirs, ours in layout.items():
                parts = (
                    ATTENTION if "attn" in theirs and "norm" not in theirs else ("",)
                )
                for part in parts:
                    suffix = f".{part}" if part else ""
                    for kind in ("weight", "bias"):
                        name = f"{side}.layers.{i}.{theirs}{suffix}.{kind}"
                        names[f"model.{name}"] = (
                            f"{side}.layers.{i}.{ours}{suffix}.{kind}"
                        )
    return names


def layer_shape(name: str, d_model: int, d_ff: int) -> tuple[int, ...]:
    """The shape of the MarianMT layer tensor ``name``: (out, in) for a
    weight, (out,) for a bias or a LayerNorm's entries."""
    layer, kind = name.split(".")[-2:]
    rows = d_ff if layer == "fc1" else d_model
    if kind == "bias" or "norm" in layer:
        return (rows,)
    return (rows, d_ff if layer == "fc2" else d_model)


def shared_section(settings: Any, where: str) -> dict[str, Any]:
    """The Rosetta ``model`` keys of a transformers ``config.json`` that every
    layout has (the sizes, dropout, positions, activation), checked; what
    Rosetta's Transformer cannot express is one line naming the key."""

    def same(a: str, b: str) -> int:
        if getattr(settings, a) != getattr(settings, b):
            raise RosettaError(
                f"{where}: {a} ({getattr(settings, a)}) differs from {b} "
                f"({getattr(settings, b)}); Rosetta's layers have one size for both"
            )
        return getattr(settings, a)

    activation = settings.activation_function
    if activation not in ACTIVATIONS:
        raise RosettaError(
            f"{where}: activation_function {activation!r}; Rosetta has "
            f"{', '.join(ACTIVATIONS)}"
        )
    heads = same("encoder_attention_heads", "decoder_attention_heads")
    if settings.d_model % heads:
        raise RosettaError(
            f"{where}: encoder_attention_heads {heads} does not divide d_model "
            f"{settings.d_model}"
        )
    return {
        "arch": "transformer",
        "encoder_layers": settings.encoder_layers,
        "decoder_layers": settings.decoder_layers,
        "d_model": settings.d_model,
        "heads": heads,
        "d_ff": same("encoder_ffn_dim", "decoder_ffn_dim"),
        "dropout": settings.dropout,
        "attention_dropout": settings.attention_dropout,
        "max_positions": settings.max_position_embeddings,
        "activation": ACTIVATIONS[activation],
    }


def model_section(settings: MarianSettings, joint: bool, where: str) -> dict[str, Any]:
    """The Rosetta ``model`` section of a MarianMT ``config.json`` (checked
    for types and ranges)."""
    if not settings.scale_embedding:
        raise RosettaError(
            f"{where}: scale_embedding false; Rosetta imports MarianMT models "
            "that scale their embeddings by sqrt(d_model), as every OPUS-MT "
            "model does"
        )
    start = settings.decoder_start_token_id
    if start is not None and start != settings.pad_token_id:
        raise RosettaError(
            f"{where}: decoder_start_token_id is not pad_token_id; Rosetta "
            "imports MarianMT models whose decoder starts from <pad>"
        )
    return shared_section(settings, where) | {
        "norm": "post",
        "share_embeddings": joint,
        "tie_output": settings.tie_word_embeddings,
        "positions": "sinusoidal",
        "sinusoids": "halves",
        "output_bias": True,
    }


def hf_sizes(model: Any) -> dict[str, int]:
    """The sizes of a transformers ``config.json`` for a Rosetta ``model``
    section."""
    return {
        "d_model": model.d_model,
        "encoder_layers": model.encoder_layers,
        "decoder_layers": model.decoder_layers,
        "encoder_attention_heads": model.heads,
        "decoder_attention_heads": model.heads,
        "encoder_ffn_dim": model.d_ff,
        "decoder_ffn_dim": model.d_ff,
        "dropout": model.dropout,
        "attention_dropout": model.attention_dropout,
        "max_position_embeddings": model.max_positions,
    }


def marian_config(model: Any, vocab_size: int, target_vocab_size: int) -> dict:
    """A MarianMT ``config.json`` for a Rosetta ``model`` section (already
    checked exportable) and the exported vocabularies' sizes."""
    return {
        "architectures": ["MarianMTModel"],
        "model_type": "marian",
        "vocab_size": vocab_size,
        "decoder_vocab_size": target_vocab_size,
        **hf_sizes(model),
        "activation_function": model.activation,
        "activation_dropout": model.dropout,
        "scale_embedding": True,
        "share_encoder_decoder_embeddings": model.share_embeddings,
        "tie_word_embeddings": model.tie_output,
        "eos_token_id": 0,
        "pad_token_id": vocab_size - 1,
        "decoder_start_token_id": target_vocab_size - 1,
        "forced_eos_token_id": 0,
        "is_encoder_decoder": True,
        "init_std": 0.02,
    }


@dataclass(frozen=True)
class IdTable:
    """One side's Rosetta tokens and, for each Rosetta id, the MarianMT id
    whose row it takes (``rows``)."""

    tokens: list[str]
    rows: list[int]


def imported_ids(
    vocab: dict[str, int],
    rows: int,
    eos: int,
    pad: int,
    where: str,
    start: int | None = None,
) -> IdTable:
    """The Rosetta ids of a vocabulary (piece -> id: MarianMT's
    ``vocab.json``, or the table of an NLLB-200, M2M100 or mBART-50
    tokenizer) of ``rows`` embedding rows, whose ``</s>`` and ``<pad>`` are
    ``eos`` and ``pad``; ``<bos>`` takes the row the decoder starts from,
    ``start`` (default ``pad``, MarianMT's; fairseq's models start from
    ``</s>``)."""
    if sorted(vocab.values()) != list(range(rows)):
        raise RosettaError(
            f"{where}: {len(vocab)} pieces with ids that are not 0..{rows - 1}, "
            f"one each; the embedding has {rows} rows"
        )
    unk = vocab.get("<unk>")
    if unk is None:
        raise RosettaError(f"{where}: no <unk> piece")
    for piece, key, wanted in (("</s>", "eos", eos), ("<pad>", "pad", pad)):
        if vocab.get(piece, wanted) != wanted or not 0 <= wanted < rows:
            raise RosettaError(
                f"{where}: {piece} is {vocab.get(piece)}, config.json's "
                f"{key}_token_id {wanted}; the tokenizer and the model must "
                "agree, on a row of the embedding"
            )
    if len({eos, unk, pad}) != 3:
        raise RosettaError(f"{where}: </s>, <unk> and <pad> are not three pieces")
    specials = {eos, unk, pad}
    ordinary = sorted(
        ((i, piece) for piece, i in vocab.items() if i not in specials),
    )
    clash = [piece for _, piece in ordinary if piece in SPECIALS]
    if clash:
        raise RosettaError(
            f"{where}: the piece {clash[0]!r} is one of Rosetta's special symbols"
        )
    by_id = dict.fromkeys(range(4), 0)
    by_id |= {PAD_ID: pad, UNK_ID: unk, BOS_ID: pad if start is None else start}
    by_id[EOS_ID] = eos
    return IdTable(
        [*SPECIALS, *(piece for _, piece in ordinary)],
        [*(by_id[i] for i in range(4)), *(i for i, _ in ordinary)],
    )


def exported_ids(tokens: list[str]) -> tuple[dict[str, int], list[int]]:
    """The MarianMT vocabulary of Rosetta's ``tokens`` (``</s>`` 0,
    ``<unk>`` 1, the pieces, ``<pad>`` last) and, for each MarianMT id, the
    Rosetta row it takes."""
    pieces = tokens[len(SPECIALS) :]
    vocab = {"</s>": 0, "<unk>": 1}
    vocab |= {piece: 2 + i for i, piece in enumerate(pieces)}
    if len(vocab) != 2 + len(pieces) or "<pad>" in vocab:
        raise RosettaError("the vocabulary holds </s>, <unk> or <pad> as a piece")
    vocab["<pad>"] = len(vocab)
    rows = [EOS_ID, UNK_ID, *range(len(SPECIALS), len(tokens)), BOS_ID]
    return vocab, rows


def take_rows(tensor: torch.Tensor, rows: list[int]) -> torch.Tensor:
    """Rows ``rows`` of ``tensor``, in that order (entries of a vector)."""
    return tensor.index_select(0, torch.tensor(rows, dtype=torch.long)).contiguous()
