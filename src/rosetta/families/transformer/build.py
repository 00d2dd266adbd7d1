"""Assembling a Transformer from its sizes and position scheme."""

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
from rosetta.families.transformer.model import TransformerDecoder, TransformerEncoder
from rosetta.families.transformer.number_positions import NumberPositions, digit_mask
from rosetta.families.transformer.positions import (
    POSITIONS,
    SCHEMES,
    RandomPositionsTransformer,
)
from rosetta.interfaces.encoder_decoder import EncoderDecoder
from rosetta.nn import LayerSizes
from rosetta.nn.init import xavier_linear_layers
from rosetta.nn.linear_bias import LinearBiases

# the section's defaults, written once there; a builder called with sizes
# alone shares no embeddings unless asked (its vocabularies may differ)
DEFAULT = TransformerConfig().layer_sizes()
DEFAULT_POSITIONS = TransformerConfig().positions


def build_transformer(
    src_vocab: int,
    tgt_vocab: int,
    *,
    encoder_layers: int = DEFAULT["encoder_layers"],
    decoder_layers: int = DEFAULT["decoder_layers"],
    d_model: int = DEFAULT["d_model"],
    heads: int = DEFAULT["heads"],
    d_ff: int = DEFAULT["d_ff"],
    dropout: float = DEFAULT["dropout"],
    attention_dropout: float = DEFAULT["attention_dropout"],
    norm_first: bool = DEFAULT["norm_first"],
    share_embeddings: bool = False,
    tie_output: bool = DEFAULT["tie_output"],
    max_positions: int = DEFAULT["max_positions"],
    positions: str = DEFAULT_POSITIONS,
    number_offset: int = DEFAULT["number_offset"],
    number_table: str = DEFAULT["number_table"],
    activation: str = DEFAULT["activation"],
    sinusoids: str = DEFAULT["sinusoids"],
    output_bias: bool = DEFAULT["output_bias"],
    first_position: int = DEFAULT["first_position"],
    scale_embeddings: bool = DEFAULT["scale_embeddings"],
    embedding_norm: bool = DEFAULT["embedding_norm"],
    start_token: str = DEFAULT["start_token"],
    digits: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> EncoderDecoder:
    """Assemble a Transformer; the sizes are those of ``TransformerConfig``.

    ``positions``: ``sinusoidal`` (added to both embeddings), ``relative``
    (self-attention scores distances), ``randomized`` / ``shifted``
    (sinusoids at random sorted / consecutive positions in training; see
    ``RandomPositionsTransformer``), ``nope`` (sinusoids in the encoder,
    none in the decoder), ``alibi`` (no sinusoids; every attention
    penalises distance, ``rosetta.nn.linear_bias``), ``abacus`` or
    ``coupled`` (sinusoids of a digit's place in its number, shifted by up
    to ``number_offset`` in training; ``digits``: which source and which
    target tokens are digits, ``number_positions.digit_mask``).
    ``number_table``: ``learned`` gives digit places learned vectors, one
    table for both sides, instead of sinusoids. ``activation``: the
    feed-forward's (relu, gelu, swish); ``sinusoids``: the sines and cosines
    of a position's vector interleaved, in two halves, or fairseq's table,
    counted from ``first_position``; ``learned`` positions: a trained table
    per side; ``output_bias``: a bias added to the logits (MarianMT's);
    ``scale_embeddings``: token vectors times sqrt(d_model);
    ``embedding_norm``: a LayerNorm per side on the embedding (mBART's);
    ``start_token``: ``eos``, the decoder's ``<bos>`` reads ``<eos>``'s row."""
    if share_embeddings and src_vocab != tgt_vocab:
        raise ValueError("shared embeddings need one vocabulary for source and target")
    if positions not in POSITIONS:
        raise ValueError(f"positions {positions!r}: use one of {', '.join(POSITIONS)}")
    scheme = SCHEMES[positions]
    numbers: tuple[NumberPositions | None, NumberPositions | None] = (None, None)
    if scheme.numbers is not None:
        if digits is None:
            raise ValueError(f"{positions} positions need the vocabularies' digits")
        coupled = scheme.numbers == "coupled"
        numbers = NumberPositions(digits[0], coupled), NumberPositions(digits[1])
    table = None
    if number_table == "learned":
        if scheme.numbers is None:
            raise ValueError(
                "learned number places need abacus, coupled or abacus-alibi, "
                f"not {positions}"
            )
        # the scale of the token embeddings as added (std 1 per component)
        table = nn.Parameter(torch.randn(max_positions, d_model))

    def embedding(
        vocab: int, absolute: bool, token: nn.Embedding | None = None
    ) -> TransformerEmbedding:
        own = table
        if scheme.learned:  # a table per side, initialised as mBART's
            own = nn.Parameter(torch.empty(max_positions, d_model))
            nn.init.normal_(own, std=0.02)
        return TransformerEmbedding(
            vocab,
            d_model,
            max_positions,
            dropout,
            absolute,
            token,
            table=own,
            layout=sinusoids,  # type: ignore[arg-type]
            start=first_position,
            scaled=scale_embeddings,
            norm=embedding_norm,
            start_row=EOS_ID if start_token == "eos" else None,
        )

    def biases(layers: int, both_ends: bool = False) -> LinearBiases | None:
        if not scheme.distance_penalties:
            return None
        return LinearBiases(layers, heads, both_ends)

    sizes = LayerSizes(
        d_model,
        heads,
        d_ff,
        dropout,
        attention_dropout,
        norm_first,
        activation,  # type: ignore[arg-type]
    )
    src_embedding = embedding(src_vocab, scheme.encoder_sinusoids)
    tgt_embedding = src_embedding
    if not share_embeddings:
        tgt_embedding = embedding(tgt_vocab, scheme.encoder_sinusoids)
    # the same tokens, and each side's own positions or normalisation
    own_parts = scheme.learned or embedding_norm
    if scheme.decoder_sinusoids != scheme.encoder_sinusoids or (
        share_embeddings and own_parts
    ):
        token = tgt_embedding.token
        tgt_embedding = embedding(tgt_vocab, scheme.decoder_sinusoids, token)
    output_proj = nn.Linear(d_model, tgt_vocab, bias=output_bias)
    if output_bias:
        nn.init.zeros_(output_proj.bias)
    encoder_stack = [
        TransformerEncoderLayer(sizes, scheme.relative) for _ in range(encoder_layers)
    ]
    encoder_biases = biases(encoder_layers)
    encoder = TransformerEncoder(
        src_embedding, encoder_stack, sizes.final_norm(), encoder_biases, numbers[0]
    )
    decoder_stack = [
        TransformerDecoderLayer(sizes, scheme.relative) for _ in range(decoder_layers)
    ]
    decoder_biases = biases(decoder_layers), biases(decoder_layers, both_ends=True)
    decoder = TransformerDecoder(
        tgt_embedding, decoder_stack, sizes.final_norm(), *decoder_biases, numbers[1]
    )
    xavier_linear_layers(encoder.layers, decoder.layers)
    if tie_output:
        output_proj.weight = tgt_embedding.token.weight
    else:
        nn.init.normal_(output_proj.weight, std=d_model**-0.5)
    if scheme.draw is not None or scheme.numbers is not None:
        return RandomPositionsTransformer(
            encoder, decoder, output_proj, scheme.draw, number_offset
        )
    return EncoderDecoder(encoder, decoder, output_proj)


def build(
    config: TransformerConfig,
    src_vocab: int,
    tgt_vocab: int,
    tokenizers: TokenizerPair | None = None,
) -> EncoderDecoder:
    """``tokenizers`` say which tokens are digits (``abacus``, ``coupled``)."""
    digits = None
    if tokenizers is not None:
        digits = tuple(
            digit_mask(side.id_pieces(range(len(side))))
            for side in (tokenizers.src, tokenizers.tgt)
        )
    return build_transformer(
        src_vocab,
        tgt_vocab,
        **config.layer_sizes(),
        positions=config.positions,
        digits=digits,  # type: ignore[arg-type]
    )
