"""Assembling a Transformer from its model section and position scheme."""

from __future__ import annotations

import torch
from torch import nn

from rosetta.data.tokenizer import TokenizerPair
from rosetta.data.vocab import EOS_ID
from rosetta.families.transformer.config import TransformerConfig
from rosetta.families.transformer.layers import (
    TransformerDecoderLayer,
    TransformerEmbedding,
    TransformerEncoderLayer,
)
from rosetta.families.transformer.model import (
    Transformer,
    TransformerDecoder,
    TransformerEncoder,
)
from rosetta.families.transformer.positions.base import PositionScheme, scheme_of
from rosetta.families.transformer.positions.numbers import digit_mask
from rosetta.nn import LayerSizes
from rosetta.nn.init import xavier_linear_layers

Digits = tuple[torch.Tensor, torch.Tensor]


def embeddings(
    section: TransformerConfig, scheme: PositionScheme, src_vocab: int, tgt_vocab: int
) -> tuple[TransformerEmbedding, TransformerEmbedding]:
    """The source's and the target's embedding: one where shared, but for
    each side's own positions or normalisation over the same tokens."""
    table = scheme.shared_table(section)

    def embedding(
        vocab: int, absolute: bool, token: nn.Embedding | None = None
    ) -> TransformerEmbedding:
        own = scheme.own_table(section) if scheme.own_tables else table
        return TransformerEmbedding(
            vocab,
            section.d_model,
            section.max_positions,
            section.dropout,
            absolute,
            token,
            table=own,
            layout=section.sinusoids,
            start=section.first_position,
            scaled=section.scale_embeddings,
            norm=section.embedding_norm,
            start_row=EOS_ID if section.start_token == "eos" else None,
        )

    share = section.share_embeddings
    src_embedding = embedding(src_vocab, scheme.encoder_adds)
    tgt_embedding = src_embedding
    if not share:
        tgt_embedding = embedding(tgt_vocab, scheme.encoder_adds)
    own_parts = scheme.own_tables or section.embedding_norm
    if scheme.decoder_adds != scheme.encoder_adds or (share and own_parts):
        token = tgt_embedding.token
        tgt_embedding = embedding(tgt_vocab, scheme.decoder_adds, token)
    return src_embedding, tgt_embedding


def build_transformer(
    section: TransformerConfig,
    scheme: PositionScheme,
    src_vocab: int,
    tgt_vocab: int,
    digits: Digits | None = None,
) -> Transformer:
    """A Transformer of ``section``'s sizes with the position scheme
    ``scheme`` (``scheme_of(section.positions)``, or one of one's own);
    ``digits``: which source and which target tokens are digits
    (``numbers.digit_mask``), for a scheme that places digits."""
    if section.share_embeddings and src_vocab != tgt_vocab:
        raise ValueError("shared embeddings need one vocabulary for source and target")
    if scheme.needs_digits and digits is None:
        raise ValueError(f"{section.positions} positions need the vocabularies' digits")
    if section.number_table == "learned" and not scheme.needs_digits:
        raise ValueError(
            "learned number places need abacus, coupled or abacus-alibi, "
            f"not {section.positions}"
        )
    sides = digits or (None, None)
    sizes = LayerSizes(
        section.d_model,
        section.heads,
        section.d_ff,
        section.dropout,
        section.attention_dropout,
        section.norm == "pre",
        section.activation,
    )
    src_embedding, tgt_embedding = embeddings(section, scheme, src_vocab, tgt_vocab)
    output_proj = nn.Linear(section.d_model, tgt_vocab, bias=section.output_bias)
    if section.output_bias:
        nn.init.zeros_(output_proj.bias)
    encoder = TransformerEncoder(
        src_embedding,
        [
            TransformerEncoderLayer(sizes, scheme.relative)
            for _ in range(section.encoder_layers)
        ],
        sizes.final_norm(),
        scheme.encoder_positions(section, sides[0]),
    )
    decoder = TransformerDecoder(
        tgt_embedding,
        [
            TransformerDecoderLayer(sizes, scheme.relative)
            for _ in range(section.decoder_layers)
        ],
        sizes.final_norm(),
        scheme.decoder_positions(section, sides[1]),
    )
    xavier_linear_layers(encoder.layers, decoder.layers)
    if section.tie_output:
        output_proj.weight = tgt_embedding.token.weight
    else:
        nn.init.normal_(output_proj.weight, std=section.d_model**-0.5)
    return Transformer(encoder, decoder, output_proj, scheme)


def build(
    config: TransformerConfig,
    src_vocab: int,
    tgt_vocab: int,
    tokenizers: TokenizerPair | None = None,
) -> Transformer:
    """``tokenizers`` say which tokens are digits (``abacus``, ``coupled``)."""
    digits = None
    if tokenizers is not None:
        src, tgt = (
            digit_mask(side.id_pieces(range(len(side))))
            for side in (tokenizers.src, tokenizers.tgt)
        )
        digits = src, tgt
    return build_transformer(
        config, scheme_of(config.positions), src_vocab, tgt_vocab, digits
    )
